package engine

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/store"
	"github.com/heddle-io/heddle/planner"
)

// Errors Submit returns when the store refuses the job.
var (
	// ErrClusterBusy: another job holds the cluster, or the cluster changed
	// since it was read (invariant 4).
	ErrClusterBusy = errors.New("engine: the cluster has a job running or changed since it was read")
	// ErrQuota: the tenant's free clusters or nodes do not cover the job
	// (invariant 5).
	ErrQuota = errors.New("engine: the tenant's quota does not allow this")
	// ErrStale: a check the caller attached (such as the catalog revision the
	// plan was made from) no longer holds.
	ErrStale = errors.New("engine: the state the plan was made from has changed")
	// ErrHoldChanged: a reservation the submission takes (Submission.Hold)
	// changed since it was read, because another submission took one: the
	// caller reads the reservations again and decides anew.
	ErrHoldChanged = errors.New("engine: a reservation changed while the job was submitted")
	// ErrSubmitAborted: the janitor undid this submission (it took longer
	// than SubmitTimeout).
	ErrSubmitAborted = errors.New("engine: the submission was undone by the janitor")
)

// Submission is a planned job to run on a cluster.
type Submission struct {
	Tenant string
	// Cluster is the cluster to store with the job. For a create it is new
	// (Create set); otherwise it is the cluster as read, and its Version is
	// the condition that no other job took it meanwhile.
	Cluster domain.Cluster
	Create  bool
	// ClusterStatus is the cluster's status while the job runs (PENDING for a
	// create, DELETING for a delete, unchanged when empty).
	ClusterStatus domain.ClusterStatus
	// NewNodes are written, PLANNED, with the job (create, expand).
	NewNodes []domain.Node
	// RetiringNodes are marked DELETING with the job's tasks (shrink,
	// delete), before any task runs: from then on they are no longer part of
	// the layout that macros expand against, so the remaining nodes
	// reconfigure without them.
	RetiringNodes []string
	// UpdatedNodes are existing nodes whose layout the job changes (add or
	// remove services, template sync), written whole with the job's tasks
	// before any task runs, so macros expand against the layout the job
	// builds. No job runs meanwhile (the job holds the cluster), so nothing
	// else writes these nodes.
	UpdatedNodes []domain.Node
	Operation    domain.Operation
	RequestedBy  string
	Plan         *planner.Plan
	// TakeClusters and TakeNodes are taken from the tenant's free quota in
	// the job's first transaction.
	TakeClusters, TakeNodes int
	OnSuccess, OnFailure    Effect
	// OnRollback applies when the rollback plan ran to its end.
	OnRollback Effect
	// Checks are extra conditions for the first transaction, on unscoped keys
	// (for example that the catalog is still at the revision the plan read).
	Checks []store.Op
	// Hold takes reservations other than the quota (a static pool's
	// hosts) in the job's first transaction; the job gives them back when
	// it ends.
	Hold Hold
	// Params are copied to every work task (the simulation plugin's inputs).
	Params func(planner.Task) map[string]string
	// Replan, when set, makes Submit write only step 1 and Replan (the
	// planning's inputs, small) and answer; the engine's Replanner rebuilds
	// the whole submission from them in the background (replan.go). Plan,
	// the node lists and the effects' node lists are then left empty, and
	// PlannedNodes says how many new nodes the plan makes.
	Replan       []byte
	PlannedNodes int
	// PlannedTasks is the plan's work task count (the job's TaskTotal from
	// the start, so the answer shows it).
	PlannedTasks int
}

// Hold is a reservation a job holds while it runs: Take are conditional
// writes on unscoped keys that take it (refused with ErrHoldChanged when
// one's condition fails: someone else took a reservation meanwhile), and
// Items are the unscoped keys that stand for it, deleted in the
// transaction that ends the job (finish, a failed or vetoed start, the
// janitor's undo) and written again by a retry that takes it back.
type Hold struct {
	Take  []store.Op
	Items []store.Key
}

// NewJobID returns a job id that sorts by creation time.
func NewJobID(now time.Time) string {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return fmt.Sprintf("j%012x%s", now.UnixMilli(), hex.EncodeToString(b))
}

// Submit writes the job with its tasks and starts it; see the package doc for
// the three steps. It returns the job as started.
func (e *Engine) Submit(ctx context.Context, sub Submission) (domain.Job, error) {
	now := e.now()
	job := jobRecord{
		Job: domain.Job{ID: NewJobID(now), TenantID: sub.Tenant, ClusterID: sub.Cluster.ID, Operation: sub.Operation,
			Status: domain.JobPending, RequestedBy: sub.RequestedBy, CreatedAt: now},
		OnSuccess: sub.OnSuccess, OnFailure: sub.OnFailure, OnRollback: sub.OnRollback,
		Created: sub.Create, PrevStatus: sub.Cluster.Status, TakenClusters: sub.TakeClusters, TakenNodes: sub.TakeNodes,
		AddedNodeCount: len(sub.NewNodes), Holds: sub.Hold.Items,
	}
	if sub.Replan != nil {
		job.AddedNodeCount, job.TaskTotal = sub.PlannedNodes, sub.PlannedTasks
		return e.submitForReplan(ctx, sub, job)
	}
	ops2, ready, sinks, rbSinks, all := e.stepTwo(sub, &job, now)
	var staged []store.Item
	if batches := transactBatches(ops2); len(batches) > e.inlineBatches {
		staged = stageItems(sub.Tenant, job.ID, ops2)
		job.StagedChunks = len(staged)
	}

	// Step 1: lock, quota, checks, job.
	cluster, err := e.stepOne(ctx, sub, &job, map[string]int64{counterSinks: int64(sinks), counterRollbackSinks: int64(rbSinks)}, nil)
	if err != nil {
		return domain.Job{}, err
	}

	if err := e.recordUndo(ctx, sub.Tenant, cluster.ID, job.ID, sub); err != nil {
		if errors.Is(err, errJobMoved) {
			return domain.Job{}, ErrSubmitAborted // as start says when the janitor was first
		}
		return domain.Job{}, fmt.Errorf("recording the node changes of job %s: %w", job.ID, err)
	}
	if staged != nil {
		// Step 2, staged: the request writes the staged ops (a few large
		// items) and answers; the rest goes on in the background.
		if err := e.transactAll(ctx, transactBatches(putAll(staged))); err != nil {
			return domain.Job{}, fmt.Errorf("staging the nodes and tasks of job %s: %w", job.ID, err)
		}
		e.continueInBackground(ctx, sub.Tenant, cluster.ID, job.ID)
		return job.Job, nil
	}
	if err := e.transactAll(ctx, transactBatches(ops2)); err != nil {
		return domain.Job{}, fmt.Errorf("writing the nodes and tasks of job %s: %w", job.ID, err)
	}
	if err := e.start(ctx, sub.Tenant, cluster.ID, &job, ready, nil); err != nil {
		return domain.Job{}, err
	}
	if all == 0 {
		// Nothing to do (every action was needless): no task will end to
		// finish the job, so it ends now (or, if this fails, by the janitor).
		if err := e.checkJobEnd(ctx, sub.Tenant, cluster.ID, job.ID); err != nil {
			e.log.WarnContext(ctx, "ending an empty job failed; the janitor will", "job", job.ID, "error", err)
		} else if lj, err := e.loadJob(ctx, sub.Tenant, cluster.ID, job.ID); err == nil {
			return lj.job.Job, nil
		}
	}
	return job.Job, nil
}

// continueInBackground runs ContinueSubmission after the request answered;
// the janitor does it too, so a Lambda frozen meanwhile delays the job by
// a janitor period.
func (e *Engine) continueInBackground(ctx context.Context, tenant, cluster, jobID string) {
	go func() {
		bg := context.WithoutCancel(ctx)
		if err := e.ContinueSubmission(bg, tenant, cluster, jobID); err != nil {
			e.log.WarnContext(bg, "writing a staged submission failed; the janitor will go on with it", "job", jobID, "error", err)
		}
	}()
}

// stepTwo is what step 2 of sub writes: nodes, tasks, chunks and list
// items (nothing acts on a PENDING job), the forward tasks READY from the
// start, the job's sink counts and how many tasks it has. It completes job
// (task total, rollback roots, lists, skip message).
func (e *Engine) stepTwo(sub Submission, job *jobRecord, now time.Time) (ops2 []store.Op, ready []domain.Task, sinks, rbSinks, total int) {
	if sub.Plan != nil {
		job.StatusMessage = planner.SkipSummary(sub.Plan.Skipped)
	}
	all, sinks, rbSinks, roots := buildTasks(sub, job.ID, now)
	// Tasks that need an item now, and those kept in chunks (chunks.go).
	var tasks, deferred, rollback []domain.Task
	for _, t := range all {
		if !t.Join && !t.Rollback {
			job.TaskTotal++
		}
		switch {
		case t.Rollback:
			rollback = append(rollback, t)
		case len(t.DependsOn) <= 1:
			deferred = append(deferred, t)
		default:
			tasks = append(tasks, t)
		}
	}
	// Chunks hold their tasks by id, so the task index's readers find a
	// page's definitions in one or two of them (taskindex.go).
	byID := func(a, b domain.Task) int { return strings.Compare(a.ID, b.ID) }
	slices.SortFunc(deferred, byID)
	slices.SortFunc(rollback, byID)
	placed := map[string]int{}
	chunks := append(placedTaskChunks(sub.Tenant, deferredChunks, job.ID, deferred, placed), placedTaskChunks(sub.Tenant, rollbackChunks, job.ID, rollback, placed)...)
	if job.TaskTotal >= e.cfg.TaskIndexMinTasks {
		chunks = append(chunks, taskIndexItems(sub.Tenant, job.ID, sub.Plan, all, placed)...)
	}
	job.RollbackRoots = roots
	lists := listItems(sub.Tenant, job, e.inlineLists)

	for _, n := range sub.NewNodes {
		n.ClusterID, n.Status, n.CreatedAt = sub.Cluster.ID, domain.NodePlanned, now
		ops2 = append(ops2, store.Put(store.Item{Key: nodeKey(sub.Tenant, sub.Cluster.ID, n.ID), Status: string(n.Status), Data: mustJSON(n)}, store.Condition{}))
	}
	for _, n := range sub.UpdatedNodes {
		ops2 = append(ops2, store.Update(nodeKey(sub.Tenant, sub.Cluster.ID, n.ID), store.Condition{MustExist: true}, store.Changes{Data: mustJSON(n)}))
	}
	deleting := string(domain.NodeDeleting)
	for _, id := range sub.RetiringNodes {
		ops2 = append(ops2, store.Update(nodeKey(sub.Tenant, sub.Cluster.ID, id), store.Condition{MustExist: true}, store.Changes{Status: &deleting}))
	}
	for _, it := range append(chunks, lists...) {
		ops2 = append(ops2, store.Put(it, store.Condition{}))
	}
	for _, t := range tasks {
		ops2 = append(ops2, store.Put(taskItem(taskKey(sub.Tenant, job.ID, t.ID), t), store.Condition{}))
	}
	for _, t := range deferred {
		if t.Status == domain.TaskReady {
			ready = append(ready, t)
		}
	}
	return ops2, ready, sinks, rbSinks, len(all)
}

// stepOne writes a submission's first transaction: the cluster with its
// lock, the job PENDING with counters, the quota taken, a new cluster's
// name reservation (names.go), the caller's checks, and extra (small items that must exist with the job). It returns
// the cluster as written.
func (e *Engine) stepOne(ctx context.Context, sub Submission, job *jobRecord, counters map[string]int64, extra []store.Op) (domain.Cluster, error) {
	cluster := sub.Cluster
	cluster.TenantID = sub.Tenant
	cluster.ActiveJobID, cluster.LatestJobID = job.ID, job.ID
	if sub.ClusterStatus != "" {
		cluster.Status = sub.ClusterStatus
	}
	cluster.NodeCount += job.AddedNodeCount
	job.RunningStatus = cluster.Status
	now := job.CreatedAt
	// Every job carries its format (format.go) beside its own counters.
	jobCounters := map[string]int64{counterFormat: FormatVersion}
	for k, v := range counters {
		jobCounters[k] = v
	}
	clusterCond := store.Condition{Version: sub.Cluster.Version}
	if sub.Create {
		clusterCond = store.Condition{MustNotExist: true}
	}
	ops := []store.Op{
		store.Put(clusterItem(sub.Tenant, cluster), clusterCond),
		store.Put(store.Item{Key: jobKey(sub.Tenant, cluster.ID, job.ID), Status: string(domain.JobPending), Data: mustJSON(job),
			Counters: jobCounters, Index: jobIndex(job.ID, job.CreatedAt)}, store.Condition{MustNotExist: true}),
	}
	ops = append(ops, extra...)
	quotaAt := -1
	if op := takeQuota(sub.Tenant, sub.TakeClusters, sub.TakeNodes); op != nil {
		quotaAt = len(ops)
		ops = append(ops, *op)
	}
	nameAt := -1
	if sub.Create {
		nameAt = len(ops)
		ops = append(ops, claimName(sub.Tenant, cluster.Name, cluster.ID))
	}
	checksAt := len(ops)
	ops = append(ops, sub.Checks...)
	checksEnd := len(ops)
	ops = append(ops, sub.Hold.Take...)
	holdEnd := len(ops)
	ops = append(ops, jobEvent(sub.Tenant, job.Job, "", now))
	prevStatus := sub.Cluster.Status
	if sub.Create {
		prevStatus = ""
	}
	ops = append(ops, clusterEvent(sub.Tenant, cluster, prevStatus, job.ID, now)...)
	commitAt := -1
	if op := commitOpOf(ctx); op != nil {
		commitAt = len(ops)
		ops = append(ops, op(cluster.ID, job.ID))
	}
	if err := e.store.Transact(ctx, ops); err != nil {
		var terr *store.TransactionError
		if errors.As(err, &terr) {
			switch {
			case commitAt >= 0 && terr.Reasons[commitAt] != nil:
				return domain.Cluster{}, ErrCommitRefused
			case terr.Reasons[0] != nil:
				return domain.Cluster{}, ErrClusterBusy
			case quotaAt >= 0 && terr.Reasons[quotaAt] != nil:
				return domain.Cluster{}, ErrQuota
			case nameAt >= 0 && terr.Reasons[nameAt] != nil:
				return domain.Cluster{}, &NameTakenError{Name: cluster.Name, By: nameHolder(terr.Reasons[nameAt])}
			}
			for i := checksAt; i < checksEnd; i++ {
				if terr.Reasons[i] != nil {
					return domain.Cluster{}, ErrStale
				}
			}
			for i := checksEnd; i < holdEnd; i++ {
				if terr.Reasons[i] != nil {
					return domain.Cluster{}, ErrHoldChanged
				}
			}
		}
		return domain.Cluster{}, fmt.Errorf("submitting job for cluster %s: %w", cluster.ID, err)
	}
	return cluster, nil
}

// start is step 3: the job PENDING -> RUNNING, then its ready roots sent;
// or, when the tenant has pre-start hooks, the job left PENDING for a
// worker to ask them (hooks.go). counters, when set, are set on the job
// (a replanned submission learns its sinks only then): with the start, or
// with the mark of a job that waits for its hooks.
func (e *Engine) start(ctx context.Context, tenant, cluster string, job *jobRecord, ready []domain.Task, counters map[string]int64) error {
	if gated, err := e.gateOnPreStart(ctx, tenant, cluster, job, counters); gated || err != nil {
		return err
	}
	return e.startNow(ctx, tenant, cluster, job, ready, counters)
}

// startNow is start past the pre-start hooks.
func (e *Engine) startNow(ctx context.Context, tenant, cluster string, job *jobRecord, ready []domain.Task, counters map[string]int64) error {
	job.Status, job.StartedAt = domain.JobRunning, e.now()
	running := string(domain.JobRunning)
	// The nodes are all written (step 2): count them for the cluster view
	// in the write that starts the job (nodesummary.go).
	summary, err := e.nodeSummaryPut(ctx, tenant, cluster, job.ID, SummaryStarted)
	if err != nil {
		return err
	}
	err = e.store.Transact(ctx, []store.Op{
		store.Update(jobKey(tenant, cluster, job.ID), store.Condition{StatusIn: []string{string(domain.JobPending)}},
			store.Changes{Status: &running, Data: mustJSON(job), Index: jobIndex(job.ID, job.StartedAt), Set: counters}),
		summary,
		jobEvent(tenant, job.Job, domain.JobPending, job.StartedAt),
	})
	if errors.Is(err, store.ErrConditionFailed) {
		return ErrSubmitAborted
	}
	if err != nil {
		return fmt.Errorf("starting job %s: %w", job.ID, err)
	}
	if err := e.send(ctx, tenant, ready); err != nil {
		// The tasks are READY in the store: the janitor re-sends them.
		e.log.WarnContext(ctx, "sending the first tasks failed; the janitor will resend", "job", job.ID, "error", err)
	}
	return nil
}

// submitWriters is how many of step 2's transactions are in flight at once.
// They touch distinct items of a PENDING job, which nothing acts on, so
// their order does not matter; on DynamoDB a 10,000-node create's ~200
// transactions so take the time of ~25 round trips instead of ~200. The
// embedded store serializes them anyway.
const submitWriters = 8

// transactAll commits every batch, submitWriters at a time, and returns
// the first error (after the batches in flight end). Batches a failure
// leaves unwritten are the janitor's to undo with the PENDING job.
func (e *Engine) transactAll(ctx context.Context, batches [][]store.Op) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg    sync.WaitGroup
		once  sync.Once
		first error
		slots = make(chan struct{}, submitWriters)
	)
	launched := 0
	for _, batch := range batches {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		launched++
		wg.Add(1)
		go func() {
			defer func() { <-slots; wg.Done() }()
			if err := e.store.Transact(ctx, batch); err != nil {
				once.Do(func() { first = err; cancel() })
			}
		}()
	}
	wg.Wait()
	if first == nil && launched < len(batches) {
		first = ctx.Err() // the caller's context ended first
	}
	return first
}

// transactBatches cuts ops into transactions within DynamoDB's limits on
// operations and bytes (every op fits one alone: items are at most 400 KB).
func transactBatches(ops []store.Op) [][]store.Op {
	return transactBatchesOf(ops, store.MaxTransactItems, store.MaxTransactBytes)
}

// transactBatchesOf is transactBatches with at most maxItems ops and
// maxBytes a batch.
func transactBatchesOf(ops []store.Op, maxItems, maxBytes int) [][]store.Op {
	var out [][]store.Op
	start, size := 0, 0
	for i, op := range ops {
		n := store.TransactSize([]store.Op{op})
		if i > start && (i-start == maxItems || size+n > maxBytes) {
			out = append(out, ops[start:i])
			start, size = i, 0
		}
		size += n
	}
	if start < len(ops) {
		out = append(out, ops[start:])
	}
	return out
}

func clusterItem(tenant string, c domain.Cluster) store.Item {
	it := store.Item{Key: clusterKey(tenant, c.ID), Status: string(c.Status), Data: mustJSON(c)}
	if !c.ExpiresAt.IsZero() && !c.Status.Terminal() {
		it.Index = &store.IndexKey{Partition: leasePartition(shardOf(tenant + c.ID)), Sort: store.SortableTime(c.ExpiresAt)}
	}
	return it
}

func jobIndex(job string, at time.Time) *store.IndexKey {
	return &store.IndexKey{Partition: jobPartition(shardOf(job)), Sort: store.SortableTime(at)}
}

// buildTasks turns a plan (and its rollback plan) into stored tasks: each
// knows its dependents and how many dependencies remain; forward tasks with
// none are READY, rollback roots wait behind one extra count that only a
// failure releases.
func buildTasks(sub Submission, jobID string, now time.Time) (tasks []domain.Task, sinks, rbSinks int, roots []string) {
	add := func(p *planner.Plan, rollback bool) {
		dependents := p.Dependents()
		for _, pt := range p.Tasks {
			t := domain.Task{
				ID: pt.ID, TenantID: sub.Tenant, JobID: jobID, ClusterID: sub.Cluster.ID, NodeID: pt.NodeID,
				Service: pt.Service, Action: pt.Action, Join: pt.IsJoin(), Rollback: rollback,
				MaxAttempts: max(pt.MaxAttempts, 1), AttemptsPerRun: max(pt.MaxAttempts, 1), Timeout: pt.Timeout,
				DependsOn: pt.DependsOn, Dependents: dependents[pt.ID], Remaining: len(pt.DependsOn),
				Status: domain.TaskBlocked,
			}
			if sub.Params != nil && !t.Join {
				t.Params = sub.Params(pt)
			}
			switch {
			case rollback && len(pt.DependsOn) == 0:
				t.Remaining = 1 // the gate a failure opens
				roots = append(roots, t.ID)
			case !rollback && len(pt.DependsOn) == 0:
				t.Status, t.ReadyAt = domain.TaskReady, now
			}
			if len(t.Dependents) == 0 {
				if rollback {
					rbSinks++
				} else {
					sinks++
				}
			}
			tasks = append(tasks, t)
		}
	}
	add(sub.Plan, false)
	if sub.Plan.Rollback != nil {
		add(sub.Plan.Rollback, true)
	}
	return tasks, sinks, rbSinks, roots
}
