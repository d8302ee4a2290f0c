package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/store"
)

// maxSettleAttempts bounds the retries of a completion whose dependents kept
// changing under it (other dependencies of theirs completing at once).
const maxSettleAttempts = 20

// succeed records a success: in one transaction the task becomes SUCCEEDED
// (under the version it was claimed with, so a retried completion counts
// once) and every dependent's remaining count drops by one, each under its
// own version; a dependent reaching zero becomes READY in the same write. It
// reports false when the task was no longer ours (the janitor timed it out).
func (e *Engine) succeed(ctx context.Context, ref TaskRef, lt loadedTask, res Result) (bool, error) {
	t := lt.task
	t.Status = domain.TaskSucceeded
	t.Deadline = t.Deadline.UTC()
	e.endAttempt(&t, domain.TaskSucceeded, res)
	key := taskKey(ref.Tenant, ref.Job, ref.Task)
	var ready []domain.Task
	for range maxSettleAttempts {
		ops := []store.Op{store.Update(key, store.Condition{Version: lt.item.Version}, taskChanges(key, t))}
		ready = ready[:0]
		for _, depID := range t.Dependents {
			dk := taskKey(ref.Tenant, ref.Job, depID)
			dep, err := e.loadTask(ctx, TaskRef{Tenant: ref.Tenant, Cluster: ref.Cluster, Job: ref.Job, Task: depID})
			if err != nil {
				return false, fmt.Errorf("reading dependent %s of %s: %w", depID, t.ID, err)
			}
			d := dep.task
			if d.Status != domain.TaskBlocked || d.Remaining < 1 {
				return false, fmt.Errorf("engine: dependent %s of %s is %s with %d remaining; the graph is broken", depID, t.ID, d.Status, d.Remaining)
			}
			d.Remaining--
			if d.Remaining == 0 {
				d.Status, d.ReadyAt = domain.TaskReady, e.now()
				ready = append(ready, d)
			}
			ops = append(ops, store.Update(dk, store.Condition{Version: dep.item.Version}, taskChanges(dk, d)))
		}
		if res.Node != nil && t.NodeID != "" {
			nk := nodeKey(ref.Tenant, ref.Cluster, t.NodeID)
			nit, err := e.store.Get(ctx, nk)
			if err != nil {
				return false, fmt.Errorf("reading node %s to record what %s learned: %w", t.NodeID, t.ID, err)
			}
			var n domain.Node
			if err := decodeInto(nit, &n); err != nil {
				return false, err
			}
			res.Node.apply(&n)
			ops = append(ops, store.Update(nk, store.Condition{Version: nit.Version}, store.Changes{Data: mustJSON(n)}))
		}
		if len(t.Dependents) == 0 {
			counter := counterSinks
			if t.Rollback {
				counter = counterRollbackSinks
			}
			ops = append(ops, store.Update(jobKey(ref.Tenant, ref.Cluster, ref.Job), store.Condition{MustExist: true},
				store.Changes{Add: map[string]int64{counter: -1}}))
		}
		err := e.store.Transact(ctx, ops)
		var terr *store.TransactionError
		if errors.As(err, &terr) {
			if terr.Reasons[0] != nil {
				return false, nil // not ours any more
			}
			continue // a dependent changed: read them again
		}
		if err != nil {
			return false, fmt.Errorf("completing %s: %w", t.ID, err)
		}
		if err := e.send(ctx, ref.Tenant, ready); err != nil {
			e.log.WarnContext(ctx, "sending ready dependents failed; the janitor will resend", "task", t.ID, "error", err)
		}
		if len(t.Dependents) == 0 || len(ready) == 0 {
			// A sink may end the job; a task that readied nothing may have
			// been the last one running in a job that is failing meanwhile.
			return true, e.checkJobEnd(ctx, ref.Tenant, ref.Cluster, ref.Job)
		}
		return true, nil
	}
	return false, fmt.Errorf("completing %s: dependents kept changing; the message will come back", t.ID)
}

// fail records a failed attempt: a retry after a backoff while attempts
// remain, else the task fails and with it the job.
func (e *Engine) fail(ctx context.Context, ref TaskRef, lt loadedTask, res Result) error {
	t := lt.task
	key := taskKey(ref.Tenant, ref.Job, ref.Task)
	e.endAttempt(&t, domain.TaskFailed, res)
	if t.Attempt < t.MaxAttempts {
		t.Status, t.ReadyAt = domain.TaskReady, e.now().Add(e.backoff(t.Attempt))
		_, err := e.store.Write(ctx, store.Update(key, store.Condition{Version: lt.item.Version}, taskChanges(key, t)))
		if errors.Is(err, store.ErrConditionFailed) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("recording a failed attempt of %s: %w", t.ID, err)
		}
		return e.send(ctx, ref.Tenant, []domain.Task{t})
	}
	t.Status = domain.TaskFailed
	lj, err := e.loadJob(ctx, ref.Tenant, ref.Cluster, ref.Job)
	if err != nil {
		return err
	}
	job := lj.job
	from := []string{string(domain.JobRunning), string(domain.JobPaused), string(domain.JobFailing)}
	next := domain.JobFailing
	if t.Rollback {
		from = []string{string(domain.JobRollingBack)}
	}
	msg := fmt.Sprintf("task %s failed after %d attempts: %v", t.ID, t.Attempt, res.Err)
	if job.StatusMessage == "" || t.Rollback {
		job.StatusMessage = msg
	}
	ops := []store.Op{store.Update(key, store.Condition{Version: lt.item.Version}, taskChanges(key, t))}
	if !t.Rollback {
		status := string(next)
		ops = append(ops, store.Update(lj.item.Key, store.Condition{StatusIn: from},
			store.Changes{Status: &status, Data: mustJSON(job), Index: jobIndex(job.ID, e.now())}))
	}
	err = e.store.Transact(ctx, ops)
	var terr *store.TransactionError
	if errors.As(err, &terr) {
		if terr.Reasons[0] != nil {
			return nil // not ours any more
		}
		// The job already left the states a failure moves: record the task.
		if _, err := e.store.Write(ctx, ops[0]); err != nil && !errors.Is(err, store.ErrConditionFailed) {
			return err
		}
	} else if err != nil {
		return fmt.Errorf("failing %s: %w", t.ID, err)
	}
	if t.Rollback {
		return e.finish(ctx, ref.Tenant, ref.Cluster, ref.Job, domain.JobRollingBack, endRollbackFailed, msg)
	}
	return e.settleFailing(ctx, ref.Tenant, ref.Cluster, ref.Job)
}

// settleFailing moves a FAILING job on once none of its forward tasks runs:
// into its rollback plan if it has one, else to FAILED. Every task end in a
// failing job calls it, and so does the janitor; only the first conditional
// write wins.
func (e *Engine) settleFailing(ctx context.Context, tenant, cluster, jobID string) error {
	lj, err := e.loadJob(ctx, tenant, cluster, jobID)
	if err != nil {
		return err
	}
	if lj.job.Status != domain.JobFailing {
		return nil
	}
	running, err := e.anyRunning(ctx, tenant, jobID, false)
	if err != nil || running {
		return err
	}
	if len(lj.job.RollbackRoots) == 0 {
		return e.finish(ctx, tenant, cluster, jobID, domain.JobFailing, endFailed, "")
	}
	status := string(domain.JobRollingBack)
	_, err = e.store.Write(ctx, store.Update(lj.item.Key, store.Condition{Version: lj.item.Version},
		store.Changes{Status: &status, Index: jobIndex(jobID, e.now())}))
	if errors.Is(err, store.ErrConditionFailed) {
		return nil
	}
	if err != nil {
		return err
	}
	return e.releaseRollback(ctx, tenant, cluster, jobID, lj.job.RollbackRoots)
}

// releaseRollback opens the gate on each rollback root still closed, and
// sends what it opened. It is idempotent, so the janitor may repeat it.
func (e *Engine) releaseRollback(ctx context.Context, tenant, cluster, jobID string, roots []string) error {
	var ready []domain.Task
	for _, id := range roots {
		lt, err := e.loadTask(ctx, TaskRef{Tenant: tenant, Cluster: cluster, Job: jobID, Task: id})
		if err != nil {
			return err
		}
		t := lt.task
		if t.Status != domain.TaskBlocked || t.Remaining != 1 {
			continue
		}
		t.Remaining, t.Status, t.ReadyAt = 0, domain.TaskReady, e.now()
		key := taskKey(tenant, jobID, id)
		if _, err := e.store.Write(ctx, store.Update(key, store.Condition{Version: lt.item.Version}, taskChanges(key, t))); err != nil {
			if errors.Is(err, store.ErrConditionFailed) {
				continue
			}
			return err
		}
		ready = append(ready, t)
	}
	if err := e.send(ctx, tenant, ready); err != nil {
		e.log.WarnContext(ctx, "sending rollback tasks failed; the janitor will resend", "job", jobID, "error", err)
	}
	return nil
}

// anyRunning reports whether a task of the job (forward or rollback) runs.
func (e *Engine) anyRunning(ctx context.Context, tenant, jobID string, rollback bool) (bool, error) {
	found := false
	err := e.eachTask(ctx, tenant, jobID, func(it store.Item, t domain.Task) (bool, error) {
		if t.Rollback == rollback && t.Status == domain.TaskRunning {
			found = true
			return false, nil
		}
		return true, nil
	})
	return found, err
}

// eachTask walks a job's tasks until fn returns false.
func (e *Engine) eachTask(ctx context.Context, tenant, jobID string, fn func(store.Item, domain.Task) (bool, error)) error {
	cursor := ""
	for {
		page, err := e.store.Query(ctx, store.TenantPK(tenant, "TASKS#"+jobID), store.Query{Limit: store.MaxPageSize, Cursor: cursor})
		if err != nil {
			return err
		}
		for _, it := range page.Items {
			var t domain.Task
			if err := decodeInto(it, &t); err != nil {
				return err
			}
			t.Version = it.Version
			more, err := fn(it, t)
			if err != nil || !more {
				return err
			}
		}
		if page.Next == "" {
			return nil
		}
		cursor = page.Next
	}
}
