package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/queue"
	"github.com/heddle-io/heddle/internal/store"
	"github.com/heddle-io/heddle/planner"
)

// idLog records every message the engine sends, to check that no two
// share a deduplication id in their group: the queue would drop the second
// (SQS for 5 minutes; memqueue emulates it).
type idLog struct {
	queue.Queue
	mu   sync.Mutex
	sent []queue.Message
}

func (l *idLog) Send(ctx context.Context, tenant string, msgs ...queue.Message) error {
	l.mu.Lock()
	l.sent = append(l.sent, msgs...)
	l.mu.Unlock()
	return l.Queue.Send(ctx, tenant, msgs...)
}

// requireDistinctIDs fails if two messages the engine sent share a group and
// a deduplication id.
func (l *idLog) requireDistinctIDs(t *testing.T) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	seen := map[[2]string]queue.Message{}
	for _, m := range l.sent {
		k := [2]string{m.Group, m.Dedup}
		prev, dup := seen[k]
		require.False(t, dup, "two messages share group %q and deduplication id %q: the queue drops the second (%+v, then %+v)", m.Group, m.Dedup, prev, m)
		seen[k] = m
	}
}

// failFirstPoll stands in for a detached run that fails: for a task with
// testPolls set, attempt 1 starts and asks to be polled, and its first poll
// reports the run failed; attempt 2 succeeds at once. Other tasks run
// through inner.
type failFirstPoll struct {
	inner Executor
	after time.Duration
	mu    sync.Mutex
	calls []string // task#attempt:poll, in order
	// polled, when set, runs before the first poll answers.
	polled func()
}

func (f *failFirstPoll) Execute(ctx context.Context, a Attempt) Result {
	if a.Task.Params[testPolls] == "" {
		return f.inner.Execute(ctx, a)
	}
	f.mu.Lock()
	f.calls = append(f.calls, fmt.Sprintf("%s#%d:%q", a.Task.ID, a.Task.Attempt, a.Poll))
	f.mu.Unlock()
	switch {
	case a.Task.Attempt > 1:
		return Result{Stdout: "done\n"}
	case a.Poll == "":
		return Result{PollAfter: f.after, PollState: "1"}
	default:
		if f.polled != nil {
			f.polled()
		}
		return Result{Err: errors.New("the detached run failed")}
	}
}

func (f *failFirstPoll) callsOf(task string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, c := range f.calls {
		if len(c) > len(task) && c[:len(task)+1] == task+"#" {
			out = append(out, c)
		}
	}
	return out
}

// installPolled plans a one-node create whose install is detached (polled)
// and allowed a retry.
func installPolled(t *testing.T) Submission {
	t.Helper()
	sub := createSubmission(t, "c1", 1, func(pt planner.Task) map[string]string {
		if pt.Action == domain.ActionInstall {
			return map[string]string{testPolls: "1"}
		}
		return nil
	})
	for i := range sub.Plan.Tasks {
		if sub.Plan.Tasks[i].Action == domain.ActionInstall {
			sub.Plan.Tasks[i].MaxAttempts = 2
			sub.Plan.Tasks[i].Timeout = domain.Duration(5 * time.Minute) // the liveness bound, not what is checked
		}
	}
	return sub
}

// TestRetryAfterMovedPollsIsDelivered: the install is reached as a
// continuation, so its polls move to a fresh message (a send of its own);
// its first poll fails, and the retry's message must not repeat that
// message's deduplication id, or the queue drops it and the task waits for
// the janitor's re-send (ResendAfter, 2 minutes by default). The janitor
// runs throughout; it must not have had to send the install again.
func TestRetryAfterMovedPollsIsDelivered(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T) {
		// ResendAfter only bounds how long a dropped retry would wait: the
		// job ends either way, and the messages sent tell which way.
		b := setup(t, nil, Config{ResendAfter: 30 * time.Second})
		log := &idLog{Queue: b.q}
		b.eng.queue = log
		fx := &failFirstPoll{inner: Simulation{}, after: 100 * time.Millisecond}
		failedAt := -1 // messages sent before the poll failed
		fx.polled = func() {
			log.mu.Lock()
			failedAt = len(log.sent)
			log.mu.Unlock()
		}
		b.rec.inner = fx
		job, err := b.eng.Submit(b.ctx, installPolled(t))
		require.NoError(t, err)
		stop := b.run(t, 1, 50*time.Millisecond)
		final := b.waitJob(t, "c1", job.ID, 2*time.Minute)
		stop()
		require.Equal(t, domain.JobSucceeded, final.Status, "%s%s", final.StatusMessage, b.failures(t, final.ID))

		var install domain.Task
		require.NoError(t, b.eng.eachTask(b.ctx, tenant, job.ID, func(_ store.Item, task domain.Task) (bool, error) {
			if task.Action == domain.ActionInstall {
				install = task
			}
			return true, nil
		}))
		require.Equal(t, []string{install.ID + `#1:""`, install.ID + `#1:"1"`, install.ID + `#2:""`}, fx.callsOf(install.ID),
			"a start, its failed poll, then the retry")

		// After the failed poll, one message for the install: the retry's.
		// A second is the janitor's re-send of a retry the queue dropped.
		ref := TaskRef{Tenant: tenant, Cluster: "c1", Job: job.ID, Task: install.ID}
		log.mu.Lock()
		require.GreaterOrEqual(t, failedAt, 0, "the poll ran")
		var after []string
		for _, m := range log.sent[failedAt:] {
			if m.TaskID == ref.String() {
				after = append(after, m.Dedup)
			}
		}
		log.mu.Unlock()
		require.Len(t, after, 1, "the install was sent %v after its failed poll: the janitor had to re-send the retry", after)
		log.requireDistinctIDs(t)
		checkInvariants(t, b)
	})
}

// TestRetryAfterRepollIsDelivered: the janitor re-sends the poll message of
// a parked attempt whose message was lost (a send of its own); the poll it
// carries fails, and the retry's message must be in the queue at once, not
// dropped as a duplicate of the janitor's.
func TestRetryAfterRepollIsDelivered(t *testing.T) {
	t.Parallel()
	clock, mq, cfg := clocked(t)
	cfg.ResendAfter = time.Second
	b := setup(t, mq, cfg)
	log := &idLog{Queue: mq}
	b.eng.queue = log
	fx := &failFirstPoll{inner: Simulation{}, after: 2 * time.Second}
	b.rec.inner = fx
	job, err := b.eng.Submit(b.ctx, installPolled(t))
	require.NoError(t, err)

	// Handle messages by hand until the install has started (and parked).
	var install string
	for install == "" {
		ds, err := mq.Receive(b.ctx, tenant, 1, time.Second, time.Minute)
		require.NoError(t, err)
		require.NotEmpty(t, ds, "the queue ran dry before the install started")
		_ = b.eng.HandleBatch(b.ctx, tenant, ds)
		fx.mu.Lock()
		if len(fx.calls) > 0 {
			install = fx.calls[0][:len(fx.calls[0])-len(`#1:""`)]
		}
		fx.mu.Unlock()
	}
	ref := TaskRef{Tenant: tenant, Cluster: "c1", Job: job.ID, Task: install}
	drain := func() []queue.Delivery {
		var all []queue.Delivery
		for {
			ds, err := mq.Receive(b.ctx, tenant, 10, 0, time.Minute)
			require.NoError(t, err)
			if len(ds) == 0 {
				return all
			}
			all = append(all, ds...)
		}
	}
	for _, d := range drain() { // the poll message is lost
		require.NoError(t, mq.Ack(b.ctx, tenant, d.Receipt))
	}
	clock.Add(int64(fx.after + 2*time.Second)) // the poll was due, and ResendAfter passed
	r, err := b.eng.RunJanitor(b.ctx)
	require.NoError(t, err)
	require.Equal(t, 1, r.Resent, "the janitor re-sends the lost poll")

	// The janitor's message carries the poll, which fails.
	ds := drain()
	require.Len(t, ds, 1)
	require.Empty(t, b.eng.HandleBatch(b.ctx, tenant, ds))
	require.Equal(t, []string{install + `#1:""`, install + `#1:"1"`}, fx.callsOf(install))

	// The retry's message is there now, without another janitor pass.
	retry := drain()
	require.Len(t, retry, 1, "the retry's message was dropped as a duplicate of the janitor's")
	require.Equal(t, ref.String(), retry[0].TaskID)
	require.Equal(t, 1, retry[0].Attempt)
	log.requireDistinctIDs(t)

	clock.Add(int64(time.Second)) // past the retry's backoff
	require.Empty(t, b.eng.HandleBatch(b.ctx, tenant, retry))
	lt, err := b.eng.loadTask(b.ctx, ref)
	require.NoError(t, err)
	require.Equal(t, domain.TaskSucceeded, lt.task.Status, "the retry ran")
	require.Equal(t, 2, lt.task.Attempt)
}
