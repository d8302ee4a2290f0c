package static

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/heddle-io/heddle/internal/store"
)

// Holds: a job that will create nodes on a static pool reserves their
// hosts when it is submitted, so that a layout the pool cannot hold is
// refused with the reason before anything is written, instead of failing
// at the create of a node that finds no host.
//
//	HOSTHOLD#<provider>  #head        its version serializes the submissions
//	HOSTHOLD#<provider>  <cluster>    the job's hold: the nodes it will create
//
// A submission reads the pool (free, undrained hosts), the live holds and
// the head; the hosts it may take are the free ones less those promised to
// other jobs' nodes that hold no host yet. Its job's first transaction
// writes its hold and bumps the head on the version read, so of two
// submissions that read the same state only one commits; the other reads
// again and is refused if the pool no longer has room. A node that takes
// its host (take) leaves the free hosts and its hold's promise at once,
// so takes touch neither item. The job's end deletes its hold in the
// transaction that ends it (engine.Hold); a hold whose cluster no job
// holds any more (left by a release that predates holds) counts for
// nothing, and the next reservation deletes it.

func holdsPK(provider string) string { return "HOSTHOLD#" + provider }

// holdHead sorts before every cluster id.
const holdHead = "#head"

// holdRecord is a hold's body: the nodes its job will create, as Prefix
// plus each of Nodes (node ids start with their cluster's id, so the
// record of a 10,000-node create stays far below an item's size limit).
type holdRecord struct {
	Prefix string   `json:"prefix,omitempty"`
	Nodes  []string `json:"nodes"`
}

func newHoldRecord(clusterID string, nodes []string) holdRecord {
	prefix := clusterID + "-"
	for _, n := range nodes {
		if !strings.HasPrefix(n, prefix) {
			prefix = ""
			break
		}
	}
	rec := holdRecord{Prefix: prefix, Nodes: make([]string, len(nodes))}
	for i, n := range nodes {
		rec.Nodes[i] = strings.TrimPrefix(n, prefix)
	}
	return rec
}

func (h holdRecord) nodeIDs() []string {
	out := make([]string, len(h.Nodes))
	for i, n := range h.Nodes {
		out[i] = h.Prefix + n
	}
	return out
}

// ExhaustedError refuses a job whose new nodes the pool cannot hold.
type ExhaustedError struct {
	Provider string
	// Free is what the job may take: free, undrained hosts less those
	// promised to other jobs' nodes.
	Free   int
	Needed int
	// Registered, Idle (free and undrained) and Promised explain Free.
	Registered, Idle, Promised int
}

func (e *ExhaustedError) Error() string {
	return fmt.Sprintf("pool `%s` has %d free %s, %d needed (%d registered, %d free and undrained, %d promised to other jobs' new nodes): register hosts (heddle hosts add), readmit drained or dirty ones, or ask for fewer nodes",
		e.Provider, e.Free, plural(e.Free, "host", "hosts"), e.Needed, e.Registered, e.Idle, e.Promised)
}

// Is makes an ExhaustedError an ErrNoHost.
func (e *ExhaustedError) Is(target error) bool { return target == ErrNoHost }

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// Reservation is what Reserve found and what taking it writes.
type Reservation struct {
	// Take are the conditional writes (on unscoped keys) that take it,
	// for the job's first transaction; Item is the hold's unscoped key,
	// which the job's end deletes.
	Take []store.Op
	Item store.Key
	// Free is what the pool had for the job before it.
	Free int
}

// LiveFunc reports whether a job still holds the cluster a hold is for.
type LiveFunc func(ctx context.Context, clusterID string) (bool, error)

// Reserve checks that provider's pool has a host for each of nodes (the
// new nodes of a job on clusterID) beside the hosts promised to other live
// jobs, and returns the reservation to take with the job; a pool without
// room is an *ExhaustedError. live says which holds still count.
func (p *Pool) Reserve(ctx context.Context, tenant, provider, clusterID string, nodes []string, live LiveFunc) (Reservation, error) {
	s, err := p.scoped(tenant)
	if err != nil {
		return Reservation{}, err
	}
	headKey := store.Key{PK: holdsPK(provider), SK: holdHead}
	head, err := s.Get(ctx, headKey)
	headExists := err == nil
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return Reservation{}, err
	}
	registered, idle, err := p.countHosts(ctx, s, provider)
	if err != nil {
		return Reservation{}, err
	}
	promised, stale, err := p.promised(ctx, s, provider, clusterID, live)
	if err != nil {
		return Reservation{}, err
	}
	free := max(idle-promised, 0)
	if free < len(nodes) {
		return Reservation{}, &ExhaustedError{Provider: provider, Free: free, Needed: len(nodes),
			Registered: registered, Idle: idle, Promised: promised}
	}
	unscoped := func(k store.Key) store.Key { return store.Key{PK: store.TenantPK(tenant, k.PK), SK: k.SK} }
	headCond := store.Condition{MustNotExist: true}
	if headExists {
		headCond = store.Condition{Version: head.Version}
	}
	holdKey := unscoped(store.Key{PK: holdsPK(provider), SK: clusterID})
	data, err := json.Marshal(newHoldRecord(clusterID, nodes))
	if err != nil {
		return Reservation{}, err
	}
	take := []store.Op{
		store.Update(unscoped(headKey), headCond, store.Changes{Add: map[string]int64{"reservations": 1}}),
		store.Put(store.Item{Key: holdKey, Data: data}, store.Condition{}),
	}
	for _, it := range stale {
		take = append(take, store.Delete(unscoped(it.Key), store.Condition{Version: it.Version}))
	}
	return Reservation{Take: take, Item: holdKey, Free: free}, nil
}

// countHosts counts a pool's hosts, and those free and undrained.
func (p *Pool) countHosts(ctx context.Context, s store.Store, provider string) (registered, idle int, err error) {
	q := store.Query{Limit: store.MaxPageSize}
	for {
		page, err := s.Query(ctx, hostsPK(provider), q)
		if err != nil {
			return 0, 0, err
		}
		for _, it := range page.Items {
			registered++
			if it.Status != StatusFree {
				continue
			}
			rec, err := decodeHost(it)
			if err != nil {
				return 0, 0, err
			}
			if !rec.Drained {
				idle++
			}
		}
		if page.Next == "" {
			return registered, idle, nil
		}
		q.Cursor = page.Next
	}
}

// promised counts the hosts live holds (other than clusterID's) promise to
// nodes that hold none yet, and returns the holds that no longer count.
func (p *Pool) promised(ctx context.Context, s store.Store, provider, clusterID string, live LiveFunc) (int, []store.Item, error) {
	var stale []store.Item
	total := 0
	q := store.Query{Limit: store.MaxPageSize}
	for {
		page, err := s.Query(ctx, holdsPK(provider), q)
		if err != nil {
			return 0, nil, err
		}
		for _, it := range page.Items {
			if it.Key.SK == holdHead || it.Key.SK == clusterID {
				continue
			}
			ok, err := live(ctx, it.Key.SK)
			if err != nil {
				return 0, nil, err
			}
			if !ok {
				stale = append(stale, it)
				continue
			}
			var rec holdRecord
			if err := json.Unmarshal(it.Data, &rec); err != nil {
				return 0, nil, fmt.Errorf("static: hold %s: %w", it.Key, err)
			}
			claimed, err := p.claimedNodes(ctx, s, provider, it.Key.SK)
			if err != nil {
				return 0, nil, err
			}
			for _, n := range rec.nodeIDs() {
				if !claimed[n] {
					total++
				}
			}
		}
		if page.Next == "" {
			return total, stale, nil
		}
		q.Cursor = page.Next
	}
}

// claimedNodes returns the nodes of a cluster that hold a host.
func (p *Pool) claimedNodes(ctx context.Context, s store.Store, provider, clusterID string) (map[string]bool, error) {
	out := map[string]bool{}
	q := store.Query{Prefix: clusterID + "#", Limit: store.MaxPageSize}
	for {
		page, err := s.Query(ctx, claimsPK(provider), q)
		if err != nil {
			return nil, err
		}
		for _, it := range page.Items {
			out[strings.TrimPrefix(it.Key.SK, clusterID+"#")] = true
		}
		if page.Next == "" {
			return out, nil
		}
		q.Cursor = page.Next
	}
}
