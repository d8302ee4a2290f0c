package events

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"strings"
	"sync"
	"time"

	"github.com/heddle-io/heddle/internal/store"
)

// Type says what changed.
type Type string

const (
	// ClusterStatus: the cluster's status changed (Status, Previous).
	ClusterStatus Type = "cluster.status"
	// JobStatus: a job of the cluster changed status (Job, Operation,
	// Status, Previous).
	JobStatus Type = "job.status"
	// ClusterVerified: a verification ended (Job, Status is the health:
	// GREEN, YELLOW or RED; Counts per check status).
	ClusterVerified Type = "cluster.verified"
	// ClusterDrift: a drift check ended (Job, Status "clean" or "drifted",
	// Counts per drift kind, Message the first finding).
	ClusterDrift Type = "cluster.drift"
	// RepairHalted: automatic repair found more drifted nodes than the
	// template's maxUnhealthy and repaired nothing (Counts: drifted, max).
	RepairHalted Type = "cluster.repair_halted"
	// ClusterAutoscale: the cluster's autoscale policy decided to change
	// its size (Operation expand or shrink, Job, Status "submitted" or
	// "refused", Counts from and to, Message why).
	ClusterAutoscale Type = "cluster.autoscale"
)

// Types lists every type, for validation of subscriptions and filters.
var Types = []Type{ClusterStatus, JobStatus, ClusterVerified, ClusterDrift, RepairHalted, ClusterAutoscale}

// Event is one change of one cluster.
type Event struct {
	ID        string         `json:"id"`
	Type      Type           `json:"type"`
	At        time.Time      `json:"at"`
	Cluster   string         `json:"cluster"`
	Job       string         `json:"job,omitempty"`
	Operation string         `json:"operation,omitempty"`
	Status    string         `json:"status"`
	Previous  string         `json:"previous,omitempty"`
	Message   string         `json:"message,omitempty"`
	Counts    map[string]int `json:"counts,omitempty"`
}

// MaxMessage bounds an event's message: events stay small.
const MaxMessage = 300

// Retention is how long an event is kept.
const Retention = 30 * 24 * time.Hour

const expiryShards = 4

func partition(tenant, cluster string) string { return store.TenantPK(tenant, "EVENTS#"+cluster) }

func expiryPartition(shard int) string { return fmt.Sprintf("EVENTEXP#%d", shard) }

func shardOf(s string) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(s))
	return int(h.Sum32() % expiryShards)
}

var clock struct {
	sync.Mutex
	last int64
}

// NewID makes an id that sorts after every id this process made before,
// and near at in time.
func NewID(at time.Time) string {
	clock.Lock()
	n := max(at.UnixNano(), clock.last+1)
	clock.last = n
	clock.Unlock()
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%020d-%s", n, hex.EncodeToString(b[:]))
}

// ValidID reports whether s has the shape of an event id (for ?since=).
func ValidID(s string) bool {
	num, suffix, ok := strings.Cut(s, "-")
	if !ok || len(num) != 20 || len(suffix) != 8 {
		return false
	}
	for _, r := range num {
		if r < '0' || r > '9' {
			return false
		}
	}
	_, err := hex.DecodeString(suffix)
	return err == nil
}

// Op is the write that records ev (its ID is set here) for tenant; the
// caller adds it to the transaction that makes the change.
func Op(tenant string, ev Event) store.Op {
	if ev.At.IsZero() {
		ev.At = time.Now()
	}
	ev.At = ev.At.UTC()
	ev.ID = NewID(ev.At)
	if len(ev.Message) > MaxMessage {
		ev.Message = strings.ToValidUTF8(ev.Message[:MaxMessage], "")
	}
	data, _ := json.Marshal(ev) // plain fields: cannot fail
	it := store.Item{Key: store.Key{PK: partition(tenant, ev.Cluster), SK: ev.ID}, Data: data,
		Index: &store.IndexKey{Partition: OutboxPartition(shardOf(ev.ID)), Sort: store.SortableTime(ev.At)}}
	return store.Put(it, store.Condition{MustNotExist: true})
}

// An event is first indexed in the outbox (OUTBOX#<shard>, by its time):
// what the webhook dispatcher has not handed on yet. Handing it on moves
// its index entry to the expiry partition (Dispatched), so the outbox
// holds only what waits, and every event expires Retention after its time.

// OutboxShards is how many outbox partitions there are.
const OutboxShards = expiryShards

// OutboxPartition names one outbox partition of the index.
func OutboxPartition(shard int) string { return fmt.Sprintf("OUTBOX#%d", shard) }

// ExpiryIndex is the index entry that has the janitor delete an item
// (an event, a webhook delivery record) Retention after at.
func ExpiryIndex(key string, at time.Time) *store.IndexKey {
	return &store.IndexKey{Partition: expiryPartition(shardOf(key)), Sort: store.SortableTime(at.Add(Retention))}
}

// Decode reads an event item.
func Decode(it store.Item) (Event, error) {
	var ev Event
	if err := json.Unmarshal(it.Data, &ev); err != nil {
		return Event{}, fmt.Errorf("reading event %s: %w", it.SK, err)
	}
	return ev, nil
}

// Dispatched moves an outbox item to the expiry partition, on the version
// read: of two dispatchers, one moves it.
func Dispatched(ctx context.Context, s store.Store, it store.Item, ev Event) error {
	_, err := s.Write(ctx, store.Update(it.Key, store.Condition{Version: it.Version}, store.Changes{Index: ExpiryIndex(ev.ID, ev.At)}))
	if errors.Is(err, store.ErrConditionFailed) {
		return nil
	}
	return err
}

// Log reads a tenant's events.
type Log struct {
	s store.Store
}

// New reads events from s.
func New(s store.Store) *Log { return &Log{s: s} }

// List returns one page of a cluster's events, oldest first; since, when
// set, starts after that event id (what a follower saw last).
func (l *Log) List(ctx context.Context, tenant, cluster, since string, limit int, cursor string) ([]Event, string, error) {
	page, err := l.s.Query(ctx, partition(tenant, cluster), store.Query{Limit: limit, Cursor: cursor, After: since})
	if err != nil {
		return nil, "", err
	}
	out := make([]Event, 0, len(page.Items))
	for _, it := range page.Items {
		var ev Event
		if err := json.Unmarshal(it.Data, &ev); err != nil {
			return nil, "", fmt.Errorf("reading event %s of cluster %s: %w", it.SK, cluster, err)
		}
		out = append(out, ev)
	}
	return out, page.Next, nil
}

// Expire deletes the events past their retention at now, every tenant's,
// and says how many went. The janitor calls it on every pass; an expired
// event costs one index read and one delete.
func Expire(ctx context.Context, s store.Store, now time.Time) (int, error) {
	deleted := 0
	var errs []error
	for shard := range expiryShards {
		cursor := ""
		for {
			page, err := s.QueryIndex(ctx, expiryPartition(shard), store.IndexQuery{SortBefore: store.SortableTime(now), Cursor: cursor, Limit: store.MaxPageSize})
			if err != nil {
				errs = append(errs, fmt.Errorf("finding expired events: %w", err))
				break
			}
			for _, it := range page.Items {
				if _, err := s.Write(ctx, store.Delete(it.Key, store.Condition{})); err != nil {
					errs = append(errs, fmt.Errorf("deleting expired event %s: %w", it.Key, err))
					continue
				}
				deleted++
			}
			if page.Next == "" {
				break
			}
			cursor = page.Next
		}
	}
	return deleted, errors.Join(errs...)
}
