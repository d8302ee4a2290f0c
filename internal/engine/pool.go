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
		ds, err := e.queue.Receive(ctx, tenant, 1, time.Second, e.cfg.Visibility)
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

// process handles a batch of deliveries one after another (FIFO order within
// a group matters) and settles each message. It returns the index of the
// first message left for redelivery (-1 for none; later ones are left too)
// and the work tasks that succeeded, per job.
func (e *Engine) process(ctx context.Context, tenant string, ds []queue.Delivery) (failedFrom int, done map[TaskRef]int) {
	done = map[TaskRef]int{}
	failedFrom = -1
	for i, d := range ds {
		disp, err := e.Handle(ctx, tenant, d)
		switch {
		case err != nil:
			if !errors.Is(err, context.Canceled) {
				e.log.WarnContext(ctx, "handling a task failed; its message will come back", "tenant", tenant, "task", d.TaskID, "error", err)
			}
			failedFrom = i
		case disp.Delay > 0:
			if err := e.queue.Extend(ctx, tenant, d.Receipt, min(disp.Delay, queue.MaxVisibility)); err != nil {
				e.log.WarnContext(ctx, "delaying a message failed", "task", d.TaskID, "error", err)
			}
		default:
			if err := e.queue.Ack(ctx, tenant, d.Receipt); err != nil && !errors.Is(err, queue.ErrReceiptInvalid) {
				e.log.WarnContext(ctx, "acknowledging a message failed", "task", d.TaskID, "error", err)
			}
		}
		if disp.Done > 0 {
			done[disp.Job] += disp.Done
		}
		if failedFrom >= 0 {
			break // FIFO: later messages of the batch wait for this one
		}
	}
	return failedFrom, done
}

// HandleBatch processes the messages of one delivery batch (the worker
// Lambda's SQS event) in order, writes their progress, and returns the index
// of the first message to report as failed (-1 for none): it and every later
// message stay in the queue, keeping each group's order.
func (e *Engine) HandleBatch(ctx context.Context, tenant string, ds []queue.Delivery) int {
	failedFrom, done := e.process(ctx, tenant, ds)
	e.flushProgress(ctx, done)
	return failedFrom
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
