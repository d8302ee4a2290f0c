package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/store"
)

// ErrJobState: the job is not in a state that allows the request.
var ErrJobState = errors.New("engine: the job's state does not allow this")

// Pause stops a running job from starting more tasks. Tasks already running
// finish their attempt; their dependents wait.
func (e *Engine) Pause(ctx context.Context, tenant, cluster, jobID string) error {
	return e.moveJob(ctx, tenant, cluster, jobID, []domain.JobStatus{domain.JobRunning}, domain.JobPaused, nil)
}

// Resume lets a paused job go on and sends its ready tasks again.
func (e *Engine) Resume(ctx context.Context, tenant, cluster, jobID string) error {
	if err := e.moveJob(ctx, tenant, cluster, jobID, []domain.JobStatus{domain.JobPaused}, domain.JobRunning, nil); err != nil {
		return err
	}
	return e.resendReady(ctx, tenant, jobID, false)
}

// Abort fails a running or paused job now: running tasks finish their
// attempt, nothing new starts, and the rollback plan (if any) runs.
func (e *Engine) Abort(ctx context.Context, tenant, cluster, jobID, by string) error {
	err := e.moveJob(ctx, tenant, cluster, jobID, []domain.JobStatus{domain.JobRunning, domain.JobPaused}, domain.JobFailing, func(j *jobRecord) {
		j.Aborted = true
		j.StatusMessage = fmt.Sprintf("aborted by %s", by)
	})
	if err != nil {
		return err
	}
	return e.settleFailing(ctx, tenant, cluster, jobID)
}

func (e *Engine) moveJob(ctx context.Context, tenant, cluster, jobID string, from []domain.JobStatus, to domain.JobStatus, edit func(*jobRecord)) error {
	// Progress counts land on the job item at any time; a conflict with one
	// is not a reason to refuse, so read again and recheck the status.
	for range maxSettleAttempts {
		lj, err := e.loadJob(ctx, tenant, cluster, jobID)
		if err != nil {
			return err
		}
		if !slices.Contains(from, lj.job.Status) {
			return fmt.Errorf("%w: job %s is %s", ErrJobState, jobID, lj.job.Status)
		}
		job := lj.job
		if edit != nil {
			edit(&job)
		}
		status := string(to)
		moved := job.Job
		moved.Status = to
		err = e.store.Transact(ctx, []store.Op{
			store.Update(lj.item.Key, store.Condition{Version: lj.item.Version},
				store.Changes{Status: &status, Data: mustJSON(job), Index: jobIndex(jobID, e.now())}),
			jobEvent(tenant, moved, lj.job.Status, e.now()),
		})
		if errors.Is(err, store.ErrConditionFailed) {
			continue
		}
		return err
	}
	return fmt.Errorf("%w: job %s kept changing; try again", ErrJobState, jobID)
}

// resendReady sends every READY task of the job (of the given plan) again,
// with a fresh deduplication id so the queue does not drop it; for the
// forward plan, unclaimed roots too.
func (e *Engine) resendReady(ctx context.Context, tenant, jobID string, rollback bool) error {
	var ready []domain.Task
	seen := map[string]bool{}
	err := e.eachTask(ctx, tenant, jobID, func(it store.Item, t domain.Task) (bool, error) {
		seen[t.ID] = true
		if t.Status != domain.TaskReady || t.Rollback != rollback {
			return true, nil
		}
		t.NoteSend(domain.SendResume)
		t.ReadyAt = maxTime(t.ReadyAt, e.now())
		key := it.Key
		if _, err := e.store.Write(ctx, store.Update(key, store.Condition{Version: it.Version}, taskChanges(key, t))); err != nil {
			if errors.Is(err, store.ErrConditionFailed) {
				return true, nil // claimed meanwhile
			}
			return false, err
		}
		ready = append(ready, t)
		return true, nil
	})
	if err != nil {
		return err
	}
	if err := e.send(ctx, tenant, ready); err != nil || rollback {
		return err
	}
	_, err = e.sendUnclaimedRoots(ctx, tenant, jobID, func(id string) bool { return seen[id] })
	return err
}
