package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/store"
)

type ending int

const (
	endSucceeded ending = iota
	endFailed
	endRolledBack
	endRollbackFailed
)

// checkJobEnd looks at the job after a task ended and moves it on if that
// was the last thing it waited for. The janitor calls it too, so a finish
// lost to a crash happens anyway.
func (e *Engine) checkJobEnd(ctx context.Context, tenant, cluster, jobID string) error {
	lj, err := e.loadJob(ctx, tenant, cluster, jobID)
	if err != nil {
		return err
	}
	switch lj.job.Status {
	case domain.JobRunning:
		if lj.item.Counter(counterSinks) <= 0 {
			return e.finish(ctx, tenant, cluster, jobID, domain.JobRunning, endSucceeded, "")
		}
	case domain.JobRollingBack:
		if lj.item.Counter(counterRollbackSinks) <= 0 {
			return e.finish(ctx, tenant, cluster, jobID, domain.JobRollingBack, endRolledBack, "")
		}
	case domain.JobFailing:
		return e.settleFailing(ctx, tenant, cluster, jobID)
	}
	return nil
}

// finish ends a job that is in status from: it writes the nodes the ending
// names, then, in one transaction, the job's final status, the cluster's new
// status with its lock released, and the quota (and, for a cluster it
// makes TERMINATED, the name) the ending gives back. Of several callers,
// only the first passes the condition on the job.
func (e *Engine) finish(ctx context.Context, tenant, cluster, jobID string, from domain.JobStatus, how ending, msg string) error {
	nodesWritten := false
	var summary store.Op
	for range maxSettleAttempts {
		lj, err := e.loadJob(ctx, tenant, cluster, jobID)
		if err != nil {
			return err
		}
		job := lj.job
		if job.Status != from {
			return nil
		}
		effect, final := job.OnSuccess, domain.JobSucceeded
		switch how {
		case endFailed:
			effect, final = job.OnFailure, domain.JobFailed
		case endRolledBack:
			effect, final = job.OnRollback, domain.JobFailed
			job.StatusMessage += "; rolled back"
		case endRollbackFailed:
			effect, final = job.OnFailure, domain.JobFailed
			job.StatusMessage = "rollback failed: " + msg
		}
		if job.Aborted && final == domain.JobFailed {
			final = domain.JobAborted
		}
		effect = withTaskDeletions(effect, &job, int(lj.item.Counter(counterNodesDeleted)))
		// The nodes once: the ending, and so the effect, is the same on
		// every attempt (a retry comes from a progress count or the cluster
		// changing under the transaction below).
		if !nodesWritten {
			// The node summary counted at the job's start stops holding
			// once the ending's statuses land: it goes first, with a check
			// that this finisher still holds the job, so a finisher that
			// dies midway leaves readers recounting, not reading a stale
			// count (nodesummary.go).
			err := e.store.Transact(ctx, []store.Op{
				store.Check(lj.item.Key, store.Condition{StatusIn: []string{string(from)}}),
				store.Delete(nodeSummaryKey(tenant, cluster), store.Condition{}),
			})
			if errors.Is(err, store.ErrConditionFailed) {
				return nil
			}
			if err != nil {
				return fmt.Errorf("retiring the node summary of cluster %s: %w", cluster, err)
			}
			lists, err := e.jobListsOf(ctx, tenant, job)
			if err != nil {
				return err
			}
			nodes := lists.OnSuccess
			switch how {
			case endFailed, endRollbackFailed:
				nodes = lists.OnFailure
			case endRolledBack:
				nodes = lists.OnRollback
			}
			err = e.recordNodes(ctx, tenant, cluster, jobID, from, effect.NodeStatus, nodes)
			if errors.Is(err, errJobMoved) {
				return nil
			}
			if err != nil {
				return err
			}
			nodesWritten = true
			// Counted once the ending's statuses are in, and written with
			// the job's end (nodesummary.go).
			if summary, err = e.nodeSummaryPut(ctx, tenant, cluster, jobID, SummaryEnded); err != nil {
				return err
			}
		}
		cit, c, err := e.loadCluster(ctx, tenant, cluster)
		if err != nil {
			return err
		}
		now := e.now()
		var health *domain.ClusterHealth
		if job.Operation == domain.OpVerify {
			if health, err = e.healthOf(ctx, tenant, jobID, job.TaskTotal, now); err != nil {
				return fmt.Errorf("summing up verification %s: %w", jobID, err)
			}
		}
		var drift *domain.ClusterDrift
		if job.Operation == domain.OpDrift && how == endSucceeded && !job.Aborted {
			if drift, err = e.driftOf(ctx, tenant, job, now, c.Drift); err != nil {
				return fmt.Errorf("summing up drift check %s: %w", jobID, err)
			}
		}
		job.Status, job.EndedAt = final, now
		if final == domain.JobSucceeded {
			job.TaskDone = job.TaskTotal
		}
		finalStatus := string(final)
		ops := []store.Op{store.Update(lj.item.Key, store.Condition{Version: lj.item.Version},
			store.Changes{Status: &finalStatus, Data: mustJSON(job), ClearIndex: true})}
		ops = append(ops, jobEvent(tenant, job.Job, from, now))
		heldLock := c.ActiveJobID == jobID
		if heldLock {
			if how == endRolledBack {
				// Its rollback plan undid it (a create's or an expand's
				// new nodes are gone): its revision never took effect.
				rev, err := e.withdrawRevision(ctx, tenant, &c, job)
				if err != nil {
					return err
				}
				ops = append(ops, rev...)
			}
			prev := c.Status
			c.ActiveJobID = ""
			c.Status = effect.ClusterStatus
			c.StatusMessage = effect.Message
			if final != domain.JobSucceeded {
				c.StatusMessage = job.StatusMessage
			}
			c.NodeCount += effect.NodeCountDelta
			if c.Status.Terminal() {
				c.NodeCount = 0
				if !prev.Terminal() {
					release, err := e.releaseName(ctx, tenant, c)
					if err != nil {
						return err
					}
					ops = append(ops, release...)
				}
			}
			if health != nil {
				c.Health = health
				ops = append(ops, verifiedEvent(tenant, cluster, health))
			}
			if drift != nil {
				c.Drift = drift
				ops = append(ops, driftEvent(tenant, cluster, drift))
			}
			next := clusterItem(tenant, c)
			ch := store.Changes{Data: next.Data, Status: &next.Status, Index: next.Index, ClearIndex: next.Index == nil}
			ops = append(ops, store.Update(cit.Key, store.Condition{Version: cit.Version}, ch))
			ops = append(ops, clusterEvent(tenant, c, prev, jobID, now)...)
			ops = append(ops, verifySchedule(tenant, c, job.Job, effect, final == domain.JobSucceeded, now)...)
			ops = append(ops, driftSchedule(tenant, c, job.Job, final == domain.JobSucceeded, now)...)
			ops = append(ops, autoscaleSchedule(tenant, c, job.Job, final == domain.JobSucceeded, now)...)
			ops = append(ops, repairSchedule(tenant, c, drift, now)...)
		}
		ops = append(ops, summary)
		ops = append(ops, releaseHolds(job.Holds)...)
		if effect.ReleaseClusters != 0 || effect.ReleaseNodes != 0 {
			ops = append(ops, store.Update(tenantKey(tenant), store.Condition{MustExist: true},
				store.Changes{Add: map[string]int64{"freeClusters": int64(effect.ReleaseClusters), "freeNodes": int64(effect.ReleaseNodes)}}))
		}
		err = e.store.Transact(ctx, ops)
		if errors.Is(err, store.ErrConditionFailed) {
			continue // the job or the cluster changed: look again
		}
		if err != nil {
			return fmt.Errorf("finishing job %s: %w", jobID, err)
		}
		if !heldLock {
			// Said only once the end committed: a second finisher that
			// read the job before the first ended it finds the lock
			// free, and its transaction then fails on the job's version.
			e.log.ErrorContext(ctx, "a job ended without holding its cluster's lock", "job", jobID, "cluster", cluster, "lock", c.ActiveJobID)
		}
		e.log.InfoContext(ctx, "job ended", "tenant", tenant, "cluster", cluster, "job", jobID, "status", final)
		// The job's delivery records (deadletter.go) describe messages
		// nothing will handle now. A failure here leaves them to their
		// expiry; the job's end stands.
		if err := e.dropJobDeliveryRecords(ctx, tenant, jobID); err != nil {
			e.log.WarnContext(ctx, "deleting an ended job's delivery records failed; DynamoDB's time-to-live removes them", "job", jobID, "error", err)
		}
		e.cfg.Observer.Job(tenant, string(job.Operation), string(final), job.EndedAt.Sub(job.CreatedAt))
		return nil
	}
	return fmt.Errorf("finishing job %s: it kept changing; the janitor will finish it", jobID)
}

// withTaskDeletions is the effect of a job's end with the quota and node
// count of the nodes its delete tasks marked DELETED (deleted of them,
// settle.go) accounted for, and notes on job what it gave back. An ending
// that marks nodes DELETED names every node its delete tasks can reach
// (a delete's or shrink's victims, a create's or expand's new nodes
// rolled back) and gives back all of them: less what an earlier, failed
// end of the job gave back already. Any other ending gives back the ones
// deleted since that end: the tenant's node counter and the cluster's
// node count equal its nodes not DELETED whichever way the job ends, and
// however many times it is retried.
func withTaskDeletions(effect Effect, job *jobRecord, deleted int) Effect {
	given := job.NodesReleased
	if effect.NodeStatus == domain.NodeDeleted {
		effect.ReleaseNodes -= given
		effect.NodeCountDelta += given
		return effect
	}
	extra := deleted - given
	effect.ReleaseNodes += extra
	effect.NodeCountDelta -= extra
	job.NodesReleased = deleted
	return effect
}

// AddProgress adds finished work tasks to a job's progress count. Workers
// call it once per job per batch, not once per task: progress is a view, and
// a write per task would cost more than the task's own bookkeeping.
func (e *Engine) AddProgress(ctx context.Context, tenant, cluster, jobID string, done int) error {
	_, err := e.store.Write(ctx, store.Update(jobKey(tenant, cluster, jobID), store.Condition{MustExist: true},
		store.Changes{Add: map[string]int64{counterDone: int64(done)}}))
	if errors.Is(err, store.ErrConditionFailed) {
		return nil
	}
	return err
}

// releaseHolds gives a job's reservations back, in the transaction that
// ends it (deleting an item already gone is no error).
func releaseHolds(keys []store.Key) []store.Op {
	ops := make([]store.Op, 0, len(keys))
	for _, k := range keys {
		ops = append(ops, store.Delete(k, store.Condition{}))
	}
	return ops
}
