package idempotency

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/heddle-io/heddle/internal/store"
)

// Defaults of Options.
const (
	// DefaultTTL is how long a key is kept: a day, as Stripe keeps its keys.
	DefaultTTL = 24 * time.Hour
	// DefaultInFlight is how long a pending claim holds off other attempts:
	// API Gateway gives up on a request after 30 s (and the API Lambda's
	// timeout is at most that), so an attempt older than this has ended,
	// one way or another.
	DefaultInFlight = 30 * time.Second
	// MaxStoredAnswer is the largest answer body kept for replays: a
	// DynamoDB item holds 400 KB, and the record needs room besides. A
	// larger answer is replayed from what it names (the cluster and job),
	// or as its status and Location only.
	MaxStoredAnswer = 300 << 10
)

// The statuses a key's item walks through.
const (
	StatusPending   = "pending"
	StatusCommitted = "committed"
	StatusDone      = "done"
)

// sweepPartition is the index partition of the items' expiry times (with
// Options.Sweep only).
const sweepPartition = "IDEMPOTENCY#EXPIRES"

// Options tune Keys; the zero value is the defaults.
type Options struct {
	TTL      time.Duration // 0: DefaultTTL
	InFlight time.Duration // 0: DefaultInFlight
	// Sweep puts every item in the secondary index by its expiry time, so
	// that Sweep can find and delete expired items: for the embedded store,
	// which has no time to live. On DynamoDB leave it off (the table's TTL
	// removes the items, and an index entry would cost a write per key).
	Sweep bool
	Now   func() time.Time // nil: time.Now
}

// Keys keeps idempotency keys in a store.
type Keys struct {
	store store.Store
	opt   Options
}

// New keeps keys in s, an unscoped store (the items' keys carry the
// tenant, as store.TenantPK writes it).
func New(s store.Store, opt Options) *Keys {
	if opt.TTL <= 0 {
		opt.TTL = DefaultTTL
	}
	if opt.InFlight <= 0 {
		opt.InFlight = DefaultInFlight
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	return &Keys{store: s, opt: opt}
}

// ItemKey is where tenant's caller's key lives: one partition per key, so
// that keys spread over DynamoDB's partitions, inside the tenant's scope
// (invariant 6: another tenant's request cannot name it).
// The caller's length leads it, so that no caller and key can be
// written as another caller and key ("a#b" + "c" against "a" + "b#c").
func ItemKey(tenant, caller, key string) store.Key {
	return store.Key{PK: store.TenantPK(tenant, "IDEM#"+strconv.Itoa(len(caller))+":"+caller+"#"+key), SK: "IDEM"}
}

// record is a key's item body.
type record struct {
	Fingerprint string    `json:"fingerprint"`
	Method      string    `json:"method"`
	Target      string    `json:"target"`
	StartedAt   time.Time `json:"startedAt"`
	// Cluster and Job are what the request made (set by the commit).
	Cluster string `json:"cluster,omitempty"`
	Job     string `json:"job,omitempty"`
	// The answer (set by Finish).
	Status      int    `json:"status,omitempty"`
	Location    string `json:"location,omitempty"`
	ContentType string `json:"contentType,omitempty"`
	Body        []byte `json:"-"` // after the JSON and a newline, as it was sent
	BodyDropped bool   `json:"bodyDropped,omitempty"`
}

// encode writes r as an item body: its JSON, a newline, and the answer's
// body byte for byte (JSON would re-encode it, base64 grow it by a third).
func (r record) encode() []byte {
	meta, _ := json.Marshal(r) // strings, numbers and a time: cannot fail
	out := make([]byte, 0, len(meta)+1+len(r.Body))
	out = append(append(meta, '\n'), r.Body...)
	return out
}

func decode(data []byte) (record, error) {
	var r record
	meta, body, _ := bytes.Cut(data, []byte{'\n'})
	if err := json.Unmarshal(meta, &r); err != nil {
		return r, err
	}
	if len(body) > 0 {
		r.Body = body
	}
	return r, nil
}

// Request is one attempt, as Begin sees it.
type Request struct {
	Tenant, Caller, Key string
	Method, Target      string // Target: the path and query
	Fingerprint         string // see Fingerprint
}

// Replay is an earlier attempt's outcome. Status is 0 when the attempt
// committed its change and no answer was stored (it died before answering,
// or its body was too large to keep): the answer is then made from Cluster
// and Job.
type Replay struct {
	Status      int
	Location    string
	ContentType string
	Body        []byte
	BodyDropped bool // the answer's body was too large to keep
	Cluster     string
	Job         string
}

// MismatchError: the key was used for a different request.
type MismatchError struct {
	Method, Target string // the first request's
}

func (e *MismatchError) Error() string {
	return fmt.Sprintf("idempotency: the key was first used for a different request (%s %s, or another body)", e.Method, e.Target)
}

// InFlightError: an earlier attempt with the key has not ended yet.
type InFlightError struct {
	RetryAfter time.Duration
}

func (e *InFlightError) Error() string {
	return fmt.Sprintf("idempotency: an earlier attempt with this key is still in progress; retry in %s", e.RetryAfter)
}

// Claim is the right of one attempt to carry the request out.
type Claim struct {
	keys      *Keys
	key       store.Key
	version   int64
	rec       record
	committed bool // CommitOp was handed out
}

// Begin claims req's key for this attempt, or returns the earlier
// attempt's outcome (a *Replay), or a *MismatchError or *InFlightError.
// Exactly one of the claim and the replay is non-nil when err is nil.
func (k *Keys) Begin(ctx context.Context, req Request) (*Claim, *Replay, error) {
	now := k.opt.Now()
	rec := record{Fingerprint: req.Fingerprint, Method: req.Method, Target: req.Target, StartedAt: now.UTC()}
	key := ItemKey(req.Tenant, req.Caller, req.Key)
	data := rec.encode()
	expires := now.Add(k.opt.TTL)
	it := store.Item{Key: key, Status: StatusPending, Data: data, Counters: map[string]int64{store.CounterExpires: expires.Unix()}}
	if k.opt.Sweep {
		it.Index = &store.IndexKey{Partition: sweepPartition, Sort: store.SortableTime(expires) + "#" + key.PK}
	}
	cond := store.Condition{MustNotExist: true}
	// A few rounds at most: each failed one means another attempt changed
	// the item between our read and our write.
	for range 4 {
		written, err := k.store.Write(ctx, store.Put(it, cond))
		if err == nil {
			return &Claim{keys: k, key: key, version: written.Version, rec: rec}, nil, nil
		}
		var ce *store.ConditionError
		if !errors.As(err, &ce) {
			return nil, nil, fmt.Errorf("idempotency: claiming %s: %w", key, err)
		}
		cur := ce.Current
		if cur == nil {
			if got, err := k.store.Get(ctx, key); err == nil {
				cur = &got
			} else if !errors.Is(err, store.ErrNotFound) {
				return nil, nil, fmt.Errorf("idempotency: reading %s: %w", key, err)
			}
		}
		if cur == nil {
			cond = store.Condition{MustNotExist: true}
			continue
		}
		if expired(*cur, now) {
			// Kept past its time (DynamoDB deletes within days, the
			// embedded store by Sweep): the key is free again.
			cond = store.Condition{Version: cur.Version}
			continue
		}
		old, err := decode(cur.Data)
		if err != nil {
			return nil, nil, fmt.Errorf("idempotency: reading %s: %w", key, err)
		}
		if old.Fingerprint != req.Fingerprint {
			return nil, nil, &MismatchError{Method: old.Method, Target: old.Target}
		}
		switch cur.Status {
		case StatusCommitted, StatusDone:
			rp := &Replay{Status: old.Status, Location: old.Location, ContentType: old.ContentType, Body: old.Body,
				BodyDropped: old.BodyDropped, Cluster: old.Cluster, Job: old.Job}
			if old.BodyDropped && old.Cluster != "" {
				rp.Status = 0 // made again from the cluster and job
			}
			return nil, rp, nil
		}
		// Pending: an attempt is running, or died before it changed
		// anything (its change would have committed the item).
		if age := now.Sub(old.StartedAt); age < k.opt.InFlight {
			wait := min(k.opt.InFlight-age, 5*time.Second)
			return nil, nil, &InFlightError{RetryAfter: max(wait.Round(time.Second), time.Second)}
		}
		// Taken over: the old attempt's commit is conditioned on the
		// version this write replaces, so it can no longer land.
		cond = store.Condition{Version: cur.Version, StatusIn: []string{StatusPending}}
	}
	return nil, nil, fmt.Errorf("idempotency: %s kept changing under four tries", key)
}

func expired(it store.Item, now time.Time) bool {
	exp := it.Counter(store.CounterExpires)
	return exp > 0 && now.Unix() >= exp
}

// CommitOp is the operation that records, in the transaction that makes
// the request's change, that the change was made, and what it made. The
// transaction fails on it if the claim was taken over meanwhile.
func (c *Claim) CommitOp(cluster, job string) store.Op {
	c.rec.Cluster, c.rec.Job = cluster, job
	data := c.rec.encode()
	c.committed = true
	status := StatusCommitted
	return store.Update(c.key, store.Condition{Version: c.version, StatusIn: []string{StatusPending}},
		store.Changes{Status: &status, Data: data})
}

// Answer is what an attempt answered.
type Answer struct {
	Status      int
	Location    string
	ContentType string
	Body        []byte
}

// Finish stores a successful attempt's answer for replays. It fails
// (store.ErrConditionFailed) when the claim was taken over.
func (c *Claim) Finish(ctx context.Context, a Answer) error {
	rec := c.rec
	var cond store.Condition
	if c.committed {
		// The commit moved the item one version on; a takeover would
		// have left it pending.
		cond = store.Condition{Version: c.version + 1, StatusIn: []string{StatusCommitted}}
	} else {
		cond = store.Condition{Version: c.version, StatusIn: []string{StatusPending}}
	}
	rec.Status, rec.Location, rec.ContentType = a.Status, a.Location, a.ContentType
	if len(a.Body) <= MaxStoredAnswer {
		rec.Body = a.Body
	} else {
		rec.BodyDropped = true
	}
	data := rec.encode()
	done := StatusDone
	if _, err := c.keys.store.Write(ctx, store.Update(c.key, cond, store.Changes{Status: &done, Data: data})); err != nil {
		return fmt.Errorf("idempotency: storing the answer at %s: %w", c.key, err)
	}
	return nil
}

// Release gives the key up after an attempt that changed nothing (it
// answered an error before its commit), so that a retry runs again. A
// committed claim is kept: its change was made, and a retry answers from it.
func (c *Claim) Release(ctx context.Context) error {
	_, err := c.keys.store.Write(ctx, store.Delete(c.key, store.Condition{Version: c.version, StatusIn: []string{StatusPending}}))
	if err != nil && !errors.Is(err, store.ErrConditionFailed) {
		return fmt.Errorf("idempotency: releasing %s: %w", c.key, err)
	}
	return nil
}

// Sweep deletes expired items found through the index (Options.Sweep) and
// returns how many. Keys without Options.Sweep have nothing to sweep.
func (k *Keys) Sweep(ctx context.Context) (int, error) {
	if !k.opt.Sweep {
		return 0, nil
	}
	now := k.opt.Now()
	n := 0
	q := store.IndexQuery{SortBefore: store.SortableTime(now.Add(time.Second)), Limit: store.MaxPageSize}
	for {
		page, err := k.store.QueryIndex(ctx, sweepPartition, q)
		if err != nil {
			return n, fmt.Errorf("idempotency: listing expired keys: %w", err)
		}
		for _, it := range page.Items {
			if !expired(it, now) {
				continue
			}
			_, err := k.store.Write(ctx, store.Delete(it.Key, store.Condition{Version: it.Version}))
			switch {
			case err == nil:
				n++
			case errors.Is(err, store.ErrConditionFailed), errors.Is(err, store.ErrNotFound):
				// Claimed again meanwhile, or gone.
			default:
				return n, fmt.Errorf("idempotency: deleting %s: %w", it.Key, err)
			}
		}
		if page.Next == "" {
			return n, nil
		}
		q.Cursor = page.Next
	}
}
