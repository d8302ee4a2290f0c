package memqueue

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/heddle-io/heddle/internal/queue"
)

// Options tune New. The zero value is what the local server uses.
type Options struct {
	// Now is the clock for visibility deadlines and the deduplication
	// window; nil means time.Now. Tests inject a fake one to cross a
	// 5-minute window without waiting for it. Blocking receives still wait
	// in real time.
	Now func() time.Time
}

// Queue is an in-process queue.Queue and queue.Provisioner.
type Queue struct {
	now      func() time.Time
	receipts atomic.Uint64

	mu      sync.RWMutex
	tenants map[string]*tenantEntry
}

// tenantEntry pairs a tenant's queue with the lock that guards it, so that
// tenants never contend with each other.
type tenantEntry struct {
	mu sync.Mutex
	tq *tenantQueue
}

var (
	_ queue.Queue       = (*Queue)(nil)
	_ queue.Provisioner = (*Queue)(nil)
)

// New returns an empty Queue: no tenant has a queue until
// CreateTenantQueue.
func New(opts Options) *Queue {
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	return &Queue{now: now, tenants: map[string]*tenantEntry{}}
}

// CreateTenantQueue implements queue.Provisioner. It is idempotent: an
// existing queue and its messages are kept.
func (q *Queue) CreateTenantQueue(ctx context.Context, tenant string) error {
	if err := queue.ValidateTenant(tenant); err != nil {
		return err
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.tenants[tenant] == nil {
		q.tenants[tenant] = &tenantEntry{tq: newTenantQueue()}
	}
	return nil
}

// DeleteTenantQueue implements queue.Provisioner: the queue and its
// messages are gone, blocked receivers return queue.ErrNoQueue. Deleting a
// queue that does not exist is not an error, so offboarding can be retried.
func (q *Queue) DeleteTenantQueue(ctx context.Context, tenant string) error {
	if err := queue.ValidateTenant(tenant); err != nil {
		return err
	}
	q.mu.Lock()
	e := q.tenants[tenant]
	delete(q.tenants, tenant)
	q.mu.Unlock()
	if e != nil {
		e.mu.Lock()
		e.tq.shutdown()
		e.mu.Unlock()
	}
	return nil
}

// lock returns the tenant's queue locked; the caller unlocks e.mu.
func (q *Queue) lock(tenant string) (*tenantEntry, error) {
	if err := queue.ValidateTenant(tenant); err != nil {
		return nil, err
	}
	q.mu.RLock()
	e := q.tenants[tenant]
	q.mu.RUnlock()
	if e == nil {
		return nil, fmt.Errorf("%w: %q", queue.ErrNoQueue, tenant)
	}
	e.mu.Lock()
	if e.tq.deleted {
		e.mu.Unlock()
		return nil, fmt.Errorf("%w: %q", queue.ErrNoQueue, tenant)
	}
	return e, nil
}

// Send implements queue.Queue. The batch is checked whole before any of it
// is queued.
func (q *Queue) Send(ctx context.Context, tenant string, msgs ...queue.Message) error {
	if err := queue.ValidateSend(msgs); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	e, err := q.lock(tenant)
	if err != nil {
		return err
	}
	defer e.mu.Unlock()
	e.tq.send(q.now(), msgs)
	return nil
}

// Receive implements queue.Queue.
func (q *Queue) Receive(ctx context.Context, tenant string, max int, wait, visibility time.Duration) ([]queue.Delivery, error) {
	if err := queue.ValidateReceive(max, wait, visibility); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	e, err := q.lock(tenant)
	if err != nil {
		return nil, err
	}
	defer e.mu.Unlock() // e.mu is held whenever the loop is not blocked

	var waitOver <-chan time.Time
	if wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		waitOver = t.C
	}
	for {
		tq := e.tq
		now := q.now()
		tq.expire(now)
		if out := tq.take(now, max, visibility, q.nextReceipt); len(out) > 0 || waitOver == nil {
			tq.signal() // pass on what this receiver left
			return out, nil
		}

		w := tq.addWaiter()
		var expiry *time.Timer
		var expired <-chan time.Time
		if deadline, ok := tq.nextDeadline(); ok {
			expiry = time.NewTimer(deadline.Sub(now))
			expired = expiry.C
		}
		e.mu.Unlock()
		select {
		case <-w.wake:
		case <-expired:
		case <-waitOver:
			waitOver = nil // take what is there, then return
		case <-ctx.Done():
		}
		if expiry != nil {
			expiry.Stop()
		}
		e.mu.Lock()
		tq.removeWaiter(w)
		if tq.deleted {
			return nil, fmt.Errorf("%w: %q", queue.ErrNoQueue, tenant)
		}
		if err := ctx.Err(); err != nil {
			tq.signal()
			return nil, err
		}
	}
}

// Ack implements queue.Queue.
func (q *Queue) Ack(ctx context.Context, tenant, receipt string) error {
	e, err := q.lock(tenant)
	if err != nil {
		return err
	}
	defer e.mu.Unlock()
	m, err := e.tq.lookup(q.now(), receipt)
	if err != nil {
		return err
	}
	e.tq.release(m, false)
	e.tq.signal()
	return nil
}

// Extend implements queue.Queue.
func (q *Queue) Extend(ctx context.Context, tenant, receipt string, visibility time.Duration) error {
	if err := queue.ValidateVisibility(visibility); err != nil {
		return err
	}
	e, err := q.lock(tenant)
	if err != nil {
		return err
	}
	defer e.mu.Unlock()
	now := q.now()
	m, err := e.tq.lookup(now, receipt)
	if err != nil {
		return err
	}
	e.tq.extend(now, m, visibility)
	return nil
}

// nextReceipt names a delivery. Receipts are never reused, so one from a
// deleted and re-created queue, or from another tenant, matches nothing.
func (q *Queue) nextReceipt() string {
	return "r" + strconv.FormatUint(q.receipts.Add(1), 36)
}

// Depth is what one tenant's queue holds.
type Depth struct {
	Visible  int // messages waiting to be received
	InFlight int // messages received and not yet acknowledged
}

// Depths returns every tenant queue's depth, for metrics (SQS publishes
// the same figures itself: ApproximateNumberOfMessagesVisible and
// ...NotVisible).
func (q *Queue) Depths() map[string]Depth {
	q.mu.RLock()
	entries := make(map[string]*tenantEntry, len(q.tenants))
	for t, e := range q.tenants {
		entries[t] = e
	}
	q.mu.RUnlock()
	out := make(map[string]Depth, len(entries))
	for t, e := range entries {
		e.mu.Lock()
		d := Depth{InFlight: len(e.tq.receipts)}
		for _, g := range e.tq.groups {
			d.Visible += g.pending.len()
		}
		e.mu.Unlock()
		out[t] = d
	}
	return out
}
