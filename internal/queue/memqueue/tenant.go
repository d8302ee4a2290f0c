package memqueue

import (
	"container/heap"
	"time"

	"github.com/heddle-io/heddle/internal/queue"
)

// tenantQueue is one tenant's queue. Every field is guarded by mu.
//
// A group is in ready exactly when it has pending messages and none in
// flight; that is what lets Receive take work without scanning groups.
type tenantQueue struct {
	deleted  bool
	groups   map[string]*group
	ready    ring[*group]
	inflight deadlineHeap
	receipts map[string]*message

	// dedup maps a group and deduplication id to the end of its window;
	// dedupOrder holds the same entries in the order they were recorded,
	// which is also the order they expire in (the window is constant).
	dedup      map[dedupKey]time.Time
	dedupOrder ring[dedupEntry]

	waiters []*waiter
}

type group struct {
	id       string
	pending  ring[*message]
	inflight *message
	queued   bool // in tenantQueue.ready
}

type message struct {
	queue.Message
	group         *group
	received      int
	firstReceived time.Time
	// Set while in flight.
	receipt   string
	deadline  time.Time
	heapIndex int
}

type dedupKey struct{ group, dedup string }

type dedupEntry struct {
	key     dedupKey
	expires time.Time
}

// waiter is a Receive blocked on an empty queue; wake is closed to signal it.
type waiter struct{ wake chan struct{} }

func newTenantQueue() *tenantQueue {
	return &tenantQueue{
		groups:   map[string]*group{},
		receipts: map[string]*message{},
		dedup:    map[dedupKey]time.Time{},
	}
}

// send appends msgs to their groups, dropping duplicates within the window.
func (tq *tenantQueue) send(now time.Time, msgs []queue.Message) {
	for tq.dedupOrder.len() > 0 && !tq.dedupOrder.front().expires.After(now) {
		delete(tq.dedup, tq.dedupOrder.popFront().key)
	}
	for _, m := range msgs {
		key := dedupKey{m.Group, m.Dedup}
		if _, dup := tq.dedup[key]; dup {
			continue
		}
		expires := now.Add(queue.DedupWindow)
		tq.dedup[key] = expires
		tq.dedupOrder.pushBack(dedupEntry{key, expires})

		g := tq.groups[m.Group]
		if g == nil {
			g = &group{id: m.Group}
			tq.groups[m.Group] = g
		}
		g.pending.pushBack(&message{Message: m, group: g, heapIndex: -1})
		tq.markReady(g)
	}
	tq.signal()
}

// markReady queues g for delivery if it has a deliverable head.
func (tq *tenantQueue) markReady(g *group) {
	if g.queued || g.inflight != nil || g.pending.len() == 0 {
		return
	}
	g.queued = true
	tq.ready.pushBack(g)
}

// expire ends every delivery whose visibility ran out by now.
func (tq *tenantQueue) expire(now time.Time) {
	for len(tq.inflight) > 0 && !tq.inflight[0].deadline.After(now) {
		tq.release(tq.inflight[0], true)
	}
}

// take delivers the heads of up to max ready groups.
func (tq *tenantQueue) take(now time.Time, max int, visibility time.Duration, receipt func() string) []queue.Delivery {
	if tq.ready.len() == 0 {
		return nil
	}
	out := make([]queue.Delivery, 0, min(max, tq.ready.len()))
	for len(out) < max && tq.ready.len() > 0 {
		g := tq.ready.popFront()
		g.queued = false
		m := g.pending.popFront()
		g.inflight = m
		m.received++
		if m.received == 1 {
			m.firstReceived = now
		}
		m.receipt = receipt()
		m.deadline = now.Add(visibility)
		heap.Push(&tq.inflight, m)
		tq.receipts[m.receipt] = m
		out = append(out, queue.Delivery{Message: m.Message, Receipt: m.receipt, Received: m.received, FirstReceived: m.firstReceived})
	}
	return out
}

// lookup returns the message whose delivery receipt names, if that delivery
// is still in flight at now.
func (tq *tenantQueue) lookup(now time.Time, receipt string) (*message, error) {
	m := tq.receipts[receipt]
	if m == nil {
		return nil, queue.ErrReceiptInvalid
	}
	if !m.deadline.After(now) {
		// Its visibility ran out: the delivery is over even if nobody has
		// received the message again yet.
		tq.release(m, true)
		tq.signal()
		return nil, queue.ErrReceiptInvalid
	}
	return m, nil
}

// release ends m's delivery: back to the head of its group when redeliver,
// gone for good otherwise.
func (tq *tenantQueue) release(m *message, redeliver bool) {
	heap.Remove(&tq.inflight, m.heapIndex)
	delete(tq.receipts, m.receipt)
	m.receipt, m.deadline = "", time.Time{}
	g := m.group
	g.inflight = nil
	if redeliver {
		g.pending.pushFront(m)
	}
	if g.pending.len() == 0 {
		delete(tq.groups, g.id)
		return
	}
	tq.markReady(g)
}

// extend moves m's deadline; zero makes it deliverable at once.
func (tq *tenantQueue) extend(now time.Time, m *message, visibility time.Duration) {
	if visibility == 0 {
		tq.release(m, true)
		tq.signal()
		return
	}
	m.deadline = now.Add(visibility)
	heap.Fix(&tq.inflight, m.heapIndex)
}

// signal wakes as many blocked receivers as there are ready groups. A woken
// receiver that finds nothing left waits again; one that leaves without
// taking anything calls signal so that no ready group is left unannounced.
func (tq *tenantQueue) signal() {
	n := min(tq.ready.len(), len(tq.waiters))
	for _, w := range tq.waiters[:n] {
		close(w.wake)
	}
	tq.waiters = append(tq.waiters[:0], tq.waiters[n:]...)
}

func (tq *tenantQueue) addWaiter() *waiter {
	w := &waiter{wake: make(chan struct{})}
	tq.waiters = append(tq.waiters, w)
	return w
}

// removeWaiter unregisters w if it was not signaled already.
func (tq *tenantQueue) removeWaiter(w *waiter) {
	for i, other := range tq.waiters {
		if other == w {
			tq.waiters = append(tq.waiters[:i], tq.waiters[i+1:]...)
			return
		}
	}
}

// shutdown marks the queue deleted and wakes every receiver to say so.
func (tq *tenantQueue) shutdown() {
	tq.deleted = true
	for _, w := range tq.waiters {
		close(w.wake)
	}
	tq.waiters = nil
}

// nextDeadline is when the earliest delivery in flight runs out, if any.
func (tq *tenantQueue) nextDeadline() (time.Time, bool) {
	if len(tq.inflight) == 0 {
		return time.Time{}, false
	}
	return tq.inflight[0].deadline, true
}

// deadlineHeap orders messages in flight by visibility deadline.
type deadlineHeap []*message

func (h deadlineHeap) Len() int           { return len(h) }
func (h deadlineHeap) Less(i, j int) bool { return h[i].deadline.Before(h[j].deadline) }
func (h deadlineHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].heapIndex, h[j].heapIndex = i, j
}

func (h *deadlineHeap) Push(x any) {
	m := x.(*message)
	m.heapIndex = len(*h)
	*h = append(*h, m)
}

func (h *deadlineHeap) Pop() any {
	old := *h
	m := old[len(old)-1]
	old[len(old)-1] = nil
	m.heapIndex = -1
	*h = old[:len(old)-1]
	return m
}
