package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/store"
)

// ErrNothingToRetry: the job ended in a way a retry cannot continue (it
// succeeded, or its rollback already undid it).
var ErrNothingToRetry = errors.New("engine: the job has nothing to retry")

// Retry continues a FAILED or ABORTED job from where it stopped: its failed
// tasks get fresh attempts and everything that already succeeded stays done.
// A job whose rollback had started continues its rollback; otherwise the
// forward plan continues. The job takes its cluster's lock again (refused
// with ErrClusterBusy if another job holds it) and the quota its failure gave
// back (refused with a *QuotaRefusal, nothing changed, when it no longer
// fits). A job that ended before it started is submitted again instead
// (resubmit): its withdrawal gave back all that step 1 took.
//
// Two steps, safe to interrupt: first the failed tasks become READY (a FAILED
// job runs nothing, and the janitor leaves READY tasks of ended jobs alone),
// then one transaction moves the job, the cluster and the quota; READY tasks
// are sent last. A retry cut after the first step is completed by the next.
func (e *Engine) Retry(ctx context.Context, tenant, cluster, jobID, by string) (domain.Job, error) {
	return e.RetryHolding(ctx, tenant, cluster, jobID, by, nil)
}

// HoldFunc says what a retried job must reserve again. rollback tells
// whether the retry continues the rollback; unmade lists the job's nodes
// that still need a machine: those PLANNED with no address for a job that
// ran, every new node for a withdrawn one (its withdrawal marked them
// DELETED and gave their hosts back).
type HoldFunc func(rollback bool, unmade []string) (Hold, error)

// RetryHolding is Retry for a job that needs reservations again (its end
// gave its holds back): hold says what to take; it is taken in the
// transaction that reopens (or, for a withdrawn job, resubmits) the job,
// and refused with ErrHoldChanged when another job took a reservation
// meanwhile (read again and call again). An error from hold refuses the
// retry before anything is written.
func (e *Engine) RetryHolding(ctx context.Context, tenant, cluster, jobID, by string, hold HoldFunc) (domain.Job, error) {
	lj, err := e.loadJob(ctx, tenant, cluster, jobID)
	if err != nil {
		return domain.Job{}, err
	}
	job := lj.job
	switch job.Status {
	case domain.JobFailed, domain.JobAborted:
		if job.withdrawn() {
			if !job.stepTwoWritten() {
				return domain.Job{}, fmt.Errorf("%w: job %s's submission never finished writing its tasks (%s); submit the operation again", ErrJobState, jobID, job.StatusMessage)
			}
			return e.resubmit(ctx, tenant, cluster, jobID, hold)
		}
	case domain.JobSucceeded:
		return domain.Job{}, fmt.Errorf("%w: job %s succeeded", ErrNothingToRetry, jobID)
	default:
		return domain.Job{}, fmt.Errorf("%w: job %s is %s; only a failed or aborted job can be retried", ErrJobState, jobID, job.Status)
	}
	rollback, err := e.rollbackStarted(ctx, tenant, jobID)
	if err != nil {
		return domain.Job{}, err
	}
	if rollback && lj.item.Counter(counterRollbackSinks) <= 0 {
		return domain.Job{}, fmt.Errorf("%w: job %s was rolled back; submit the operation again", ErrNothingToRetry, jobID)
	}

	var h Hold
	if hold != nil {
		unmade, err := e.unmadeNodes(ctx, tenant, cluster, nil)
		if err != nil {
			return domain.Job{}, err
		}
		if h, err = hold(rollback, unmade); err != nil {
			return domain.Job{}, err
		}
	}

	// A retry starts with no record of earlier deliveries: those of a
	// task that was poison would fail it again at its first redelivery.
	// The job's end deleted them unless it was cut short.
	if err := e.dropJobDeliveryRecords(ctx, tenant, jobID); err != nil {
		return domain.Job{}, err
	}

	// Step 1: failed tasks of the phase that stopped become READY again, and
	// they and the tasks that were waiting out a backoff get as many fresh
	// attempts as one run gives.
	var reset []domain.Task
	err = e.eachTask(ctx, tenant, jobID, func(it store.Item, t domain.Task) (bool, error) {
		if t.Rollback != rollback || (t.Status != domain.TaskFailed && t.Status != domain.TaskReady) || t.Join {
			return true, nil
		}
		t.MaxAttempts = t.Attempt + max(t.AttemptsPerRun, 1)
		t.Status, t.ReadyAt = domain.TaskReady, e.now()
		t.NoteSend(domain.SendJobRetry)
		if _, err := e.store.Write(ctx, store.Update(it.Key, store.Condition{Version: it.Version}, taskChanges(it.Key, t))); err != nil {
			return false, fmt.Errorf("resetting task %s: %w", t.ID, err)
		}
		reset = append(reset, t)
		return true, nil
	})
	if err != nil {
		return domain.Job{}, err
	}

	// Step 2: job, cluster lock and quota in one transaction.
	job, err = e.reopenJob(ctx, tenant, cluster, jobID, rollback, h)
	if err != nil {
		return domain.Job{}, err
	}
	e.log.InfoContext(ctx, "job retried", "tenant", tenant, "cluster", cluster, "job", jobID, "tasks", len(reset), "rollback", rollback)
	// Every READY task of the phase, not only those reset now: an earlier
	// retry cut after step 1 left some READY.
	if err := e.resendReady(ctx, tenant, jobID, rollback); err != nil {
		e.log.WarnContext(ctx, "sending retried tasks failed; the janitor will resend", "job", jobID, "error", err)
	}
	// A job whose only failure was in a sink may already be complete.
	if err := e.checkJobEnd(ctx, tenant, cluster, jobID); err != nil {
		return domain.Job{}, err
	}
	return job.Job, nil
}

// reopenJob moves a FAILED or ABORTED job back to running, takes its
// cluster's lock and the quota its failure gave back, in one transaction.
// Progress counts land on the job item at any time and bump its version; a
// conflict with one is not a reason to refuse, so it reads again and rechecks.
func (e *Engine) reopenJob(ctx context.Context, tenant, cluster, jobID string, rollback bool, hold Hold) (jobRecord, error) {
	for range maxSettleAttempts {
		lj, err := e.loadJob(ctx, tenant, cluster, jobID)
		if err != nil {
			return jobRecord{}, err
		}
		job := lj.job
		if job.Status != domain.JobFailed && job.Status != domain.JobAborted {
			return jobRecord{}, fmt.Errorf("%w: job %s is %s; it was retried meanwhile", ErrJobState, jobID, job.Status)
		}
		cit, c, err := e.loadCluster(ctx, tenant, cluster)
		if err != nil {
			return jobRecord{}, err
		}
		if c.ActiveJobID != "" {
			return jobRecord{}, fmt.Errorf("%w: job %s holds cluster %s", ErrClusterBusy, c.ActiveJobID, cluster)
		}
		next := domain.JobRunning
		if rollback {
			next = domain.JobRollingBack
		}
		job.Status, job.EndedAt, job.Aborted = next, time.Time{}, false
		job.StatusMessage = "" // the next failure, if any, says what it was
		job.Retries++
		job.Holds = hold.Items
		status := string(next)
		ops := []store.Op{store.Update(lj.item.Key, store.Condition{Version: lj.item.Version},
			store.Changes{Status: &status, Data: mustJSON(job), Index: jobIndex(jobID, e.now())})}
		prevJob, prevCluster := lj.job.Status, c.Status
		c.ActiveJobID, c.LatestJobID = jobID, jobID
		if job.RunningStatus != "" {
			c.Status = job.RunningStatus
		}
		c.StatusMessage = ""
		effect := job.OnFailure // what the failure did, undone
		c.NodeCount -= effect.NodeCountDelta
		ci := clusterItem(tenant, c)
		ops = append(ops, store.Update(cit.Key, store.Condition{Version: cit.Version},
			store.Changes{Data: ci.Data, Status: &ci.Status, Index: ci.Index, ClearIndex: ci.Index == nil}))
		quotaAt := -1
		if op := takeQuota(tenant, effect.ReleaseClusters, effect.ReleaseNodes); op != nil {
			quotaAt = len(ops)
			ops = append(ops, *op)
		}
		holdAt := len(ops)
		ops = append(ops, hold.Take...)
		holdEnd := len(ops)
		ops = append(ops, jobEvent(tenant, job.Job, prevJob, e.now()))
		ops = append(ops, clusterEvent(tenant, c, prevCluster, jobID, e.now())...)
		err = e.store.Transact(ctx, ops)
		if err == nil {
			return job, nil
		}
		var terr *store.TransactionError
		if !errors.As(err, &terr) {
			return jobRecord{}, fmt.Errorf("retrying job %s: %w", jobID, err)
		}
		switch {
		case quotaAt >= 0 && terr.Reasons[quotaAt] != nil:
			return jobRecord{}, &QuotaRefusal{Clusters: effect.ReleaseClusters, Nodes: effect.ReleaseNodes}
		case terr.Reasons[0] != nil, terr.Reasons[1] != nil:
			continue // the job or the cluster changed: look again
		}
		for i := holdAt; i < holdEnd; i++ {
			if terr.Reasons[i] != nil {
				return jobRecord{}, ErrHoldChanged
			}
		}
		return jobRecord{}, fmt.Errorf("retrying job %s: %w", jobID, err)
	}
	return jobRecord{}, fmt.Errorf("%w: job %s kept changing; try again", ErrJobState, jobID)
}

// unmadeNodes lists the nodes a retry must find machines for: with job nil
// (a job that ran), the cluster's nodes PLANNED with no address; with a
// withdrawn job, the new nodes its withdrawal marked DELETED.
func (e *Engine) unmadeNodes(ctx context.Context, tenant, cluster string, withdrawn *jobRecord) ([]string, error) {
	nodes, err := e.Nodes(ctx, tenant, cluster)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, n := range nodes {
		switch {
		case withdrawn == nil && n.Status == domain.NodePlanned && len(n.Addresses) == 0,
			withdrawn != nil && n.Status == domain.NodeDeleted && n.CreatedAt.Equal(withdrawn.CreatedAt):
			out = append(out, n.ID)
		}
	}
	return out, nil
}

// rollbackStarted reports whether any rollback task left its gate.
func (e *Engine) rollbackStarted(ctx context.Context, tenant, jobID string) (bool, error) {
	started := false
	err := e.eachTask(ctx, tenant, jobID, func(_ store.Item, t domain.Task) (bool, error) {
		if t.Rollback && t.Status != domain.TaskBlocked {
			started = true
			return false, nil
		}
		return true, nil
	})
	return started, err
}
