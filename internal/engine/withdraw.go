package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/store"
)

// A withdrawn job ended before it started: a pre-start hook refused it, or
// the janitor undid a submission that never finished (failPending). Its end
// gave back everything step 1 took (the lock, the quota, the cluster's node
// count; a create's cluster became TERMINATED), its new nodes became
// DELETED and the existing nodes it changed (layouts, retiring nodes
// DELETING) are as they were, from the job's undo items (nodeundo.go). A
// retry of it is a new submission of the same job, so it takes all of
// that again, in one transaction, or is refused with nothing changed
// (resubmit), and makes its node changes again before it starts.

// QuotaRefusal is ErrQuota with what the refused request asked for, so the
// caller can name the limit it passes.
type QuotaRefusal struct {
	Clusters, Nodes int
}

func (e *QuotaRefusal) Error() string {
	return fmt.Sprintf("engine: the tenant's quota does not allow %d more cluster(s) and %d more node(s)", e.Clusters, e.Nodes)
}

func (e *QuotaRefusal) Is(target error) bool { return target == ErrQuota }

// takeQuota is the conditional write that takes clusters and nodes from the
// tenant's free counters (nil when there is nothing to take): it never
// takes more than is free.
func takeQuota(tenant string, clusters, nodes int) *store.Op {
	if clusters <= 0 && nodes <= 0 {
		return nil
	}
	op := store.Update(tenantKey(tenant),
		store.Condition{StatusIn: []string{"active"}, CountersAtLeast: map[string]int64{"freeClusters": int64(clusters), "freeNodes": int64(nodes)}},
		store.Changes{Add: map[string]int64{"freeClusters": -int64(clusters), "freeNodes": -int64(nodes)}})
	return &op
}

// resubmit retries a withdrawn job. One transaction moves it FAILED ->
// PENDING and takes again its cluster's lock, the quota and node count its
// withdrawal gave back, the holds hold says (a static pool's hosts for its
// new nodes) and, for a create, the cluster's name (the cluster
// comes back from TERMINATED to PENDING). When they no longer fit it is
// refused (*QuotaRefusal, ErrNameTaken, ErrClusterBusy) and nothing
// changed; so is it (ErrJobState) when another job changed the nodes it
// changes since its withdrawal. Then its new nodes are PLANNED again, the
// nodes it changes are changed again (nodeundo.go), and it starts the way
// a submission does, asking the pre-start hooks again: a retry must not be
// a way around them. A crash in between leaves a PENDING job, which the
// janitor finishes (a staged one) or withdraws again after SubmitTimeout.
func (e *Engine) resubmit(ctx context.Context, tenant, cluster, jobID string, hold HoldFunc) (domain.Job, error) {
	var job jobRecord
	var h Hold
	if hold != nil {
		lj, err := e.loadJob(ctx, tenant, cluster, jobID)
		if err != nil {
			return domain.Job{}, err
		}
		unmade, err := e.unmadeNodes(ctx, tenant, cluster, &lj.job)
		if err != nil {
			return domain.Job{}, err
		}
		if h, err = hold(false, unmade); err != nil {
			return domain.Job{}, err
		}
	}
	for attempt := 0; ; attempt++ {
		if attempt == maxSettleAttempts {
			return domain.Job{}, fmt.Errorf("%w: job %s kept changing; try again", ErrJobState, jobID)
		}
		lj, err := e.loadJob(ctx, tenant, cluster, jobID)
		if err != nil {
			return domain.Job{}, err
		}
		job = lj.job
		if job.Status != domain.JobFailed || !job.withdrawn() {
			return domain.Job{}, fmt.Errorf("%w: job %s is %s; it was retried meanwhile", ErrJobState, jobID, job.Status)
		}
		cit, c, err := e.loadCluster(ctx, tenant, cluster)
		if err != nil {
			return domain.Job{}, err
		}
		if c.ActiveJobID != "" {
			return domain.Job{}, fmt.Errorf("%w: job %s holds cluster %s", ErrClusterBusy, c.ActiveJobID, cluster)
		}
		// Its node changes are made again below, over the nodes as its
		// withdrawal left them: when another job changed them since, the
		// plan no longer fits the cluster. The transaction's condition on
		// the cluster's version makes this check hold until then.
		same, err := e.nodesAsWithdrawn(ctx, tenant, cluster, jobID)
		if err != nil {
			return domain.Job{}, err
		}
		if !same {
			return domain.Job{}, fmt.Errorf("%w: nodes job %s changed were changed again since it was withdrawn; submit the operation again", ErrJobState, jobID)
		}
		now := e.now()
		prevCluster := c.Status
		job.Status, job.EndedAt, job.StatusMessage = domain.JobPending, time.Time{}, ""
		job.Withdrawn, job.AwaitingPreStart = false, false
		job.SubmittedAt = now
		job.Retries++
		job.Holds = h.Items // the withdrawal gave the old ones back
		pending := string(domain.JobPending)
		ops := []store.Op{store.Update(lj.item.Key, store.Condition{Version: lj.item.Version, StatusIn: []string{string(domain.JobFailed)}},
			store.Changes{Status: &pending, Data: mustJSON(job), Index: jobIndex(jobID, now)})}
		c.ActiveJobID, c.LatestJobID = jobID, jobID
		c.Status, c.StatusMessage = job.RunningStatus, ""
		c.NodeCount += job.AddedNodeCount
		ci := clusterItem(tenant, c)
		ops = append(ops, store.Update(cit.Key, store.Condition{Version: cit.Version},
			store.Changes{Data: ci.Data, Status: &ci.Status, Index: ci.Index, ClearIndex: ci.Index == nil}))
		quotaAt := -1
		if op := takeQuota(tenant, job.TakenClusters, job.TakenNodes); op != nil {
			quotaAt = len(ops)
			ops = append(ops, *op)
		}
		nameAt := -1
		if job.Created && prevCluster.Terminal() {
			// A reservation an older release left behind (this cluster's
			// own, or another ended one's) does not hold the name.
			if err := e.dropStaleName(ctx, tenant, c.Name); err != nil {
				return domain.Job{}, err
			}
			nameAt = len(ops)
			ops = append(ops, claimName(tenant, c.Name, c.ID))
		}
		holdAt := len(ops)
		ops = append(ops, h.Take...)
		holdEnd := len(ops)
		ops = append(ops, jobEvent(tenant, job.Job, domain.JobFailed, now))
		ops = append(ops, clusterEvent(tenant, c, prevCluster, jobID, now)...)
		err = e.store.Transact(ctx, ops)
		if err == nil {
			break
		}
		var terr *store.TransactionError
		if !errors.As(err, &terr) {
			return domain.Job{}, fmt.Errorf("retrying job %s: %w", jobID, err)
		}
		switch {
		case quotaAt >= 0 && terr.Reasons[quotaAt] != nil:
			return domain.Job{}, &QuotaRefusal{Clusters: job.TakenClusters, Nodes: job.TakenNodes}
		case nameAt >= 0 && terr.Reasons[nameAt] != nil:
			return domain.Job{}, &NameTakenError{Name: c.Name, By: nameHolder(terr.Reasons[nameAt])}
		case terr.Reasons[0] != nil, terr.Reasons[1] != nil:
			continue // the job or the cluster changed: look again
		}
		for i := holdAt; i < holdEnd; i++ {
			if terr.Reasons[i] != nil {
				return domain.Job{}, ErrHoldChanged
			}
		}
		return domain.Job{}, fmt.Errorf("retrying job %s: %w", jobID, err)
	}
	e.log.InfoContext(ctx, "withdrawn job submitted again", "tenant", tenant, "cluster", cluster, "job", jobID)

	if job.StagedChunks > 0 {
		// Step 2 is staged (or planned later): writing it again puts the
		// nodes back PLANNED, then it starts.
		if err := e.ContinueSubmission(ctx, tenant, cluster, jobID); err != nil {
			e.log.WarnContext(ctx, "continuing a retried submission failed; the janitor will go on with it", "job", jobID, "error", err)
		}
		return job.Job, nil
	}
	if job.AddedNodeCount > 0 {
		err := e.markNewNodes(ctx, tenant, cluster, job, domain.NodeDeleted, domain.NodePlanned)
		if errors.Is(err, errJobMoved) {
			return job.Job, nil // withdrawn again meanwhile
		}
		if err != nil {
			return domain.Job{}, err
		}
	}
	if err := e.restoreNodes(ctx, tenant, cluster, jobID, false); err != nil {
		if errors.Is(err, errJobMoved) {
			return job.Job, nil // withdrawn again meanwhile
		}
		return domain.Job{}, err
	}
	defs, err := e.deferredTasks(ctx, tenant, jobID)
	if err != nil {
		return domain.Job{}, err
	}
	var ready []domain.Task
	for _, t := range defs {
		if t.Status == domain.TaskReady {
			ready = append(ready, t)
		}
	}
	err = e.start(ctx, tenant, cluster, &job, ready, nil)
	if errors.Is(err, ErrSubmitAborted) {
		return job.Job, nil
	}
	if err != nil {
		return domain.Job{}, err
	}
	if job.Status == domain.JobRunning && job.TaskTotal == 0 && len(ready) == 0 {
		return job.Job, e.checkJobEnd(ctx, tenant, cluster, jobID)
	}
	return job.Job, nil
}

// markNewNodes moves the nodes job's submission wrote from one status to
// another. They are the cluster's nodes stamped with the job's creation
// time (stepTwo writes every new node with it, replanned or staged), in
// status from. Each transaction also checks that the job is PENDING, the
// only status in which a withdrawal or a resubmission touches them:
// errJobMoved when it is not.
func (e *Engine) markNewNodes(ctx context.Context, tenant, cluster string, job jobRecord, from, to domain.NodeStatus) error {
	check := store.Check(jobKey(tenant, cluster, job.ID), store.Condition{StatusIn: []string{string(domain.JobPending)}})
	status := string(to)
	for range maxSettleAttempts {
		var ops []store.Op
		err := e.eachNodeItem(ctx, tenant, cluster, func(it store.Item) error {
			if it.Status != string(from) {
				return nil
			}
			n, err := decodeNode(it)
			if err != nil {
				return err
			}
			if !n.CreatedAt.Equal(job.CreatedAt) {
				return nil
			}
			n.Status = to
			ops = append(ops, store.Update(it.Key, store.Condition{Version: it.Version}, store.Changes{Status: &status, Data: mustJSON(n)}))
			return nil
		})
		if err != nil {
			return fmt.Errorf("reading the nodes of cluster %s: %w", cluster, err)
		}
		conflict := false
		for _, b := range transactBatchesOf(ops, store.MaxTransactItems-1, store.MaxTransactBytes-store.TransactSize([]store.Op{check})) {
			err := e.store.Transact(ctx, append(b[:len(b):len(b)], check))
			var terr *store.TransactionError
			if errors.As(err, &terr) {
				if terr.Reasons[len(b)] != nil {
					return errJobMoved
				}
				conflict = true // a node changed under us (another withdrawal): read them again
				break
			}
			if err != nil {
				return fmt.Errorf("marking the new nodes of job %s %s: %w", job.ID, to, err)
			}
		}
		if !conflict {
			return nil
		}
	}
	return fmt.Errorf("marking the new nodes of job %s %s: they kept changing; try again", job.ID, to)
}
