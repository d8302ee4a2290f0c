package engine

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/heddle-io/heddle/internal/queue"
)

// RunWorkers runs n workers on one tenant's queue until ctx ends (the local
// server's worker pool; `heddle worker` on Fargate runs the same loop). Each
// takes one message at a time, so n is the tenant's task concurrency, and
// keeps its message hidden with a heartbeat while the task runs.
//
// Progress is counted in memory and written once per job per
// ProgressInterval: a write per task would cost as much as the task's own
// bookkeeping. A crash loses at most an interval's counts of a running job; a
// job that succeeds shows every task done regardless.
func (e *Engine) RunWorkers(ctx context.Context, tenant string, n int) {
	p := &progress{done: map[TaskRef]int{}}
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e.workLoop(ctx, tenant, p)
		}()
	}
	flushed := make(chan struct{})
	go func() {
		defer close(flushed)
		tick := time.NewTicker(e.cfg.ProgressInterval)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				e.flushProgress(ctx, p.take())
			}
		}
	}()
	wg.Wait()
	<-flushed
	// The workers are gone: write what they counted since the last tick.
	e.flushProgress(context.WithoutCancel(ctx), p.take())
}

// progress gathers finished work tasks per job between flushes.
type progress struct {
	mu   sync.Mutex
	done map[TaskRef]int
}

func (p *progress) add(counts map[TaskRef]int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for job, n := range counts {
		p.done[job] += n
	}
}

func (p *progress) take() map[TaskRef]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := p.done
	p.done = map[TaskRef]int{}
	return out
}

func (e *Engine) flushProgress(ctx context.Context, done map[TaskRef]int) {
	for job, n := range done {
		if err := e.AddProgress(ctx, job.Tenant, job.Cluster, job.Job, n); err != nil {
			e.log.WarnContext(ctx, "counting progress failed", "job", job.Job, "error", err)
		}
	}
}

func (e *Engine) workLoop(ctx context.Context, tenant string, p *progress) {
	for ctx.Err() == nil {
		ds, err := e.queue.Receive(ctx, tenant, 1, e.cfg.ReceiveWait, e.cfg.Visibility)
		if err != nil {
			if ctx.Err() == nil {
				e.log.WarnContext(ctx, "receiving failed", "tenant", tenant, "error", err)
				sleep(ctx, time.Second)
			}
			continue
		}
		_, done := e.process(ctx, tenant, ds, false)
		p.add(done)
	}
}

// process handles a batch of deliveries and settles each message. It
// returns the indexes (ascending) of the messages that must stay in the
// queue, and the work tasks that succeeded, per job.
//
// A message stays when handling it failed (the store could not be reached:
// it comes back after its visibility timeout) or when its disposition is a
// delay (a retry's backoff, a job not started yet): its visibility is set to
// the delay, so it comes back then. A Lambda event source deletes every
// message of the batch that the function does not report, so a delayed
// message must be reported even though nothing went wrong.
//
// Each message group of the batch (a node) is a lane of its own, and the
// lanes run at once: a batch of ten nodes' creates used to run each node's
// chain (create, confirm, bootstrap, the start of its first action) after
// the one before it, so the tenth create waited seconds behind nine others
// it has nothing to do with (issue 35). FIFO order holds within a lane:
// once a message of a group stays, every later message of the same group in
// the batch stays too, unhandled, and is made visible again at once (the
// group stays blocked behind the earlier message anyway; left in flight, it
// would hold the group until its own visibility ran out). A batch with a
// message without a group runs as one lane, in order, and such a message's
// failure, or a worker that is stopping, blocks the rest of the batch.
//
// hold says the batch was received with the queue's own visibility
// timeout (a Lambda event source mapping's batch): its messages are then
// held (holdBatch) at the engine's Visibility until each is settled, so a
// worker that dies mid-batch leaves them hidden for Visibility, not for the
// queue's timeout.
func (e *Engine) process(ctx context.Context, tenant string, ds []queue.Delivery, hold bool) (keep []int, done map[TaskRef]int) {
	done = map[TaskRef]int{}
	h := &batchHold{settled: make([]bool, len(ds))}
	if hold {
		h = e.holdBatch(ctx, tenant, ds)
		defer h.stop()
	}
	b := &batchRun{done: done}
	lanes := batchLanes(ds)
	if len(lanes) == 1 {
		e.runLane(ctx, tenant, ds, lanes[0], h, b)
	} else {
		var wg sync.WaitGroup
		for _, lane := range lanes {
			wg.Go(func() { e.runLane(ctx, tenant, ds, lane, h, b) })
		}
		wg.Wait()
	}
	slices.Sort(b.keep)
	return b.keep, done
}

// batchRun is what a batch's lanes share.
type batchRun struct {
	mu      sync.Mutex
	keep    []int
	done    map[TaskRef]int
	stopped atomic.Bool // every message not handled yet is kept, unhandled
}

func (b *batchRun) kept(i int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.keep = append(b.keep, i)
}

// batchLanes splits a batch into its groups' lanes, each in the batch's
// order; one lane for all when any message has no group.
func batchLanes(ds []queue.Delivery) [][]int {
	var lanes [][]int
	at := map[string]int{}
	for i, d := range ds {
		if d.Group == "" {
			all := make([]int, len(ds))
			for j := range all {
				all[j] = j
			}
			return [][]int{all}
		}
		n, ok := at[d.Group]
		if !ok {
			n = len(lanes)
			at[d.Group] = n
			lanes = append(lanes, nil)
		}
		lanes[n] = append(lanes[n], i)
	}
	if len(lanes) == 0 {
		return [][]int{nil}
	}
	return lanes
}

// runLane handles one lane of a batch in order (see process).
func (e *Engine) runLane(ctx context.Context, tenant string, ds []queue.Delivery, lane []int, h *batchHold, b *batchRun) {
	blocked := false // a message of this lane was kept
	for pos, i := range lane {
		d := ds[i]
		if b.stopped.Load() || ctx.Err() != nil {
			b.stopped.Store(true)
			b.kept(i)
			continue
		}
		if blocked && d.Group != "" {
			b.kept(i)
			h.settle(i, func() {
				if err := e.queue.Extend(ctx, tenant, d.Receipt, 0); err != nil && !errors.Is(err, queue.ErrReceiptInvalid) {
					e.log.WarnContext(ctx, "releasing a message behind a delayed one failed", "task", d.TaskID, "error", err)
				}
			})
			continue
		}
		disp, err := e.handleRecovered(ctx, tenant, d, pos > 0)
		var failed error // a failure of this message's own, told to its job on its last delivery
		h.mu.Lock()      // the hold must not touch d while it is settled
		switch {
		case err != nil && (ctx.Err() != nil || d.Group == ""):
			if !errors.Is(err, context.Canceled) {
				e.log.WarnContext(ctx, "handling a task failed; its message will come back", "tenant", tenant, "task", d.TaskID, "error", err)
			}
			b.kept(i)
			b.stopped.Store(true)
		case err != nil:
			// This message's failure is its own (a store error, an item
			// this worker cannot read): it comes back after a backoff that
			// grows with its receives, and after the queue's maxReceiveCount
			// goes to the dead-letter queue, whose name the job then shows
			// (deadLettered). Only its group waits behind it; other groups go on.
			wait := e.backoff(d.Received)
			e.log.WarnContext(ctx, "handling a task failed; its message comes back after a backoff", "tenant", tenant, "task", d.TaskID, "received", d.Received, "backoff", wait, "error", err)
			b.kept(i)
			blocked = true
			if xerr := e.queue.Extend(ctx, tenant, d.Receipt, wait); xerr != nil && !errors.Is(xerr, queue.ErrReceiptInvalid) {
				e.log.WarnContext(ctx, "delaying a failed message failed", "task", d.TaskID, "error", xerr)
			}
			failed = err
		case disp.Delay > 0:
			if err := e.queue.Extend(ctx, tenant, d.Receipt, min(disp.Delay, queue.MaxVisibility)); errors.Is(err, queue.ErrReceiptInvalid) {
				if rerr := e.replaceTaken(ctx, tenant, d); rerr != nil { // lostdelay.go
					e.log.WarnContext(ctx, "replacing a message another delivery took failed; the janitor will resend", "task", d.TaskID, "error", rerr)
				}
			} else if err != nil {
				e.log.WarnContext(ctx, "delaying a message failed", "task", d.TaskID, "error", err)
			}
			b.kept(i)
			if d.Group == "" {
				b.stopped.Store(true)
			} else {
				blocked = true
			}
		default:
			if err := e.queue.Ack(ctx, tenant, d.Receipt); err != nil && !errors.Is(err, queue.ErrReceiptInvalid) {
				e.log.WarnContext(ctx, "acknowledging a message failed", "task", d.TaskID, "error", err)
			}
		}
		h.settled[i] = true
		h.mu.Unlock()
		if failed != nil {
			// Outside the hold's lock: failing a job walks its tasks.
			if derr := e.deadLettered(ctx, tenant, d, failed); derr != nil {
				e.log.WarnContext(ctx, "recording a message's move to the dead-letter queue on its job failed", "task", d.TaskID, "error", derr)
			}
		}
		if disp.Done > 0 {
			b.mu.Lock()
			b.done[disp.Job] += disp.Done
			b.mu.Unlock()
		}
	}
}

// handleRecovered is handle with a panic turned into the message's own
// failure: the message comes back after a backoff like any failed one, its
// delivery record counts it (deadletter.go), and the worker's other
// messages go on. Unrecovered, a panic would end the process: every
// message in flight with it would be kept hidden for Visibility, and a
// message that panicked every time would be counted only as a dead
// worker's, never with the reason.
func (e *Engine) handleRecovered(ctx context.Context, tenant string, d queue.Delivery, laterInBatch bool) (disp Disposition, err error) {
	defer func() {
		if p := recover(); p != nil {
			e.log.ErrorContext(ctx, "handling a message panicked", "tenant", tenant, "task", d.TaskID, "panic", p, "stack", string(debug.Stack()))
			disp, err = Disposition{}, fmt.Errorf("handling the message panicked: %v", p)
		}
	}()
	return e.handle(ctx, tenant, d, laterInBatch)
}

// HandleBatch processes the messages of one delivery batch (the worker
// Lambda's SQS event) in order, writes their progress, and returns the
// indexes of the messages to report in BatchItemFailures, ascending (nil for
// none). Every message it does not return has been acknowledged (the event
// source's delete then finds it gone, which is harmless); every one it
// returns must stay: a failure, a delayed message (a retry's backoff; its
// visibility already says when it comes back), and every later message of
// the same group, so each group keeps its order. Reporting only the first
// index would not do: a delayed message is not a failure of the batch, and
// later messages of other groups are handled normally.
func (e *Engine) HandleBatch(ctx context.Context, tenant string, ds []queue.Delivery) []int {
	keep, done := e.process(ctx, tenant, ds, true)
	e.flushProgress(ctx, done)
	return keep
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// batchHold keeps the unsettled messages of a batch hidden for the
// engine's Visibility, and no longer: the messages of a Lambda event
// source mapping's batch arrive hidden for the queue's visibility timeout,
// which Lambda requires to be at least the function's timeout (AWS advises
// six times it), and a worker killed mid-batch would leave them hidden
// that long, each blocking its message group (its node) behind it. Held,
// they come back within Visibility, like a message of `heddle worker`.
//
// The messages not settled yet are held: at once, then every
// Visibility/3. A message is settled (acknowledged, delayed or released)
// under mu, and marked settled in the same critical section, so a hold
// never overwrites a settlement. The message being handled is held too
// (its task's heartbeat does the same once it runs), so no gap opens
// between the hold and the heartbeat.
type batchHold struct {
	mu      sync.Mutex
	settled []bool // by the batch's index
	cancel  context.CancelFunc
	done    chan struct{}
}

func (e *Engine) holdBatch(ctx context.Context, tenant string, ds []queue.Delivery) *batchHold {
	ctx, cancel := context.WithCancel(ctx)
	h := &batchHold{settled: make([]bool, len(ds)), cancel: cancel, done: make(chan struct{})}
	// The first hold is made before any message is handled: a worker
	// killed at once leaves nothing hidden for the queue's timeout.
	if !e.holdPass(ctx, tenant, ds, h) {
		close(h.done)
		return h
	}
	go func() {
		defer close(h.done)
		tick := time.NewTicker(e.cfg.Visibility / 3)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			if !e.holdPass(ctx, tenant, ds, h) {
				return
			}
		}
	}()
	return h
}

// holdPass holds the messages not settled yet; it reports whether any was.
func (e *Engine) holdPass(ctx context.Context, tenant string, ds []queue.Delivery, h *batchHold) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	var receipts []string
	for i, d := range ds {
		if !h.settled[i] && d.Receipt != "" {
			receipts = append(receipts, d.Receipt)
		}
	}
	if len(receipts) == 0 {
		return false
	}
	if err := queue.ExtendAll(ctx, e.queue, tenant, receipts, e.cfg.Visibility); err != nil && ctx.Err() == nil {
		e.log.WarnContext(ctx, "holding a batch's messages failed; they come back after the queue's visibility timeout", "tenant", tenant, "error", err)
	}
	return true
}

// settle runs f on message i under the hold's lock and marks it settled.
func (h *batchHold) settle(i int, f func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	f()
	h.settled[i] = true
}

// stop ends the hold; the messages still held (kept, unhandled) come back
// within Visibility of the last hold.
func (h *batchHold) stop() {
	if h.cancel != nil {
		h.cancel()
		<-h.done
	}
}
