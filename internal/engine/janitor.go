package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/events"
	"github.com/heddle-io/heddle/internal/metrics"
	"github.com/heddle-io/heddle/internal/store"
)

// JanitorReport counts what one janitor pass did.
type JanitorReport struct {
	TimedOut      int // running attempts failed past their deadline
	Resent        int // ready tasks whose message was taken for lost
	JobsMovedOn   int // unfinished jobs looked at and moved on where due
	Undone        int // submissions that never finished, undone
	LeasesExpired int // clusters past their lease handed to ExpireLease
	IndexCleared  int // ready tasks of jobs that will not run them
	Stuck         int // jobs failed because they could never end (see failIfStuck)
	Verifications int // due verifications handed to Verify
	DriftChecks   int // due drift checks handed to Drift
	Repairs       int // due repairs handed to Repair
	EventsExpired int // events (and webhook delivery records) past their retention deleted
	// HookDeliveries counts webhook deliveries made from new events, and
	// HooksResent the delivery messages sent again.
	HookDeliveries, HooksResent int
	// PreStartsResent counts the messages asking a job's pre-start hooks
	// sent again.
	PreStartsResent int
}

// Pass is the report as metrics name its figures.
func (r JanitorReport) Pass() metrics.JanitorPass {
	return metrics.JanitorPass{"timed_out": r.TimedOut, "resent": r.Resent, "jobs_moved_on": r.JobsMovedOn, "undone": r.Undone,
		"leases_expired": r.LeasesExpired, "index_cleared": r.IndexCleared, "stuck": r.Stuck,
		"verifications": r.Verifications, "drift_checks": r.DriftChecks, "repairs": r.Repairs, "events_expired": r.EventsExpired,
		"hook_deliveries": r.HookDeliveries, "hooks_resent": r.HooksResent, "prestarts_resent": r.PreStartsResent}
}

// RunJanitor makes one pass over every tenant: it fails running attempts past
// their deadline (then retries or fails them as any failure), re-sends ready
// tasks nobody claimed within ResendAfter and the question of jobs whose
// pre-start hooks were not answered (preStartResendAfter), undoes
// submissions stuck PENDING past SubmitTimeout, moves on jobs whose last
// step was lost, and fails jobs
// that are stuck (see failIfStuck; paused jobs are left alone). Every
// action is a conditional write on what it read, so two janitors at once,
// or a janitor racing a worker, do no harm.
func (e *Engine) RunJanitor(ctx context.Context) (JanitorReport, error) {
	var r JanitorReport
	var errs []error
	now := e.now()
	began := time.Now()
	defer func() { e.cfg.Observer.Janitor(r.Pass(), time.Since(began)) }()
	for shard := range indexShards {
		if err := e.eachIndexed(ctx, runningPartition(shard), store.SortableTime(now), func(it store.Item) error {
			return e.timeOut(ctx, it, &r)
		}); err != nil {
			errs = append(errs, err)
		}
		if err := e.eachIndexed(ctx, readyPartition(shard), store.SortableTime(now.Add(-e.cfg.ResendAfter)), func(it store.Item) error {
			return e.resendLost(ctx, it, &r)
		}); err != nil {
			errs = append(errs, err)
		}
		if err := e.eachIndexed(ctx, jobPartition(shard), store.SortableTime(now), func(it store.Item) error {
			return e.moveJobOn(ctx, it, &r)
		}); err != nil {
			errs = append(errs, err)
		}
		if err := e.eachIndexed(ctx, leasePartition(shard), store.SortableTime(now), func(it store.Item) error {
			return e.expireLease(ctx, it, &r)
		}); err != nil {
			errs = append(errs, err)
		}
		if err := e.eachIndexed(ctx, verifyPartition(shard), store.SortableTime(now), func(it store.Item) error {
			return e.startDueVerification(ctx, it, &r)
		}); err != nil {
			errs = append(errs, err)
		}
		if err := e.eachIndexed(ctx, driftPartition(shard), store.SortableTime(now), func(it store.Item) error {
			return e.startDueDrift(ctx, it, &r)
		}); err != nil {
			errs = append(errs, err)
		}
		if err := e.eachIndexed(ctx, repairPartition(shard), store.SortableTime(now), func(it store.Item) error {
			return e.startDueRepair(ctx, it, &r)
		}); err != nil {
			errs = append(errs, err)
		}
	}
	if h := e.hooksOrNil(); h != nil {
		n, err := h.Dispatch(ctx)
		r.HookDeliveries += n
		if err != nil {
			errs = append(errs, err)
		}
		n, err = h.ResendLost(ctx)
		r.HooksResent += n
		if err != nil {
			errs = append(errs, err)
		}
	}
	n, err := events.Expire(ctx, e.store, now)
	r.EventsExpired += n
	if err != nil {
		errs = append(errs, err)
	}
	return r, errors.Join(errs...)
}

func (e *Engine) eachIndexed(ctx context.Context, partition, before string, fn func(store.Item) error) error {
	cursor := ""
	var errs []error
	for {
		page, err := e.store.QueryIndex(ctx, partition, store.IndexQuery{SortBefore: before, Cursor: cursor, Limit: store.MaxPageSize})
		if err != nil {
			return err
		}
		for _, it := range page.Items {
			if err := fn(it); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", it.Key, err))
			}
		}
		if page.Next == "" {
			return errors.Join(errs...)
		}
		cursor = page.Next
	}
}

// refOf rebuilds a task's reference from its item: the index answers with
// full (unscoped) keys.
func refOf(it store.Item, t domain.Task) (TaskRef, bool) {
	tenant, rest, ok := store.TenantOf(it.PK)
	job, isTask := strings.CutPrefix(rest, "TASKS#")
	if !ok || !isTask {
		return TaskRef{}, false
	}
	return TaskRef{Tenant: tenant, Cluster: t.ClusterID, Job: job, Task: it.SK}, true
}

func (e *Engine) timeOut(ctx context.Context, indexed store.Item, r *JanitorReport) error {
	// The index may lag; read the item itself before acting.
	it, err := e.store.Get(ctx, indexed.Key)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if isNewer(e.understands(it, "task "+it.Key.String())) {
		return nil // a newer release's: its janitor looks after it
	}
	var t domain.Task
	if err := decodeInto(it, &t); err != nil {
		return err
	}
	if t.Status != domain.TaskRunning || !t.Deadline.Before(e.now()) {
		return nil
	}
	ref, ok := refOf(it, t)
	if !ok {
		return nil
	}
	t.Version = it.Version
	if p, parked := parkedOf(t); parked && e.lastDeadline(t).After(e.now()) {
		// A parked attempt whose poll never came: poll it again.
		return e.repoll(ctx, ref, loadedTask{item: it, task: t}, p, r)
	}
	r.TimedOut++
	return e.fail(ctx, ref, loadedTask{item: it, task: t}, Result{ExitCode: -1,
		Err: fmt.Errorf("timed out: the worker stopped renewing the attempt before it ended (worker lost, or the action overran its %s timeout)", t.Timeout)})
}

// ResendReady sends every READY task again, however recently it became
// ready, the unclaimed roots of every running job and the question of
// every job waiting for its pre-start hooks, and returns how many it sent:
// what a process whose in-process queue was lost with its last run does at
// start, rather than wait ResendAfter.
func (e *Engine) ResendReady(ctx context.Context) (int, error) {
	var r JanitorReport
	var errs []error
	now := e.now()
	// The whole partitions (SortBefore ""): an item indexed in this very
	// millisecond counts too.
	for shard := range indexShards {
		if err := e.eachIndexed(ctx, readyPartition(shard), "", func(it store.Item) error {
			return e.resend(ctx, it, now, &r)
		}); err != nil {
			errs = append(errs, err)
		}
		if err := e.eachIndexed(ctx, jobPartition(shard), "", func(it store.Item) error {
			if err := e.resendPreStartOf(ctx, it, &r); err != nil {
				return err
			}
			return e.resendRootsOf(ctx, it, &r)
		}); err != nil {
			errs = append(errs, err)
		}
	}
	return r.Resent, errors.Join(errs...)
}

// resendPreStartOf asks again the pre-start hooks of an indexed job that
// waits for them; the question starts over, as the process that lost it
// was not running meanwhile.
func (e *Engine) resendPreStartOf(ctx context.Context, indexed store.Item, r *JanitorReport) error {
	tenant, rest, ok := store.TenantOf(indexed.PK)
	cluster, isJob := strings.CutPrefix(rest, "JOBS#")
	if !ok || !isJob || indexed.Status != string(domain.JobPending) {
		return nil
	}
	lj, err := e.loadJob(ctx, tenant, cluster, indexed.SK)
	if errors.Is(err, store.ErrNotFound) || isNewer(err) {
		return nil // gone, or a newer release's job: it asks
	}
	if err != nil {
		return err
	}
	sent, err := e.resendPreStart(ctx, tenant, cluster, lj, true)
	if sent {
		r.Resent++
	}
	return err
}

// resendRootsOf sends the unclaimed roots of an indexed job that runs.
func (e *Engine) resendRootsOf(ctx context.Context, indexed store.Item, r *JanitorReport) error {
	tenant, rest, ok := store.TenantOf(indexed.PK)
	_, isJob := strings.CutPrefix(rest, "JOBS#")
	if !ok || !isJob || indexed.Status != string(domain.JobRunning) {
		return nil
	}
	seen := map[string]bool{}
	if err := e.eachTask(ctx, tenant, indexed.SK, func(_ store.Item, t domain.Task) (bool, error) {
		seen[t.ID] = true
		return true, nil
	}); err != nil {
		return err
	}
	n, err := e.sendUnclaimedRoots(ctx, tenant, indexed.SK, func(id string) bool { return seen[id] })
	r.Resent += n
	return err
}

func (e *Engine) resendLost(ctx context.Context, indexed store.Item, r *JanitorReport) error {
	return e.resend(ctx, indexed, e.now().Add(-e.cfg.ResendAfter), r)
}

// resend sends a READY task that became ready before readyBefore again.
func (e *Engine) resend(ctx context.Context, indexed store.Item, readyBefore time.Time, r *JanitorReport) error {
	it, err := e.store.Get(ctx, indexed.Key)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if isNewer(e.understands(it, "task "+it.Key.String())) {
		return nil // a newer release's: its janitor looks after it
	}
	var t domain.Task
	if err := decodeInto(it, &t); err != nil {
		return err
	}
	ref, ok := refOf(it, t)
	if !ok || t.Status != domain.TaskReady || t.ReadyAt.After(readyBefore) {
		return nil
	}
	lj, err := e.loadJob(ctx, ref.Tenant, ref.Cluster, ref.Job)
	if isNewer(err) {
		return nil // a newer release's job: its janitor resends
	}
	if err != nil {
		return err
	}
	switch accepts(lj.job.Status, t) {
	case acceptLater:
		return nil
	case acceptNever:
		// The job will not run it (paused jobs re-send on resume): drop it
		// from the index so the janitor stops looking.
		r.IndexCleared++
		_, err := e.store.Write(ctx, store.Update(it.Key, store.Condition{Version: it.Version}, store.Changes{ClearIndex: true}))
		if errors.Is(err, store.ErrConditionFailed) {
			return nil
		}
		return err
	}
	t.Sends++
	t.ReadyAt = e.now()
	if _, err := e.store.Write(ctx, store.Update(it.Key, store.Condition{Version: it.Version}, taskChanges(it.Key, t))); err != nil {
		if errors.Is(err, store.ErrConditionFailed) {
			return nil // claimed meanwhile
		}
		return err
	}
	r.Resent++
	return e.send(ctx, ref.Tenant, []domain.Task{t})
}

// expireLease hands a cluster whose lease ran out to ExpireLease, unless a
// job holds it (the next pass looks again once the job is done). A delete
// job that fails leaves the cluster FAILED and out of the lease index.
func (e *Engine) expireLease(ctx context.Context, indexed store.Item, r *JanitorReport) error {
	tenant, rest, ok := store.TenantOf(indexed.PK)
	if !ok || rest != "CLUSTERS" {
		return nil
	}
	_, c, err := e.loadCluster(ctx, tenant, indexed.SK)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if c.ActiveJobID != "" || c.Status.Terminal() || c.Status == domain.ClusterFailed || c.ExpiresAt.IsZero() || c.ExpiresAt.After(e.now()) {
		return nil
	}
	r.LeasesExpired++
	if e.cfg.ExpireLease == nil {
		return nil
	}
	if err := e.cfg.ExpireLease(ctx, tenant, c); err != nil && !errors.Is(err, ErrClusterBusy) {
		return fmt.Errorf("expiring the lease of cluster %s: %w", c.ID, err)
	}
	return nil
}

func (e *Engine) moveJobOn(ctx context.Context, indexed store.Item, r *JanitorReport) error {
	tenant, rest, ok := store.TenantOf(indexed.PK)
	cluster, isJob := strings.CutPrefix(rest, "JOBS#")
	if !ok || !isJob {
		return nil
	}
	lj, err := e.loadJob(ctx, tenant, cluster, indexed.SK)
	if errors.Is(err, store.ErrNotFound) || isNewer(err) {
		return nil // gone, or a newer release's job: its janitor moves it on
	}
	if err != nil {
		return err
	}
	switch lj.job.Status {
	case domain.JobPending:
		if lj.job.StagedChunks > 0 && lj.job.submittedAt().Add(stagedSubmitTimeout).After(e.now()) {
			err := e.ContinueSubmission(ctx, tenant, cluster, lj.job.ID)
			if !errors.Is(err, errStagingIncomplete) {
				r.JobsMovedOn++
				return err
			}
		}
		since := lj.job.submittedAt()
		if lj.job.AwaitingPreStart {
			since = lj.job.preStartAskedAt()
		}
		if since.Add(e.cfg.SubmitTimeout).Before(e.now()) {
			r.Undone++
			return e.undoSubmission(ctx, tenant, cluster, lj)
		}
		if lj.job.AwaitingPreStart && lj.job.preStartSentAt().Add(e.preStartResendAfter()).Before(e.now()) {
			// Its message is lost (a restarted local server's queue, a
			// failed send, a worker of an older release) or waits behind
			// others: a second one costs at most a second question.
			sent, err := e.resendPreStart(ctx, tenant, cluster, lj, false)
			if sent {
				r.PreStartsResent++
			}
			return err
		}
		return nil
	case domain.JobRollingBack:
		r.JobsMovedOn++
		lists, err := e.jobListsOf(ctx, tenant, lj.job)
		if err != nil {
			return err
		}
		if err := e.releaseRollback(ctx, tenant, cluster, lj.job.ID, lists.RollbackRoots); err != nil {
			return err
		}
	case domain.JobRunning, domain.JobFailing:
		r.JobsMovedOn++
	default:
		// PAUSED: a person paused it and resumes or aborts it; the janitor
		// never fails a paused job, however long it waits.
		return nil
	}
	if err := e.checkJobEnd(ctx, tenant, cluster, lj.job.ID); err != nil {
		return err
	}
	return e.failIfStuck(ctx, tenant, cluster, lj.job.ID, lj.job.Status, r)
}

// undoSubmission ends a job whose submission never finished: nothing of it
// ran (its tasks are only sent once it is RUNNING), so it gives back the lock
// and quota and leaves the cluster as it was (a cluster it was creating ends
// TERMINATED). The first write is conditional on PENDING, so a submitter that
// was only slow then fails its own start instead of racing this.
func (e *Engine) undoSubmission(ctx context.Context, tenant, cluster string, lj loadedJob) error {
	msg := "the submission did not finish (the server stopped while writing the job); nothing ran, try again"
	if lj.job.AwaitingPreStart {
		msg = "the pre-start hooks were not asked in time (no worker took the request); nothing ran, try again"
	}
	return e.failPending(ctx, tenant, cluster, lj, msg)
}

// failPending ends a PENDING job as FAILED with msg: nothing of it ran, so
// the lock, quota and holds go back and the cluster is as it was (one being
// created ends TERMINATED). Its new nodes become DELETED first and the
// nodes it changed are put back (nodeundo.go), each write checked on the
// job still PENDING: a node left PLANNED would stay in the
// cluster's layout uncounted, and a later delete or shrink would give its
// quota back a second time. The job is marked Withdrawn in the transaction
// that gives the quota back, so a retry knows to take it again.
func (e *Engine) failPending(ctx context.Context, tenant, cluster string, lj loadedJob, msg string) error {
	if lj.job.AddedNodeCount > 0 {
		err := e.markNewNodes(ctx, tenant, cluster, lj.job, domain.NodePlanned, domain.NodeDeleted)
		if errors.Is(err, errJobMoved) {
			return nil // it started after all, or another janitor was first
		}
		if err != nil {
			return err
		}
	}
	// The nodes it changed are put back the same way (nodeundo.go).
	if err := e.restoreNodes(ctx, tenant, cluster, lj.job.ID, true); err != nil {
		if errors.Is(err, errJobMoved) {
			return nil
		}
		return err
	}
	job := lj.job
	job.Status, job.EndedAt = domain.JobFailed, e.now()
	job.StatusMessage = msg
	job.Withdrawn = true
	failed := string(domain.JobFailed)
	ops := []store.Op{store.Update(lj.item.Key, store.Condition{Version: lj.item.Version, StatusIn: []string{string(domain.JobPending)}},
		store.Changes{Status: &failed, Data: mustJSON(job), ClearIndex: true})}
	cit, c, err := e.loadCluster(ctx, tenant, cluster)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return err
	}
	ops = append(ops, jobEvent(tenant, job.Job, domain.JobPending, job.EndedAt))
	if err == nil && c.ActiveJobID == job.ID {
		prev := c.Status
		c.ActiveJobID = ""
		c.Status, c.StatusMessage = job.PrevStatus, job.StatusMessage
		c.NodeCount -= job.AddedNodeCount
		if job.Created {
			c.Status, c.NodeCount = domain.ClusterTerminated, 0
			release, err := e.releaseName(ctx, tenant, c)
			if err != nil {
				return err
			}
			ops = append(ops, release...)
		}
		next := clusterItem(tenant, c)
		ops = append(ops, store.Update(cit.Key, store.Condition{Version: cit.Version},
			store.Changes{Data: next.Data, Status: &next.Status, Index: next.Index, ClearIndex: next.Index == nil}))
		ops = append(ops, clusterEvent(tenant, c, prev, job.ID, job.EndedAt)...)
	}
	if job.TakenClusters != 0 || job.TakenNodes != 0 {
		ops = append(ops, store.Update(tenantKey(tenant), store.Condition{MustExist: true},
			store.Changes{Add: map[string]int64{"freeClusters": int64(job.TakenClusters), "freeNodes": int64(job.TakenNodes)}}))
	}
	ops = append(ops, releaseHolds(job.Holds)...)
	err = e.store.Transact(ctx, ops)
	if errors.Is(err, store.ErrConditionFailed) {
		return nil // it started after all, or another janitor was first
	}
	return err
}
