package engine

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/queue/memqueue"
	"github.com/heddle-io/heddle/planner"
)

// testPolls makes pollingExec answer PollAfter that many times before it
// succeeds.
const testPolls = "test.polls"

// pollingExec stands in for an executor that starts detached runs: a task
// with testPolls set starts "something" on its first call and asks to be
// polled; each poll asks again until the count is reached. Other tasks run
// through inner.
type pollingExec struct {
	inner  Executor
	after  time.Duration
	inCall atomic.Int32
	mu     sync.Mutex
	calls  []string // task#attempt:poll, in order
	starts chan string
	// onStart, when set, runs at the start of the first call; onPoll at
	// every poll; onStartAttempt at every start.
	onStart        func()
	onPoll         func(a Attempt)
	onStartAttempt func(a Attempt)
}

func (p *pollingExec) Execute(ctx context.Context, a Attempt) Result {
	n := a.Task.Params[testPolls]
	if n == "" {
		return p.inner.Execute(ctx, a)
	}
	p.inCall.Add(1)
	defer p.inCall.Add(-1)
	_, leaked := a.Task.Params[pollParam]
	p.mu.Lock()
	p.calls = append(p.calls, fmt.Sprintf("%s#%d:%q", a.Task.ID, a.Task.Attempt, a.Poll))
	p.mu.Unlock()
	if leaked {
		return Result{Err: fmt.Errorf("the engine's poll entry reached the executor")}
	}
	if a.Poll != "" && p.onPoll != nil {
		p.onPoll(a)
	}
	switch a.Poll {
	case "":
		if p.onStartAttempt != nil {
			p.onStartAttempt(a)
		}
		p.starts <- a.Task.ID
		if p.onStart != nil {
			p.onStart()
		}
		return Result{PollAfter: p.after, PollState: "1", Stdout: "not recorded"}
	case n:
		return Result{Stdout: "done after " + n + " polls\n"}
	default:
		var i int
		_, _ = fmt.Sscan(a.Poll, &i)
		return Result{PollAfter: p.after, PollState: fmt.Sprint(i + 1)}
	}
}

// TestParkedAttemptFreesTheWorker: c1's install asks to be polled twice;
// when it starts, c2 is submitted, and the only worker runs c2's tasks
// while the install is parked (its message hidden until the poll is due);
// then the polls come and c1 succeeds. Every message is delivered twice,
// and the install is reached as a continuation, so its polls move to a
// message of their own: still one start per attempt. On SQS each poll is
// a receive of the message the polls moved to (PollReceives).
func TestParkedAttemptFreesTheWorker(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T) {
		b := setup(t, nil, Config{})
		b.eng.queue = dupQueue{b.q}
		pe := &pollingExec{inner: Simulation{}, after: 300 * time.Millisecond, starts: make(chan string, 4)}
		b.rec.inner = pe

		sub := createSubmission(t, "c1", 1, func(pt planner.Task) map[string]string {
			if pt.Action == domain.ActionInstall {
				return map[string]string{testPolls: "2"}
			}
			return nil
		})
		// The one worker runs c2's tasks (as same-node continuations) before
		// it takes the install's polls, so the install's attempt lasts as
		// long as c2's whole job, which on a loaded machine (DynamoDB Local
		// and fauxqs at a load of 30) outlasted the catalog's 5 s action
		// timeout: the janitor failed the parked attempt and a second one
		// started. The install's timeout is this test's liveness bound,
		// not what it checks.
		for i := range sub.Plan.Tasks {
			if sub.Plan.Tasks[i].Action == domain.ActionInstall {
				sub.Plan.Tasks[i].Timeout = domain.Duration(5 * time.Minute)
			}
		}
		job1, err := b.eng.Submit(b.ctx, sub)
		require.NoError(t, err)
		submitted := make(chan error, 1)
		var job2 domain.Job
		var submitC2 sync.Once
		pe.onStart = func() {
			// c2's first task is in the queue before the install parks. Only
			// once: a second start is an error the calls check reports.
			submitC2.Do(func() {
				var err error
				job2, err = b.eng.Submit(b.ctx, createSubmission(t, "c2", 1, nil))
				submitted <- err
			})
		}
		stop := b.run(t, 1, 50*time.Millisecond)
		final1 := b.waitJob(t, "c1", job1.ID, 4*time.Minute)
		require.NoError(t, <-submitted)
		final2 := b.waitJob(t, "c2", job2.ID, 4*time.Minute)
		stop()
		require.Equal(t, domain.JobSucceeded, final1.Status, "%s%s", final1.StatusMessage, b.failures(t, final1.ID))
		require.Equal(t, domain.JobSucceeded, final2.Status, "%s%s", final2.StatusMessage, b.failures(t, final2.ID))

		install := <-pe.starts
		pe.mu.Lock()
		calls := append([]string(nil), pe.calls...)
		pe.mu.Unlock()
		require.Equal(t, []string{install + `#1:""`, install + `#1:"1"`, install + `#1:"2"`}, calls, "one start, then two polls of the same attempt")

		lt, err := b.eng.loadTask(b.ctx, TaskRef{Tenant: tenant, Cluster: "c1", Job: job1.ID, Task: install})
		require.NoError(t, err)
		require.Equal(t, domain.TaskSucceeded, lt.task.Status)
		require.NotContains(t, lt.task.Params, pollParam, "the poll entry ends with the attempt")
		require.Len(t, lt.task.Attempts, 1)
		require.Equal(t, "done after 2 polls\n", lt.task.Attempts[0].Stdout)

		// Some task of c2 ran between the install's start and its last poll:
		// the one worker was free while the install was parked.
		var first, last int64
		for _, r := range b.rec.runs {
			if r.task == install && r.job == job1.ID {
				if !r.poll {
					first = r.end
				} else if r.start > last {
					last = r.start
				}
			}
		}
		between := 0
		for _, r := range b.rec.runs {
			if r.job == job2.ID && r.start > first && r.end < last {
				between++
			}
		}
		require.NotZero(t, between, "no task of c2 ran while c1's install was parked")
		checkInvariants(t, b)
	})
}

// TestLostPollMessageIsResent: a parked attempt whose poll message is lost
// is polled again through a message the janitor sends, not failed.
func TestLostPollMessageIsResent(t *testing.T) {
	t.Parallel()
	clock, mq, cfg := clocked(t)
	cfg.ResendAfter = time.Second
	b := setup(t, mq, cfg)
	pe := &pollingExec{inner: Simulation{}, after: 2 * time.Second, starts: make(chan string, 4)}
	b.rec.inner = pe
	sub := createSubmission(t, "c1", 1, func(pt planner.Task) map[string]string {
		if pt.Action == domain.ActionInstall {
			return map[string]string{testPolls: "1"}
		}
		return nil
	})
	job, err := b.eng.Submit(b.ctx, sub)
	require.NoError(t, err)

	// Handle messages by hand until the install parks; then drop its
	// message (acknowledge it without handling).
	install := handleUntilStarted(t, b, mq, pe)
	ref := TaskRef{Tenant: tenant, Cluster: "c1", Job: job.ID, Task: install}
	for {
		ds, err := mq.Receive(b.ctx, tenant, 1, 0, time.Minute)
		require.NoError(t, err)
		if len(ds) == 0 {
			break
		}
		for _, d := range ds {
			require.NoError(t, mq.Ack(b.ctx, tenant, d.Receipt)) // lost
		}
	}
	clock.Add(int64(pe.after + 2*time.Second)) // the poll was due, and ResendAfter passed
	r, err := b.eng.RunJanitor(b.ctx)
	require.NoError(t, err)
	require.Equal(t, 1, r.Resent)
	require.Zero(t, r.TimedOut, "a parked attempt whose message was lost is polled again, not failed")

	stop := b.run(t, 1, 50*time.Millisecond)
	final := b.waitJob(t, "c1", job.ID, 30*time.Second)
	stop()
	require.Equal(t, domain.JobSucceeded, final.Status, "%s%s", final.StatusMessage, b.failures(t, final.ID))
	pe.mu.Lock()
	require.Equal(t, []string{install + `#1:""`, install + `#1:"1"`}, pe.calls)
	pe.mu.Unlock()
	lt, err := b.eng.loadTask(b.ctx, ref)
	require.NoError(t, err)
	require.Equal(t, domain.TaskSucceeded, lt.task.Status)
	checkInvariants(t, b)
}

// TestPollKeepsTheParkedDeadline: taking a poll leaves the attempt's
// deadline (its place in the RUNNING index) where parking put it when that
// is far enough ahead for the poll's heartbeat, so that a poll rewrites the
// index once (when it parks again), not twice; DynamoDB bills each index
// change twice.
func TestPollKeepsTheParkedDeadline(t *testing.T) {
	t.Parallel()
	clock, mq, cfg := clocked(t)
	cfg.ResendAfter, cfg.TaskLease = time.Minute, 10*time.Second
	b := setup(t, mq, cfg)
	pe := &pollingExec{inner: Simulation{}, after: 2 * time.Second, starts: make(chan string, 4)}
	b.rec.inner = pe
	sub := createSubmission(t, "c1", 1, func(pt planner.Task) map[string]string {
		if pt.Action == domain.ActionInstall {
			return map[string]string{testPolls: "1"}
		}
		return nil
	})
	for i := range sub.Plan.Tasks {
		if sub.Plan.Tasks[i].Action == domain.ActionInstall {
			sub.Plan.Tasks[i].Timeout = domain.Duration(time.Hour) // its deadlines are leases, not its end
		}
	}
	job, err := b.eng.Submit(b.ctx, sub)
	require.NoError(t, err)
	install := handleUntilStarted(t, b, mq, pe)
	ref := TaskRef{Tenant: tenant, Cluster: "c1", Job: job.ID, Task: install}
	parked, err := b.eng.loadTask(b.ctx, ref)
	require.NoError(t, err)
	var during time.Time
	pe.onPoll = func(Attempt) {
		lt, err := b.eng.loadTask(b.ctx, ref)
		if err == nil {
			during = lt.task.Deadline
		}
	}
	clock.Add(int64(pe.after)) // the poll is due
	stop := b.run(t, 1, 50*time.Millisecond)
	final := b.waitJob(t, "c1", job.ID, 30*time.Second)
	stop()
	require.Equal(t, domain.JobSucceeded, final.Status, "%s%s", final.StatusMessage, b.failures(t, final.ID))
	require.False(t, during.IsZero(), "the install was polled")
	require.True(t, parked.task.Deadline.Equal(during), "parked %s, during the poll %s", parked.task.Deadline, during)
}

// handleUntilStarted handles the queue's messages one at a time, by hand,
// until pe starts a polled task (which then is parked), and returns its id.
func handleUntilStarted(t *testing.T, b *testBundle, mq *memqueue.Queue, pe *pollingExec) string {
	t.Helper()
	for {
		ds, err := mq.Receive(b.ctx, tenant, 1, time.Second, time.Minute)
		require.NoError(t, err)
		require.NotEmpty(t, ds, "the queue ran dry before the polled task started")
		_ = b.eng.HandleBatch(b.ctx, tenant, ds)
		select {
		case id := <-pe.starts:
			return id
		default:
		}
	}
}

// clocked returns a settable clock, a queue on it and an engine Config on
// it, for tests that move time by hand.
func clocked(t *testing.T) (*atomic.Int64, *memqueue.Queue, Config) {
	t.Helper()
	clock := &atomic.Int64{}
	clock.Store(time.Now().UnixNano())
	now := func() time.Time { return time.Unix(0, clock.Load()) }
	mq := memqueue.New(memqueue.Options{Now: now})
	require.NoError(t, mq.CreateTenantQueue(context.Background(), tenant))
	return clock, mq, Config{Clock: now}
}
