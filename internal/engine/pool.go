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
func (e *Engine) RunWorkers(ctx context.Context, tenant string, n int) {
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e.workLoop(ctx, tenant)
		}()
	}
	wg.Wait()
}

func (e *Engine) workLoop(ctx context.Context, tenant string) {
	for ctx.Err() == nil {
		ds, err := e.queue.Receive(ctx, tenant, 1, time.Second, e.cfg.Visibility)
		if err != nil {
			if ctx.Err() == nil {
				e.log.WarnContext(ctx, "receiving failed", "tenant", tenant, "error", err)
				sleep(ctx, time.Second)
			}
			continue
		}
		e.process(ctx, tenant, ds)
	}
}

// process handles a batch of deliveries one after another (FIFO order within
// a group matters) and settles each message; it then adds the batch's
// finished tasks to their jobs' progress with one write per job. The worker
// Lambda calls it with the messages of one SQS event.
func (e *Engine) process(ctx context.Context, tenant string, ds []queue.Delivery) (failedFrom int) {
	done := map[TaskRef]int{}
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
		if disp.Done != nil {
			done[TaskRef{Tenant: tenant, Cluster: disp.Done.Cluster, Job: disp.Done.Job}]++
		}
		if failedFrom >= 0 {
			break // FIFO: later messages of the batch wait for this one
		}
	}
	for job, n := range done {
		if err := e.AddProgress(ctx, tenant, job.Cluster, job.Job, n); err != nil {
			e.log.WarnContext(ctx, "counting progress failed", "job", job.Job, "error", err)
		}
	}
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
