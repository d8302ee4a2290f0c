package engine

import (
	"context"
	"errors"
	"sync"
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
		_, done := e.process(ctx, tenant, ds)
		p.add(done)
	}
}

// process handles a batch of deliveries in order and settles each message.
// It returns the indexes (ascending) of the messages that must stay in the
// queue, and the work tasks that succeeded, per job.
//
// A message stays when handling it failed (the store could not be reached:
// it comes back after its visibility timeout) or when its disposition is a
// delay (a retry's backoff, a job not started yet): its visibility is set to
// the delay, so it comes back then. A Lambda event source deletes every
// message of the batch that the function does not report, so a delayed
// message must be reported even though nothing went wrong.
//
// FIFO order: once a message of a group stays, every later message of the
// same group in the batch stays too, unhandled, and is made visible again at
// once (the group stays blocked behind the earlier message anyway; left
// in flight, it would hold the group until its own visibility ran out).
// Other groups go on. A message without a group, a failure, or a worker
// that is stopping blocks the rest of the batch.
func (e *Engine) process(ctx context.Context, tenant string, ds []queue.Delivery) (keep []int, done map[TaskRef]int) {
	done = map[TaskRef]int{}
	blocked := map[string]bool{} // groups with a message kept earlier in the batch
	stopped := false             // every later message is kept, unhandled
	for i, d := range ds {
		if stopped || ctx.Err() != nil {
			stopped = true
			keep = append(keep, i)
			continue
		}
		if blocked[d.Group] {
			keep = append(keep, i)
			if err := e.queue.Extend(ctx, tenant, d.Receipt, 0); err != nil && !errors.Is(err, queue.ErrReceiptInvalid) {
				e.log.WarnContext(ctx, "releasing a message behind a delayed one failed", "task", d.TaskID, "error", err)
			}
			continue
		}
		disp, err := e.handle(ctx, tenant, d, i > 0)
		switch {
		case err != nil:
			if !errors.Is(err, context.Canceled) {
				e.log.WarnContext(ctx, "handling a task failed; its message will come back", "tenant", tenant, "task", d.TaskID, "error", err)
			}
			keep = append(keep, i)
			stopped = true
		case disp.Delay > 0:
			if err := e.queue.Extend(ctx, tenant, d.Receipt, min(disp.Delay, queue.MaxVisibility)); err != nil {
				e.log.WarnContext(ctx, "delaying a message failed", "task", d.TaskID, "error", err)
			}
			keep = append(keep, i)
			if d.Group == "" {
				stopped = true
			} else {
				blocked[d.Group] = true
			}
		default:
			if err := e.queue.Ack(ctx, tenant, d.Receipt); err != nil && !errors.Is(err, queue.ErrReceiptInvalid) {
				e.log.WarnContext(ctx, "acknowledging a message failed", "task", d.TaskID, "error", err)
			}
		}
		if disp.Done > 0 {
			done[disp.Job] += disp.Done
		}
	}
	return keep, done
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
	keep, done := e.process(ctx, tenant, ds)
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
