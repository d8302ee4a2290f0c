package engine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"time"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/store"
)

// failIfStuck fails a RUNNING or ROLLING_BACK job that will never end on its
// own, through the path a task's last failure takes (so the cluster's lock
// and the quota are released as for any failure). Two rules:
//
//   - dead end: no task of the job's phase is READY and none is RUNNING, yet
//     the job has sinks left (its counter, in the read the walks start
//     from). Nothing can move such a job: every transition that readies a task
//     is made by a task that ends. A walk over the tasks is no snapshot (a
//     dependency may succeed between the pages read), so a second walk must
//     find every task at the version the first saw: nothing changed between
//     the two walks, so the second saw the job as it was at one instant.
//   - idle: no task RUNNING, and no attempt started or ended, and the job's
//     status did not change, for StuckAfter (ready tasks that no worker
//     claims: no consumer on the queue, or a message that always fails
//     before its claim).
//
// Both rules also need the job item unchanged from before the first walk to
// after the last: it holds the sink counters, and a sink that succeeded
// meanwhile means the job is ending, not stuck.
//
// PAUSED jobs are left alone: a person paused them and resumes or aborts
// them. PENDING jobs are the submission's (undoSubmission), FAILING jobs
// settle once their running tasks end (timeOut ends the lost ones).
//
// seen is the status the janitor read and handled before (for ROLLING_BACK,
// it released the rollback's roots): a job that moved on since is left to
// the next pass, because a job that just became ROLLING_BACK may not have
// its roots released yet and would look like a dead end.
func (e *Engine) failIfStuck(ctx context.Context, tenant, cluster, jobID string, seen domain.JobStatus, r *JanitorReport) error {
	lj, err := e.loadJob(ctx, tenant, cluster, jobID)
	if errors.Is(err, store.ErrNotFound) || isNewer(err) {
		return nil
	}
	if err != nil || lj.job.Status != seen {
		return err
	}
	rollback, sinks := false, counterSinks
	switch lj.job.Status {
	case domain.JobRunning:
	case domain.JobRollingBack:
		rollback, sinks = true, counterRollbackSinks
	default:
		return nil
	}
	if lj.item.Counter(sinks) <= 0 {
		// Its last sink ended after checkJobEnd looked: it is ending, not
		// stuck (the task's worker finishes it, or the next pass).
		return e.checkJobEnd(ctx, tenant, cluster, jobID)
	}
	idleSince := e.now().Add(-e.cfg.StuckAfter)
	checkIdle := jobChangedAt(lj).Before(idleSince)
	first, err := e.scanTasks(ctx, tenant, jobID, rollback, idleSince, checkIdle)
	if err != nil || first.running {
		return err
	}
	var why string
	switch {
	case !first.ready:
		second, err := e.scanTasks(ctx, tenant, jobID, rollback, idleSince, false)
		if err != nil {
			return err
		}
		if second.running || second.ready || !maps.Equal(first.versions, second.versions) {
			return nil // it moved: not stuck, or not provably; the next pass looks again
		}
		if !rollback {
			// Roots no worker claimed are READY without an item (chunks.go):
			// their message was lost, or the workers have not got to them
			// yet. Past ResendAfter, they are sent again; either way the job
			// is not stuck.
			roots, err := e.unclaimedRoots(ctx, tenant, jobID, func(id string) bool { _, ok := second.versions[id]; return ok })
			if err != nil || len(roots) > 0 {
				if err == nil && lj.job.StartedAt.Before(e.now().Add(-e.cfg.ResendAfter)) {
					var n int
					n, err = e.sendRoots(ctx, tenant, jobID, roots)
					r.Resent += n
				}
				return err
			}
		}
		why = "stuck: no task was ready or running, so nothing could make progress (a step was lost); failed by the janitor"
	case checkIdle && !first.recent:
		why = fmt.Sprintf("stuck: tasks were ready but no attempt started or ended for %s (no worker claimed them); failed by the janitor", e.cfg.StuckAfter)
	default:
		return nil
	}
	// The job itself must not have changed since it was read, before the
	// first walk: a sink that ended meanwhile (the job's counters move in
	// the same transaction) means checkJobEnd, not this, ends the job.
	now, err := e.loadJob(ctx, tenant, cluster, jobID)
	if err != nil || now.item.Version != lj.item.Version {
		return err
	}
	e.log.WarnContext(ctx, "failing a stuck job", "tenant", tenant, "cluster", cluster, "job", jobID, "status", lj.job.Status, "why", why)
	if rollback {
		if err := e.finish(ctx, tenant, cluster, jobID, domain.JobRollingBack, endRollbackFailed, why); err != nil {
			return err
		}
		r.Stuck++
		return nil
	}
	// RUNNING -> FAILING under the version read before the walks: a pause,
	// an abort or a failure meanwhile wins, and the next pass looks again.
	job := lj.job
	job.StatusMessage = why
	failing := string(domain.JobFailing)
	moved := job.Job
	moved.Status = domain.JobFailing
	err = e.store.Transact(ctx, []store.Op{
		store.Update(lj.item.Key, store.Condition{Version: lj.item.Version},
			store.Changes{Status: &failing, Data: mustJSON(job), Index: jobIndex(jobID, e.now())}),
		jobEvent(tenant, moved, lj.job.Status, e.now()),
	})
	if errors.Is(err, store.ErrConditionFailed) {
		return nil
	}
	if err != nil {
		return err
	}
	r.Stuck++
	return e.settleFailing(ctx, tenant, cluster, jobID)
}

// taskScan is what one walk over a job's tasks saw.
type taskScan struct {
	running bool // a task (of either plan) is RUNNING
	ready   bool // a task of the plan the job runs is READY
	recent  bool // an attempt started or ended after the idle cutoff
	// versions holds every task's version; complete only when the walk
	// found nothing ready or running (it stops early otherwise).
	versions map[string]int64
}

// scanTasks walks a job's tasks, stopping as soon as the answer is known:
// at a running task, or at a ready one once the idle rule is settled.
func (e *Engine) scanTasks(ctx context.Context, tenant, jobID string, rollback bool, idleSince time.Time, checkIdle bool) (taskScan, error) {
	s := taskScan{versions: map[string]int64{}}
	err := e.eachTask(ctx, tenant, jobID, func(it store.Item, t domain.Task) (bool, error) {
		s.versions[t.ID] = it.Version
		status := domain.TaskStatus(it.Status)
		if status == domain.TaskRunning {
			s.running = true
			return false, nil
		}
		if status == domain.TaskReady && t.Rollback == rollback {
			s.ready = true
		}
		for _, a := range t.Attempts {
			if a.StartedAt.After(idleSince) || a.EndedAt.After(idleSince) {
				s.recent = true
			}
		}
		return !(s.ready && (s.recent || !checkIdle)), nil
	})
	return s, err
}

// jobChangedAt is when the job's status last changed: its place in the
// janitor's index (moved on every change of status), else its start.
func jobChangedAt(lj loadedJob) time.Time {
	if lj.item.Index != nil {
		if ms, err := strconv.ParseInt(lj.item.Index.Sort, 10, 64); err == nil {
			return time.UnixMilli(ms).UTC()
		}
	}
	return maxTime(lj.job.StartedAt, lj.job.CreatedAt)
}
