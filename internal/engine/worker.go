package engine

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"time"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/metrics"
	"github.com/heddle-io/heddle/internal/queue"
	"github.com/heddle-io/heddle/internal/store"
)

// Disposition says what to do with a delivery once Handle returns.
type Disposition struct {
	// Delay, when positive, asks for the message to come back after it (keep
	// it, extend its visibility); otherwise acknowledge it.
	Delay time.Duration
	// Done counts the work tasks of Job that succeeded while handling the
	// message (the task itself and the continuations it ran); the caller
	// adds them to the job's progress (in batches, see AddProgress).
	Job  TaskRef
	Done int
}

// maxAttemptHistory bounds the attempts a task item keeps (see output.go for
// the bounds on each attempt's output).
const maxAttemptHistory = 10

// Handle processes one delivered message: it re-reads the task and its job,
// claims the task if it is still READY for a running job, runs it, and
// records the result. A duplicate, stale or lost claim is acknowledged and
// does nothing. An error means the store could not be reached: leave the
// message, it comes back after its visibility timeout.
func (e *Engine) Handle(ctx context.Context, tenant string, d queue.Delivery) (Disposition, error) {
	return e.handle(ctx, tenant, d, false)
}

// handle is Handle; laterInBatch says the message follows the first of its
// batch, so the worker has already spent some of its deadline (see process).
func (e *Engine) handle(ctx context.Context, tenant string, d queue.Delivery, laterInBatch bool) (Disposition, error) {
	ref, err := ParseTaskRef(tenant, d.TaskID)
	if err != nil {
		e.log.WarnContext(ctx, "dropping a malformed message", "tenant", tenant, "body", d.TaskID)
		return Disposition{}, nil
	}
	if f := messageFormat(d.Format); e.newer(f) {
		return e.handBack(tenant, "message "+d.TaskID, f), nil
	}
	switch ref.Cluster {
	case hookCluster:
		return e.deliverHook(ctx, ref)
	case preStartCluster:
		return e.askPreStart(ctx, tenant, ref.Job, ref.Task)
	}
	lt, err := e.loadTaskOrDeferred(ctx, ref)
	if errors.Is(err, store.ErrNotFound) {
		return Disposition{}, nil
	}
	var nf *newerFormatError
	if errors.As(err, &nf) {
		return e.handBack(tenant, nf.what, nf.format), nil
	}
	if err != nil {
		return Disposition{}, err
	}
	if lt.task.Status == domain.TaskRunning {
		return e.poll(ctx, ref, lt, d) // a parked attempt's poll, or a duplicate
	}
	if lt.task.Status != domain.TaskReady {
		return Disposition{}, nil // done, or not ready yet
	}
	lj, err := e.loadJob(ctx, tenant, ref.Cluster, ref.Job)
	if errors.Is(err, store.ErrNotFound) {
		return Disposition{}, nil
	}
	if errors.As(err, &nf) {
		return e.handBack(tenant, nf.what, nf.format), nil
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
		if poisoned, err := e.startDelivery(ctx, ref, lt, d); poisoned || err != nil {
			return Disposition{}, err
		}
		_, _, err := e.succeed(ctx, ref, lt, Result{}, false)
		return Disposition{}, err
	}
	if laterInBatch && !e.fits(ctx, lt.task.Timeout.Std()) {
		// A worker with a deadline (a Lambda invocation) that has already
		// spent some of it claims only what it can finish before it: cut off
		// mid-action, the attempt would wait for its lease and run again.
		// The message comes back at once to a fresh invocation. The first
		// message of a batch is always taken: a fresh invocation could do no
		// better (actions longer than a Lambda belong on the long-task queue).
		return Disposition{Delay: handOff}, nil
	}
	// Everything above leaves the task READY and the message unmarked;
	// from here the delivery is the task's own work, and one that dies
	// before its claim lands is counted against the message (see
	// deadletter.go).
	if poisoned, err := e.startDelivery(ctx, ref, lt, d); poisoned || err != nil {
		return Disposition{}, err
	}
	claimed, err := e.claim(ctx, ref, lt)
	if errors.Is(err, store.ErrConditionFailed) {
		return Disposition{}, nil // another worker won the claim
	}
	if err != nil {
		return Disposition{}, err
	}
	return e.runFrom(ctx, ref, claimed, d, "")
}

// handOff keeps a message for another worker: a delay that rounds to "visible
// again at once" (SQS counts visibility in whole seconds), yet marks the
// message kept, so a Lambda reports it rather than letting it be deleted.
const handOff = time.Millisecond

// fitsBefore reports whether an action of the given timeout can run to its
// end before ctx's deadline (always, for a worker without one).
func fitsBefore(ctx context.Context, timeout time.Duration) bool {
	dl, ok := ctx.Deadline()
	return !ok || time.Until(dl) > timeout
}

// fits reports whether a worker with ctx's deadline should claim an action
// of the given timeout now rather than leave it to a fresh invocation: it
// fits before the deadline, or no invocation could fit it (its timeout is
// at least InvocationTimeout) and at least half an invocation is left.
//
// Without the second rule, a worker Lambda whose timeout is shorter than
// its actions' (a 60 s function, 10-minute actions it runs detached, so it
// only starts them) claimed only the first message of every batch and
// handed the others off: each hand-off is a receive, and a message handed
// off maxReceiveCount times went to the dead-letter queue, which stalled
// its node, often the whole job behind a barrier, until the janitor sent
// the task again ResendAfter later. A fresh invocation has no more room
// for such an action than this one while this one has half of its own.
func (e *Engine) fits(ctx context.Context, timeout time.Duration) bool {
	if fitsBefore(ctx, timeout) {
		return true
	}
	whole := e.cfg.InvocationTimeout
	return whole > 0 && timeout >= whole && fitsBefore(ctx, whole/2)
}

// runFrom runs a claimed attempt (a poll when poll is set) and the
// continuations it claims, and says what to do with the delivery.
func (e *Engine) runFrom(ctx context.Context, ref TaskRef, claimed loadedTask, d queue.Delivery, poll string) (Disposition, error) {
	disp := Disposition{Job: TaskRef{Tenant: ref.Tenant, Cluster: ref.Cluster, Job: ref.Job}}
	// While this message is in flight, its group (the node) gets no other
	// message; so the next task of the same node, if this one readied it,
	// runs here at once (a continuation) rather than through the queue.
	for {
		next, delay, err := e.runClaimed(ctx, ref, claimed, d, poll)
		poll = ""
		if err != nil {
			return disp, err
		}
		if delay > 0 {
			disp.Delay = delay // parked: the message comes back for the next poll
			return disp, nil
		}
		if next == nil {
			return disp, nil
		}
		disp.Done++
		if next.item.Key.PK == "" {
			return disp, nil
		}
		ref.Task, claimed = next.task.ID, *next
	}
}

// runClaimed runs one claimed attempt (or polls it) and records its result.
// On success it returns a non-nil task: empty, or the continuation it
// claimed. A positive delay means the attempt is parked (its executor asked
// to be polled) and the delivery is to come back after it.
func (e *Engine) runClaimed(ctx context.Context, ref TaskRef, claimed loadedTask, d queue.Delivery, poll string) (*loadedTask, time.Duration, error) {
	tenant := ref.Tenant
	if n := len(claimed.task.Attempts); poll == "" && n > 0 && e.now().Sub(claimed.task.Attempts[n-1].StartedAt) > e.cfg.TaskLease/3 {
		// Claimed a while ago with no heartbeat yet (a continuation whose
		// claim was followed by settling the joins that completion readied):
		// renew the lease first, so an attempt the janitor took meanwhile
		// is never started.
		renewed, err := e.extendLease(ctx, ref, claimed)
		if errors.Is(err, store.ErrConditionFailed) {
			return nil, 0, nil
		}
		if err != nil {
			return nil, 0, err
		}
		claimed = renewed
	}
	lt := claimed
	var err error
	in := Attempt{Tenant: tenant, Task: forExecutor(claimed.task), Poll: poll, Expect: e.est.expect(tenant, claimed.task)}
	if claimed.task.NodeID != "" {
		in.Node, err = e.loadNode(ctx, tenant, ref.Cluster, claimed.task.NodeID)
		if err != nil {
			// The attempt is claimed: fail it like any other, so it retries.
			return nil, 0, e.fail(ctx, ref, claimed, Result{ExitCode: -1, Err: fmt.Errorf("reading node %s: %w", claimed.task.NodeID, err)})
		}
	}
	timeout := lt.task.Timeout.Std()
	if poll != "" {
		// A poll gets what is left of the action's timeout (maybe nothing:
		// the executor then stops what it started).
		timeout = e.runEnd(lt.task).Sub(e.now())
	}
	runCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel() // a panic below must not leave the heartbeat renewing the attempt
	hb := e.startHeartbeat(runCtx, ref, claimed, d)
	began := time.Now()
	res := e.execute(runCtx, in)
	took := time.Since(began)
	timedOut := errors.Is(runCtx.Err(), context.DeadlineExceeded) && ctx.Err() == nil
	cancel()
	claimed, lost := hb.stop()
	if timedOut {
		// Whatever the executor answered, the action ran past its timeout.
		res.Err = fmt.Errorf("timed out after %s", lt.task.Timeout)
	}
	if lt.task.Action == domain.ActionCheck && (res.PollAfter == 0 || timedOut) {
		res = checkResult(res, timedOut)
	}
	if lt.task.Action == domain.ActionProbe && (res.PollAfter == 0 || timedOut) {
		res = probeResult(res)
	}
	if ctx.Err() == nil && !lost {
		e.cfg.Observer.Attempt(tenant, string(lt.task.Action), attemptOutcome(lt.task, res), took)
	}
	if ctx.Err() != nil {
		// The worker is stopping: leave the attempt RUNNING. Its deadline
		// passes and the janitor fails and retries it (a killed worker looks
		// the same).
		return nil, 0, ctx.Err()
	}
	if lost {
		return nil, 0, nil // the janitor failed this attempt meanwhile
	}
	if res.Err != nil {
		return nil, 0, e.fail(ctx, ref, claimed, res)
	}
	if res.PollAfter > 0 {
		delay, err := e.park(ctx, ref, claimed, res, d)
		return nil, delay, err
	}
	// What the whole attempt took, polls included: the next look at
	// this action on this cluster comes when it is likely to have ended.
	ended := e.now()
	if p, ok := parkedOf(claimed.task); ok && !p.Seen.IsZero() && p.Seen.Before(ended) {
		ended = p.Seen.Add(ended.Sub(p.Seen) / 2)
	}
	e.est.learn(tenant, lt.task, ended.Sub(e.attemptStart(claimed.task)))
	ok, next, err := e.succeed(ctx, ref, claimed, res, true)
	if err != nil || !ok {
		return nil, 0, err
	}
	if next == nil {
		next = &loadedTask{}
	}
	return next, 0, nil
}

// execute runs the attempt on the executor; a panic in it ends the
// attempt as failed, with the panic as its error, so it is retried and,
// on its last attempt, fails the job saying why.
func (e *Engine) execute(ctx context.Context, in Attempt) (res Result) {
	defer func() {
		if p := recover(); p != nil {
			e.log.ErrorContext(ctx, "an executor panicked", "tenant", in.Tenant, "task", in.Task.ID, "panic", p, "stack", string(debug.Stack()))
			res = Result{ExitCode: -1, Err: fmt.Errorf("the executor panicked: %v", p)}
		}
	}()
	return e.exec.Execute(ctx, in)
}

// heartbeat keeps a running attempt alive: it extends the task's deadline
// (a conditional write on the version it holds, so it stops at once if the
// janitor took the attempt) and the message's visibility.
type heartbeat struct {
	mu     sync.Mutex
	task   loadedTask
	lost   bool
	cancel context.CancelFunc
	done   chan struct{}
}

func (e *Engine) startHeartbeat(ctx context.Context, ref TaskRef, lt loadedTask, d queue.Delivery) *heartbeat {
	ctx, cancel := context.WithCancel(ctx)
	hb := &heartbeat{task: lt, cancel: cancel, done: make(chan struct{})}
	every := e.cfg.TaskLease / 3
	if d.Receipt != "" {
		every = min(every, e.cfg.Visibility/2)
	}
	go func() {
		defer close(hb.done)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			if d.Receipt != "" {
				if err := e.queue.Extend(ctx, ref.Tenant, d.Receipt, e.cfg.Visibility); err != nil && ctx.Err() == nil {
					e.log.WarnContext(ctx, "extending a message's visibility failed", "task", d.TaskID, "error", err)
				}
			}
			hb.mu.Lock()
			cur := hb.task
			hb.mu.Unlock()
			next, err := e.extendLease(ctx, ref, cur)
			hb.mu.Lock()
			switch {
			case errors.Is(err, store.ErrConditionFailed):
				hb.lost = true
			case err == nil:
				hb.task = next
			}
			hb.mu.Unlock()
			if err != nil && ctx.Err() == nil && !errors.Is(err, store.ErrConditionFailed) {
				e.log.WarnContext(ctx, "extending a task's deadline failed", "task", ref.Task, "error", err)
			}
		}
	}()
	return hb
}

// stop ends the heartbeat and returns the task as last written.
func (hb *heartbeat) stop() (loadedTask, bool) {
	hb.cancel()
	<-hb.done
	hb.mu.Lock()
	defer hb.mu.Unlock()
	return hb.task, hb.lost
}

// extendLease moves a running attempt's deadline to now+TaskLease, never
// past the attempt's last deadline.
func (e *Engine) extendLease(ctx context.Context, ref TaskRef, lt loadedTask) (loadedTask, error) {
	t := lt.task
	t.Deadline = e.attemptDeadline(t)
	key := taskKey(ref.Tenant, ref.Job, ref.Task)
	it, err := e.store.Write(ctx, store.Update(key, store.Condition{Version: lt.item.Version, StatusIn: []string{string(domain.TaskRunning)}}, taskChanges(key, t)))
	if err != nil {
		return lt, err
	}
	t.Version = it.Version
	return loadedTask{item: it, task: t}, nil
}

// attemptDeadline is when the janitor may take a running attempt for lost:
// a lease from now, capped by the action's timeout plus grace.
func (e *Engine) attemptDeadline(t domain.Task) time.Time {
	last := e.lastDeadline(t)
	lease := e.now().Add(e.cfg.TaskLease)
	if lease.Before(last) {
		return lease
	}
	return last
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
	clearParked(&t)
	t.Status = domain.TaskRunning
	t.Attempt++
	t.Attempts = append(t.Attempts, domain.TaskAttempt{Attempt: t.Attempt, Worker: e.cfg.WorkerID, StartedAt: now, Status: domain.TaskRunning})
	t.Deadline = e.attemptDeadline(t)
	compactAttempts(&t)
	key := taskKey(ref.Tenant, ref.Job, ref.Task)
	op := store.Update(key, store.Condition{Version: lt.item.Version}, taskChanges(key, t))
	if lt.item.Version == 0 {
		// A deferred root (chunks.go): the claim creates its item.
		op = store.Put(taskItem(key, t), store.Condition{MustNotExist: true})
	}
	it, err := e.store.Write(ctx, op)
	if err != nil {
		return loadedTask{}, err
	}
	t.Version = it.Version
	return loadedTask{item: it, task: t}, nil
}

// startAttempt makes t RUNNING for its next attempt, by this worker.
func (e *Engine) startAttempt(t *domain.Task) {
	clearParked(t)
	t.Status = domain.TaskRunning
	t.Attempt++
	t.Attempts = append(t.Attempts, domain.TaskAttempt{Attempt: t.Attempt, Worker: e.cfg.WorkerID, StartedAt: e.now(), Status: domain.TaskRunning})
	compactAttempts(t)
	t.Deadline = e.attemptDeadline(*t)
}

func (e *Engine) endAttempt(t *domain.Task, status domain.TaskStatus, res Result) {
	clearParked(t)
	if len(t.Attempts) == 0 {
		return
	}
	a := &t.Attempts[len(t.Attempts)-1]
	a.EndedAt, a.Status, a.ExitCode = e.now(), status, res.ExitCode
	a.Stdout, a.Stderr = boundTail(res.Stdout, maxTailBytes), boundTail(res.Stderr, maxTailBytes)
	if res.Err != nil {
		a.Error = boundHead(res.Err.Error(), maxErrorBytes)
	}
	a.Drift, a.Digest = res.Drift, res.Digest
	if res.Health != "" {
		a.Health = res.Health
	}
	if (res.Health != "" || res.Drift != "") && res.Note != "" {
		a.Error = boundHead(res.Note, maxErrorBytes)
	}
	compactAttempts(t)
}

// attemptOutcome names how an attempt of t that answered res ends, for
// metrics.
func attemptOutcome(t domain.Task, res Result) string {
	switch {
	case res.Err != nil && t.Attempt < t.MaxAttempts:
		return metrics.AttemptRetried
	case res.Err != nil:
		return metrics.AttemptFailed
	case res.PollAfter > 0:
		return metrics.AttemptParked
	}
	return metrics.AttemptSucceeded
}
