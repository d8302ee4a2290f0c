package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/queue"
	"github.com/heddle-io/heddle/internal/store"
)

// Disposition says what to do with a delivery once Handle returns.
type Disposition struct {
	// Delay, when positive, asks for the message to come back after it (keep
	// it, extend its visibility); otherwise acknowledge it.
	Delay time.Duration
	// Done is set when a work task succeeded: the caller adds it to the job's
	// progress count (in batches, see AddProgress).
	Done *TaskRef
}

// maxAttemptHistory bounds the attempts a task item keeps.
const maxAttemptHistory = 10

// Handle processes one delivered message: it re-reads the task and its job,
// claims the task if it is still READY for a running job, runs it, and
// records the result. A duplicate, stale or lost claim is acknowledged and
// does nothing. An error means the store could not be reached: leave the
// message, it comes back after its visibility timeout.
func (e *Engine) Handle(ctx context.Context, tenant string, d queue.Delivery) (Disposition, error) {
	ref, err := ParseTaskRef(tenant, d.TaskID)
	if err != nil {
		e.log.WarnContext(ctx, "dropping a malformed message", "tenant", tenant, "body", d.TaskID)
		return Disposition{}, nil
	}
	lt, err := e.loadTask(ctx, ref)
	if errors.Is(err, store.ErrNotFound) {
		return Disposition{}, nil
	}
	if err != nil {
		return Disposition{}, err
	}
	if lt.task.Status != domain.TaskReady {
		return Disposition{}, nil // done, running elsewhere, or not ready yet
	}
	lj, err := e.loadJob(ctx, tenant, ref.Cluster, ref.Job)
	if errors.Is(err, store.ErrNotFound) {
		return Disposition{}, nil
	}
	if err != nil {
		return Disposition{}, err
	}
	switch accepts(lj.job.Status, lt.task) {
	case acceptLater:
		return Disposition{Delay: time.Second}, nil
	case acceptNever:
		return Disposition{}, nil
	}
	if wait := lt.task.ReadyAt.Sub(e.now()); wait > 0 {
		return Disposition{Delay: wait}, nil // a retry's backoff
	}
	if lt.task.Join {
		_, err := e.succeed(ctx, ref, lt, Result{})
		return Disposition{}, err
	}
	claimed, err := e.claim(ctx, ref, lt)
	if errors.Is(err, store.ErrConditionFailed) {
		return Disposition{}, nil // another worker won the claim
	}
	if err != nil {
		return Disposition{}, err
	}
	runCtx, cancel := context.WithTimeout(ctx, lt.task.Timeout.Std())
	res := e.exec.Execute(runCtx, Attempt{Tenant: tenant, Task: claimed.task})
	timedOut := errors.Is(runCtx.Err(), context.DeadlineExceeded) && ctx.Err() == nil
	cancel()
	if timedOut {
		// Whatever the executor answered, the action ran past its timeout.
		res.Err = fmt.Errorf("timed out after %s", lt.task.Timeout)
	}
	if ctx.Err() != nil {
		// The worker is stopping: leave the attempt RUNNING. Its deadline
		// passes and the janitor fails and retries it (a killed worker looks
		// the same).
		return Disposition{}, ctx.Err()
	}
	if res.Err != nil {
		return Disposition{}, e.fail(ctx, ref, claimed, res)
	}
	ok, err := e.succeed(ctx, ref, claimed, res)
	if err != nil || !ok {
		return Disposition{}, err
	}
	return Disposition{Done: &ref}, nil
}

type acceptance int

const (
	acceptNow acceptance = iota
	acceptLater
	acceptNever
)

// accepts says whether a job in status s runs task t now: forward tasks run
// while the job runs, rollback tasks while it rolls back.
func accepts(s domain.JobStatus, t domain.Task) acceptance {
	switch s {
	case domain.JobPending:
		return acceptLater
	case domain.JobRunning:
		if !t.Rollback {
			return acceptNow
		}
	case domain.JobRollingBack:
		if t.Rollback {
			return acceptNow
		}
	}
	return acceptNever // paused (resume re-sends), failing or finished
}

// claim moves the task READY -> RUNNING for its next attempt, under its
// version: of two workers holding the same message, one wins.
func (e *Engine) claim(ctx context.Context, ref TaskRef, lt loadedTask) (loadedTask, error) {
	t := lt.task
	now := e.now()
	t.Status = domain.TaskRunning
	t.Attempt++
	t.Deadline = now.Add(t.Timeout.Std())
	t.Attempts = append(t.Attempts, domain.TaskAttempt{Attempt: t.Attempt, Worker: e.cfg.WorkerID, StartedAt: now, Status: domain.TaskRunning})
	if len(t.Attempts) > maxAttemptHistory {
		t.Attempts = t.Attempts[len(t.Attempts)-maxAttemptHistory:]
	}
	key := taskKey(ref.Tenant, ref.Job, ref.Task)
	it, err := e.store.Write(ctx, store.Update(key, store.Condition{Version: lt.item.Version}, taskChanges(key, t)))
	if err != nil {
		return loadedTask{}, err
	}
	t.Version = it.Version
	return loadedTask{item: it, task: t}, nil
}

func (e *Engine) endAttempt(t *domain.Task, status domain.TaskStatus, res Result) {
	if len(t.Attempts) == 0 {
		return
	}
	a := &t.Attempts[len(t.Attempts)-1]
	a.EndedAt, a.Status, a.ExitCode, a.Stdout, a.Stderr = e.now(), status, res.ExitCode, res.Stdout, res.Stderr
	if res.Err != nil {
		a.Error = res.Err.Error()
	}
}
