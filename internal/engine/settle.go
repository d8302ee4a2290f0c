package engine

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/store"
	"github.com/heddle-io/heddle/internal/usage"
)

// maxSettleAttempts bounds the retries of a completion whose dependents kept
// changing under it (other dependencies of theirs completing at once).
const maxSettleAttempts = 20

// succeed records a success: in one transaction the task becomes SUCCEEDED
// (under the version it was claimed with, so a retried completion counts
// once) and every dependent's remaining count drops by one; a dependent whose
// count reaches zero becomes READY in the same write, under its version. It
// reports false when the task was no longer ours (the janitor timed it out).
//
// With cont set (the caller holds the node's message group), a dependent on
// the same node that became ready is claimed for its first attempt in the
// same transaction instead, and returned: the caller runs it next. The
// transaction then also checks that the job still runs, so a pause or a
// failure meanwhile sends it through the queue like any other.
func (e *Engine) succeed(ctx context.Context, ref TaskRef, lt loadedTask, res Result, cont bool) (bool, *loadedTask, error) {
	t := lt.task
	t.Status = domain.TaskSucceeded
	t.Deadline = t.Deadline.UTC()
	e.endAttempt(&t, domain.TaskSucceeded, res)
	key := taskKey(ref.Tenant, ref.Job, ref.Task)
	var ready []domain.Task
	own := store.Update(key, store.Condition{Version: lt.item.Version}, taskChanges(key, t))
	if lt.item.Version == 0 {
		// A join that is a root (chunks.go) has no item yet: its completion
		// creates it, once.
		own = store.Put(taskItem(key, t), store.Condition{MustNotExist: true})
	}
	for attempt := range maxSettleAttempts {
		ops := []store.Op{own}
		ready = ready[:0]
		var next *loadedTask
		jobCheckAt := -1
		// Walk the edges out of t. A join that becomes ready here is done at
		// once, in this same transaction, and its own edges are walked too:
		// a join is bookkeeping, not work worth a trip through the queue.
		pending := map[string]*pendingDep{}
		var order []string
		sinks := 0
		if len(t.Dependents) == 0 {
			sinks++
		}
		edges := slices.Clone(t.Dependents)
		for len(edges) > 0 {
			depID := edges[0]
			edges = edges[1:]
			pd := pending[depID]
			if pd == nil {
				dep, err := e.loadTaskOrDeferred(ctx, TaskRef{Tenant: ref.Tenant, Cluster: ref.Cluster, Job: ref.Job, Task: depID})
				if err != nil {
					return false, nil, fmt.Errorf("reading dependent %s of %s: %w", depID, t.ID, err)
				}
				if dep.task.Status != domain.TaskBlocked || dep.task.Remaining < 1 || (dep.item.Version == 0 && dep.task.Remaining != 1) {
					return false, nil, fmt.Errorf("engine: dependent %s of %s is %s with %d remaining; the graph is broken", depID, t.ID, dep.task.Status, dep.task.Remaining)
				}
				pd = &pendingDep{loaded: dep}
				pending[depID] = pd
				order = append(order, depID)
			}
			pd.decrements++
			d := &pd.loaded.task
			if pd.decrements < d.Remaining {
				continue
			}
			// Its last dependency: it becomes ready now.
			d.ReadyAt = e.now()
			switch {
			case d.Join && len(order)+len(edges)+len(d.Dependents)+inlineReserve <= maxInlineItems:
				d.Status = domain.TaskSucceeded
				edges = append(edges, d.Dependents...)
				if len(d.Dependents) == 0 {
					sinks++
				}
			case cont && next == nil && !d.Join && d.NodeID != "" && d.NodeID == t.NodeID && d.Rollback == t.Rollback &&
				e.fits(ctx, d.Timeout.Std()):
				e.startAttempt(d)
				next = &loadedTask{task: *d, item: pd.loaded.item}
				next.item.Version++
				next.task.Version = next.item.Version
			default:
				d.Status = domain.TaskReady
				ready = append(ready, *d)
			}
		}
		for _, depID := range order {
			pd := pending[depID]
			dk := taskKey(ref.Tenant, ref.Job, depID)
			d := pd.loaded.task
			sub := map[string]int64{counterRemaining: -int64(pd.decrements)}
			if pd.decrements < d.Remaining {
				// Not its last dependency: subtract, on the condition that
				// others remain. Siblings doing the same at once do not
				// conflict; if this turns out last, the retry sees it so.
				ops = append(ops, store.Update(dk, store.Condition{CountersAtLeast: map[string]int64{counterRemaining: int64(pd.decrements) + 1}},
					store.Changes{Add: sub}))
				continue
			}
			d.Remaining = 0
			if pd.loaded.item.Version == 0 {
				// A deferred task (chunks.go): its item starts here.
				ops = append(ops, store.Put(taskItem(dk, d), store.Condition{MustNotExist: true}))
				continue
			}
			ch := taskChanges(dk, d)
			ch.Add = sub
			ops = append(ops, store.Update(dk, store.Condition{Version: pd.loaded.item.Version}, ch))
		}
		if next != nil {
			running := domain.JobRunning
			if t.Rollback {
				running = domain.JobRollingBack
			}
			jobCheckAt = len(ops)
			ops = append(ops, store.Check(jobKey(ref.Tenant, ref.Cluster, ref.Job), store.Condition{StatusIn: []string{string(running)}}))
		}
		jobAdd := map[string]int64{}
		// A node whose machine this task deleted is DELETED from now on,
		// whatever becomes of its job: a job that fails later must not
		// leave it live for the next delete to stop, remove and delete
		// again on a machine that is gone. Its quota stays taken until
		// the job's end gives it back (finish.go), counted here.
		deletes := t.Action == domain.ActionDelete && t.NodeID != ""
		if (res.Node != nil || deletes) && t.NodeID != "" {
			nk := nodeKey(ref.Tenant, ref.Cluster, t.NodeID)
			nit, err := e.store.Get(ctx, nk)
			if err != nil {
				return false, nil, fmt.Errorf("reading node %s to record what %s learned: %w", t.NodeID, t.ID, err)
			}
			var n domain.Node
			if err := decodeInto(nit, &n); err != nil {
				return false, nil, err
			}
			if res.Node != nil {
				res.Node.apply(&n)
			}
			ch := store.Changes{Data: mustJSON(n)}
			if deletes && n.Status != domain.NodeDeleted {
				deleted, err := e.deletedByTask(ctx, ref, t, n)
				if err != nil {
					return false, nil, err
				}
				ch = deleted.changes
				ops = append(ops, deleted.ops...)
				jobAdd[counterNodesDeleted] = 1
			}
			ops = append(ops, store.Update(nk, store.Condition{Version: nit.Version}, ch))
		}
		if sinks > 0 {
			counter := counterSinks
			if t.Rollback {
				counter = counterRollbackSinks
			}
			jobAdd[counter] = -int64(sinks)
		}
		if len(jobAdd) > 0 {
			// One write of the job item: a transaction names an item once.
			if jobCheckAt >= 0 {
				ops[jobCheckAt] = store.Update(jobKey(ref.Tenant, ref.Cluster, ref.Job), store.Condition{StatusIn: ops[jobCheckAt].Cond.StatusIn},
					store.Changes{Add: jobAdd})
			} else {
				ops = append(ops, store.Update(jobKey(ref.Tenant, ref.Cluster, ref.Job), store.Condition{MustExist: true},
					store.Changes{Add: jobAdd}))
			}
		}
		err := e.store.Transact(ctx, ops)
		var terr *store.TransactionError
		if errors.As(err, &terr) {
			if terr.Reasons[0] != nil {
				return false, nil, nil // not ours any more
			}
			if jobCheckAt >= 0 && terr.Reasons[jobCheckAt] != nil {
				cont = false // the job paused or is failing: no continuation
			}
			// A dependent changed: read them again, after a short random
			// wait, so the completions of its other dependencies, likely
			// under way at the same moment, land first.
			sleep(ctx, conflictBackoff(attempt))
			if err := ctx.Err(); err != nil {
				return false, nil, err
			}
			continue
		}
		if err != nil {
			return false, nil, fmt.Errorf("completing %s: %w", t.ID, err)
		}
		var work []domain.Task
		var joins []loadedTask
		for _, d := range ready {
			if !d.Join {
				work = append(work, d)
				continue
			}
			it := pending[d.ID].loaded.item
			it.Version++ // the write above
			d.Remaining, d.Version = 0, it.Version
			joins = append(joins, loadedTask{item: it, task: d})
		}
		if err := e.send(ctx, ref.Tenant, work); err != nil {
			e.log.WarnContext(ctx, "sending ready dependents failed; the janitor will resend", "task", t.ID, "error", err)
		}
		// A join too wide to settle inline settles now, in a transaction of
		// its own: it is bookkeeping, and a trip through the queue would
		// only give its dependents' other dependencies time to complete
		// and cancel it. It is READY in the store, so if this fails (or the
		// worker dies first) the janitor sends it like any ready task.
		for _, j := range joins {
			jref := TaskRef{Tenant: ref.Tenant, Cluster: ref.Cluster, Job: ref.Job, Task: j.task.ID}
			if _, _, err := e.succeed(ctx, jref, j, Result{}, false); err != nil {
				// Through the queue then, as any ready task.
				e.log.WarnContext(ctx, "settling a ready join failed; sending it", "join", j.task.ID, "error", err)
				if err := e.send(ctx, ref.Tenant, []domain.Task{j.task}); err != nil {
					e.log.WarnContext(ctx, "sending a ready join failed; the janitor will resend it", "join", j.task.ID, "error", err)
				}
			}
		}
		if sinks > 0 || (len(ready) == 0 && next == nil) {
			// A sink may end the job; a task that readied nothing may have
			// been the last one running in a job that is failing meanwhile.
			return true, next, e.checkJobEnd(ctx, ref.Tenant, ref.Cluster, ref.Job)
		}
		return true, next, nil
	}
	return false, nil, fmt.Errorf("completing %s: dependents kept changing; the message will come back", t.ID)
}

// conflictBackoff is how long a completion whose transaction was canceled
// waits before it reads its dependents again: a random share of 10 ms per
// attempt so far, at most 100 ms.
func conflictBackoff(attempt int) time.Duration {
	return time.Duration(rand.Int64N(int64(min(attempt+1, 10) * 10 * int(time.Millisecond))))
}

// pendingDep is a dependent reached while completing a task: how many of
// its dependencies this completion accounts for.
type pendingDep struct {
	loaded     loadedTask
	decrements int
}

// inlineReserve keeps room in a completion's transaction for the task itself,
// the job check, the node and the job's counters.
const inlineReserve = 5

// maxInlineItems bounds the transaction a completion grows by settling the
// joins it readies inline. A join with a wide fan-out is settled right after
// the commit, in a transaction of its own: the wider a transaction, the
// likelier another dependency of one of its dependents completes between
// the reads and the commit and cancels it, and a canceled transaction costs
// every write it carried.
const maxInlineItems = 12

// fail records a failed attempt: a retry after a backoff while attempts
// remain, else the task fails and with it the job.
func (e *Engine) fail(ctx context.Context, ref TaskRef, lt loadedTask, res Result) error {
	t := lt.task
	key := taskKey(ref.Tenant, ref.Job, ref.Task)
	e.endAttempt(&t, domain.TaskFailed, res)
	if t.Attempt < t.MaxAttempts {
		t.Status, t.ReadyAt = domain.TaskReady, e.now().Add(e.backoff(t.Attempt))
		// The retry's message is a new one: a send of its own. Without it
		// the message would repeat the id of the last one sent during this
		// attempt (polls moved to a fresh message, the janitor's re-poll:
		// both carry the attempt's number), and the queue would drop it
		// as a duplicate, leaving the retry to the janitor's re-send.
		t.NoteSend(domain.SendAttemptRetry)
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
	msg := ""
	for attempt := 0; ; attempt++ {
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
		msg = fmt.Sprintf("task %s failed after %d attempts: %v", t.ID, t.Attempt, res.Err)
		if job.StatusMessage == "" || t.Rollback {
			job.StatusMessage = msg
		}
		ops := []store.Op{store.Update(key, store.Condition{Version: lt.item.Version}, taskChanges(key, t))}
		// The job's move to FAILING carries its event; a job already
		// FAILING moves nowhere and gets none. The condition names the
		// status read, so the event says what the move was (a job that
		// moved meanwhile is read again).
		narrowed := false
		if !t.Rollback {
			status := string(next)
			cond := from
			var event []store.Op
			if prev := job.Status; prev != next && slices.Contains(from, string(prev)) && attempt < maxSettleAttempts {
				cond, narrowed = []string{string(prev)}, true
				moved := job.Job
				moved.Status = next
				event = append(event, jobEvent(ref.Tenant, moved, prev, e.now()))
			}
			ops = append(ops, store.Update(lj.item.Key, store.Condition{StatusIn: cond},
				store.Changes{Status: &status, Data: mustJSON(job), Index: jobIndex(job.ID, e.now())}))
			ops = append(ops, event...)
		}
		err = e.store.Transact(ctx, ops)
		var terr *store.TransactionError
		if errors.As(err, &terr) {
			if terr.Reasons[0] != nil {
				return nil // not ours any more
			}
			if narrowed {
				continue // the job moved between the read and the write
			}
			// The job already left the states a failure moves: record the task.
			if _, err := e.store.Write(ctx, ops[0]); err != nil && !errors.Is(err, store.ErrConditionFailed) {
				return err
			}
		} else if err != nil {
			return fmt.Errorf("failing %s: %w", t.ID, err)
		}
		break
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
	// Progress counts may bump the job's version between the read and the
	// write; that is no reason to leave the job FAILING for the janitor.
	for range maxSettleAttempts {
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
		if !lj.job.hasRollback() {
			return e.finish(ctx, tenant, cluster, jobID, domain.JobFailing, endFailed, "")
		}
		if err := e.materializeRollback(ctx, tenant, jobID); err != nil {
			return err
		}
		status := string(domain.JobRollingBack)
		moved := lj.job.Job
		moved.Status = domain.JobRollingBack
		err = e.store.Transact(ctx, []store.Op{
			store.Update(lj.item.Key, store.Condition{Version: lj.item.Version},
				store.Changes{Status: &status, Index: jobIndex(jobID, e.now())}),
			jobEvent(tenant, moved, domain.JobFailing, e.now()),
		})
		if errors.Is(err, store.ErrConditionFailed) {
			continue
		}
		if err != nil {
			return err
		}
		lists, err := e.jobListsOf(ctx, tenant, lj.job)
		if err != nil {
			return err
		}
		return e.releaseRollback(ctx, tenant, cluster, jobID, lists.RollbackRoots)
	}
	return fmt.Errorf("settling failing job %s: it kept changing; the janitor will settle it", jobID)
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
		ch := taskChanges(key, t)
		ch.Add = map[string]int64{counterRemaining: -1}
		if _, err := e.store.Write(ctx, store.Update(key, store.Condition{Version: lt.item.Version}, ch)); err != nil {
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

// taskDeletion is what a node's successful delete task writes with its
// completion: the node DELETED, its usage lifetime closed, and the
// cluster's node summary retired (it was counted with the node live; the
// job's end counts it again).
type taskDeletion struct {
	changes store.Changes
	ops     []store.Op
}

func (e *Engine) deletedByTask(ctx context.Context, ref TaskRef, t domain.Task, n domain.Node) (taskDeletion, error) {
	_, c, err := e.loadCluster(ctx, ref.Tenant, ref.Cluster)
	if err != nil {
		return taskDeletion{}, err
	}
	n.Status = domain.NodeDeleted
	status := string(n.Status)
	d := taskDeletion{changes: store.Changes{Data: mustJSON(n), Status: &status}}
	d.ops = append(d.ops, store.Delete(nodeSummaryKey(ref.Tenant, ref.Cluster), store.Condition{}))
	if lt, ok := lifetimeAt(ref.Tenant, c, n, e.now()); ok {
		// Keyed by the task, so it never meets the batches of the job's
		// end, which skips nodes already DELETED.
		d.ops = append(d.ops, store.Put(usage.BatchItem(ref.Job, "task:"+t.ID, []usage.Lifetime{lt}), store.Condition{}))
	}
	return d, nil
}
