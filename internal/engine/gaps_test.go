package engine

import (
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/queue"
	"github.com/heddle-io/heddle/internal/store"
	"github.com/heddle-io/heddle/planner"
)

// runLambda plays the worker Lambda's SQS event source until ctx ends: it
// receives batches, hands each to HandleBatch, and deletes every message
// the function did not report, as the event source does.
func (b *testBundle) runLambda(ctx context.Context, reported *atomic.Int64) {
	for ctx.Err() == nil {
		ds, err := b.q.Receive(ctx, tenant, queue.MaxBatch, 50*time.Millisecond, b.eng.cfg.Visibility)
		if err != nil || len(ds) == 0 {
			continue
		}
		keep := map[int]bool{}
		for _, i := range b.eng.HandleBatch(ctx, tenant, ds) {
			keep[i] = true
		}
		reported.Add(int64(len(keep)))
		for i, d := range ds {
			if !keep[i] {
				_ = b.q.Ack(ctx, tenant, d.Receipt) // the event source deletes it
			}
		}
	}
}

func TestHandleBatchKeepsARetryWaitingOutItsBackoff(t *testing.T) {
	t.Parallel()
	// The backoff is long enough that the retry's message arrives before the
	// retry may run: HandleBatch must report it, or the event source deletes
	// it and only the janitor (not running here) could bring it back.
	b := setup(t, nil, Config{Backoff: 300 * time.Millisecond})
	job, err := b.eng.Submit(b.ctx, createSubmission(t, "c1", 3, func(pt planner.Task) map[string]string {
		if pt.Action == domain.ActionInstall {
			return map[string]string{SimFailAttempts: "1"}
		}
		return nil
	}))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(b.ctx)
	var wg sync.WaitGroup
	var reported atomic.Int64
	for range 2 {
		wg.Add(1)
		go func() { defer wg.Done(); b.runLambda(ctx, &reported) }()
	}
	final := b.waitJob(t, "c1", job.ID, 30*time.Second)
	cancel()
	wg.Wait()
	require.Equal(t, domain.JobSucceeded, final.Status, "%s%s", final.StatusMessage, b.failures(t, final.ID))
	failed := 0
	for _, r := range b.rec.runs {
		if !r.ok {
			failed++
		}
	}
	require.Equal(t, 3, failed, "every install failed its first attempt, and its retry ran without the janitor")
	require.Positive(t, reported.Load(), "the delayed retries were reported to the event source")
	checkInvariants(t, b)
}

func TestHandleBatchKeepsLaterMessagesOfADelayedGroup(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, Config{})
	sub := createSubmission(t, "c1", 2, nil)
	job, err := b.eng.Submit(b.ctx, sub)
	require.NoError(t, err)
	// The first task of each node is READY; put node 1000's in a backoff.
	tasks, err := b.eng.Tasks(b.ctx, tenant, job.ID)
	require.NoError(t, err)
	var delayed, blocked, other domain.Task
	for _, task := range tasks {
		switch {
		case task.Rollback:
		case task.NodeID == "c1-1000" && task.Status == domain.TaskReady:
			delayed = task
		case task.NodeID == "c1-1000" && task.Status == domain.TaskBlocked && blocked.ID == "":
			blocked = task
		case task.NodeID == "c1-1001" && task.Status == domain.TaskReady:
			other = task
		}
	}
	require.NotEmpty(t, delayed.ID)
	require.NotEmpty(t, blocked.ID)
	require.NotEmpty(t, other.ID)
	key := taskKey(tenant, job.ID, delayed.ID)
	delayed.ReadyAt = time.Now().Add(time.Hour)
	_, err = b.db.Write(b.ctx, store.Update(key, store.Condition{Version: delayed.Version}, taskChanges(key, delayed)))
	require.NoError(t, err)

	delivery := func(task domain.Task) queue.Delivery {
		ref := TaskRef{Tenant: tenant, Cluster: "c1", Job: job.ID, Task: task.ID}
		return queue.Delivery{Message: queue.Message{TaskID: ref.String(), Attempt: task.Attempt, Group: group("c1", task.NodeID, task.ID, task.Sends)}, Receipt: "r-" + task.ID}
	}
	keep := b.eng.HandleBatch(b.ctx, tenant, []queue.Delivery{delivery(delayed), delivery(blocked), delivery(other)})
	require.Equal(t, []int{0, 1}, keep, "the delayed message and the later one of its group stay; the other group goes on")
	ran := map[string]bool{}
	for _, r := range b.rec.runs {
		ran[r.task] = true
	}
	require.True(t, ran[other.ID], "the other group's message was handled")
	require.False(t, ran[delayed.ID])
	require.False(t, ran[blocked.ID])
}

// loseReadyTasks turns every READY task of the job back to BLOCKED, as if
// the step that readied them was lost: nothing can move the job any more.
func loseReadyTasks(t *testing.T, b *testBundle, jobID string) {
	t.Helper()
	tasks, err := b.eng.Tasks(b.ctx, tenant, jobID)
	require.NoError(t, err)
	for _, task := range tasks {
		if task.Status != domain.TaskReady {
			continue
		}
		key := taskKey(tenant, jobID, task.ID)
		task.Status = domain.TaskBlocked
		_, err := b.db.Write(b.ctx, store.Update(key, store.Condition{Version: task.Version}, taskChanges(key, task)))
		require.NoError(t, err)
	}
}

func TestJanitorFailsAStuckJobButNotAPausedOne(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T) {
		b := setup(t, nil, Config{})
		stuck, err := b.eng.Submit(b.ctx, createSubmission(t, "c1", 2, nil))
		require.NoError(t, err)
		paused, err := b.eng.Submit(b.ctx, createSubmission(t, "c2", 2, nil))
		require.NoError(t, err)
		require.NoError(t, b.eng.Pause(b.ctx, tenant, "c2", paused.ID))
		loseReadyTasks(t, b, stuck.ID)
		loseReadyTasks(t, b, paused.ID)

		r, err := b.eng.RunJanitor(b.ctx)
		require.NoError(t, err)
		require.Equal(t, 1, r.Stuck, "the running job that cannot progress is failed; the paused one is left alone")
		lj, err := b.eng.loadJob(b.ctx, tenant, "c2", paused.ID)
		require.NoError(t, err)
		require.Equal(t, domain.JobPaused, lj.job.Status)
		r, err = b.eng.RunJanitor(b.ctx)
		require.NoError(t, err)
		require.Zero(t, r.Stuck, "a job is failed once")

		// The stuck job took the normal failure path: its rollback runs and
		// gives the cluster and the quota back.
		stop := b.run(t, 2, 50*time.Millisecond)
		defer stop()
		final := b.waitJob(t, "c1", stuck.ID, 30*time.Second)
		require.Equal(t, domain.JobFailed, final.Status)
		require.Contains(t, final.StatusMessage, "stuck")
		require.Contains(t, final.StatusMessage, "rolled back")
		_, c, err := b.eng.loadCluster(b.ctx, tenant, "c1")
		require.NoError(t, err)
		require.Equal(t, domain.ClusterTerminated, c.Status)
		require.Empty(t, c.ActiveJobID)

		require.NoError(t, b.eng.Abort(b.ctx, tenant, "c2", paused.ID, "ann"))
		require.Equal(t, domain.JobAborted, b.waitJob(t, "c2", paused.ID, 30*time.Second).Status)
		stop()
		checkInvariants(t, b)
	})
}

func TestJanitorFailsAJobIdleForStuckAfter(t *testing.T) {
	t.Parallel()
	var clock atomic.Int64
	clock.Store(time.Now().UnixNano())
	b := setup(t, nil, Config{StuckAfter: time.Hour, Clock: func() time.Time { return time.Unix(0, clock.Load()) }})
	sub := createSubmission(t, "c1", 2, nil)
	sub.Plan.Rollback = nil
	job, err := b.eng.Submit(b.ctx, sub)
	require.NoError(t, err)
	// No worker consumes the queue: the first tasks stay READY.
	r, err := b.eng.RunJanitor(b.ctx)
	require.NoError(t, err)
	require.Zero(t, r.Stuck, "ready tasks are progress to come")
	clock.Add(int64(59 * time.Minute))
	r, err = b.eng.RunJanitor(b.ctx)
	require.NoError(t, err)
	require.Zero(t, r.Stuck, "not idle for StuckAfter yet")
	clock.Add(int64(2 * time.Minute))
	r, err = b.eng.RunJanitor(b.ctx)
	require.NoError(t, err)
	require.Equal(t, 1, r.Stuck)
	lj, err := b.eng.loadJob(b.ctx, tenant, "c1", job.ID)
	require.NoError(t, err)
	require.Equal(t, domain.JobFailed, lj.job.Status)
	require.Contains(t, lj.job.StatusMessage, "no worker claimed them")
	_, c, err := b.eng.loadCluster(b.ctx, tenant, "c1")
	require.NoError(t, err)
	require.Equal(t, domain.ClusterFailed, c.Status)
	checkInvariants(t, b)
}

func TestTwoJanitorsAtOnce(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T) {
		b := setup(t, nil, Config{ResendAfter: 50 * time.Millisecond})
		lossy := &lossyQueue{Queue: b.q, rng: rand.New(rand.NewPCG(3, 4))}
		b.eng.queue = lossy
		ok, err := b.eng.Submit(b.ctx, createSubmission(t, "c1", 4, func(pt planner.Task) map[string]string {
			if pt.Action == domain.ActionInstall {
				return map[string]string{SimFailAttempts: "1"}
			}
			return nil
		}))
		require.NoError(t, err)
		rolled, err := b.eng.Submit(b.ctx, createSubmission(t, "c2", 3, failAppStart(alwaysFails)))
		require.NoError(t, err)

		ctx, cancel := context.WithCancel(b.ctx)
		var wg sync.WaitGroup
		wg.Add(1)
		go func() { defer wg.Done(); b.eng.RunWorkers(ctx, tenant, 4) }()
		var passes atomic.Int64
		for range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for ctx.Err() == nil {
					_, _ = b.eng.RunJanitor(ctx)
					passes.Add(1)
					sleep(ctx, 5*time.Millisecond)
				}
			}()
		}
		okFinal := b.waitJob(t, "c1", ok.ID, 60*time.Second)
		rolledFinal := b.waitJob(t, "c2", rolled.ID, 60*time.Second)
		cancel()
		wg.Wait()
		require.Equal(t, domain.JobSucceeded, okFinal.Status, "%s%s", okFinal.StatusMessage, b.failures(t, okFinal.ID))
		require.Equal(t, domain.JobFailed, rolledFinal.Status)
		require.Contains(t, rolledFinal.StatusMessage, "rolled back")
		require.Positive(t, lossy.dropped.Load(), "the test must actually lose messages")
		require.Greater(t, passes.Load(), int64(2), "the janitors overlapped")
		checkInvariants(t, b)
	})
}

// noisyExecutor fails the attempts of one task with as much output as an
// executor may return, all of it bytes that JSON escapes at six times
// their size or that are not UTF-8.
type noisyExecutor struct {
	Simulation
	task string
}

func (n noisyExecutor) Execute(ctx context.Context, a Attempt) Result {
	if a.Task.ID != n.task {
		return n.Simulation.Execute(ctx, a)
	}
	rng := rand.New(rand.NewPCG(uint64(a.Task.Attempt), 7))
	out := make([]byte, 32<<10)
	for i := range out {
		out[i] = byte(rng.IntN(256))
	}
	ctl := strings.Repeat("\x00\x1b<>&\xff", (32<<10)/6)
	return Result{Err: errors.New(strings.Repeat("<\x01", 8<<10)), ExitCode: 2, Stdout: string(out), Stderr: ctl}
}

func TestManyNoisyAttemptsKeepTheTaskItemSmall(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T) {
		b := setup(t, nil, Config{MaxBackoff: 5 * time.Millisecond})
		const noisy = "c1-1000/lb/install"
		b.rec.inner = noisyExecutor{task: noisy}
		sub := createSubmission(t, "c1", 1, nil)
		sub.Plan.Rollback = nil
		found := false
		for i := range sub.Plan.Tasks {
			if sub.Plan.Tasks[i].ID == noisy {
				sub.Plan.Tasks[i].MaxAttempts = maxAttemptHistory + 4
				found = true
			}
		}
		require.True(t, found)
		job, err := b.eng.Submit(b.ctx, sub)
		require.NoError(t, err)
		stop := b.run(t, 1, 50*time.Millisecond)
		// A liveness bound, not a speed test: fourteen attempts, each after
		// its retry backoff, on DynamoDB Local took over a minute in CI
		// while the other packages' tests ran beside it.
		final := b.waitJob(t, "c1", job.ID, 4*time.Minute)
		stop()
		require.Equal(t, domain.JobFailed, final.Status)

		it, err := b.db.Get(b.ctx, taskKey(tenant, job.ID, noisy))
		require.NoError(t, err)
		require.Less(t, len(it.Data), 350_000, "the task item stays far from DynamoDB's 400 KB")
		var task domain.Task
		require.NoError(t, json.Unmarshal(it.Data, &task))
		require.Equal(t, maxAttemptHistory+4, task.Attempt, "every attempt was recorded")
		require.Len(t, task.Attempts, maxAttemptHistory)
		last := task.Attempts[len(task.Attempts)-1]
		require.Equal(t, domain.TaskFailed, last.Status)
		require.Greater(t, len(last.Stdout), 4<<10, "the latest attempt keeps a full tail")
		for _, a := range task.Attempts {
			for _, s := range []string{a.Stdout, a.Stderr, a.Error} {
				require.True(t, utf8.ValidString(s))
				require.NotContains(t, s, "\x00")
				require.NotContains(t, s, "\x1b")
			}
		}
		for _, a := range task.Attempts[:len(task.Attempts)-1] {
			enc, err := json.Marshal(a.Stdout + a.Stderr)
			require.NoError(t, err)
			require.LessOrEqual(t, len(enc), 2*maxOldTailBytes+2, "older attempts keep short tails")
		}
		checkInvariants(t, b)
	})
}

func TestBoundedOutputFitsItsEncodedLimit(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 1))
	for range 200 {
		raw := make([]byte, rng.IntN(8<<10))
		for i := range raw {
			raw[i] = byte(rng.IntN(256))
		}
		if rng.IntN(2) == 0 {
			raw = append(raw, "héllo <wörld> \u2028 & \"q\" \\ \n"...)
		}
		limit := 16 + rng.IntN(4<<10)
		for _, s := range []string{boundTail(string(raw), limit), boundHead(string(raw), limit)} {
			require.True(t, utf8.ValidString(s))
			enc, err := json.Marshal(s)
			require.NoError(t, err)
			require.LessOrEqual(t, len(enc)-2, limit)
		}
	}
	require.Equal(t, "abc", boundTail("abc", 10), "short output is kept as it is")
	require.Equal(t, "…89", boundTail("0123456789", 5))
	require.Equal(t, "01…", boundHead("0123456789", 5))
	require.Equal(t, "a\uFFFDb\uFFFD\n", sanitize("a\x00b\xff\n"))
}

// TestAWorkerClaimsOnlyWhatFitsBeforeItsDeadline: a Lambda invocation cut
// off mid-action leaves the attempt RUNNING until its lease ends and then
// runs it again, so a worker with a deadline takes a continuation, or a
// message after the first of its batch, only when its timeout fits before
// the deadline; the rest go to a fresh invocation.
func TestAWorkerClaimsOnlyWhatFitsBeforeItsDeadline(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, Config{})
	sub := createSubmission(t, "c1", 2, nil)
	for i, pt := range sub.Plan.Tasks {
		if pt.Action == domain.ActionBootstrap {
			sub.Plan.Tasks[i].Timeout = domain.Duration(30 * time.Minute) // past the deadline below
		}
	}
	job, err := b.eng.Submit(b.ctx, sub)
	require.NoError(t, err)
	ds, err := b.q.Receive(b.ctx, tenant, queue.MaxBatch, time.Second, b.eng.cfg.Visibility)
	require.NoError(t, err)
	require.Len(t, ds, 2, "each node's create")
	// Without their groups the two run in one lane, one after the other
	// (process): the second is later in its lane, as a node's next message
	// in a batch would be. Each group's first message starts with the
	// batch, as the batch's first does.
	for i := range ds {
		ds[i].Group = ""
	}

	// 12 minutes left. The first create (12-minute timeout) is taken anyway,
	// then its confirm (10 minutes) as a continuation; its bootstrap (30
	// minutes) is sent, not claimed. The second node's create, later in the
	// batch, does not fit and stays for a fresh invocation.
	ctx, cancel := context.WithTimeout(b.ctx, 12*time.Minute)
	defer cancel()
	kept := b.eng.HandleBatch(ctx, tenant, ds)
	require.Equal(t, []int{1}, kept)
	first := strings.TrimSuffix(strings.SplitN(ds[0].TaskID, "|", 3)[2], "/create")
	var ran []string
	for _, r := range b.rec.runs {
		ran = append(ran, r.task)
	}
	require.ElementsMatch(t, []string{first + "/create", first + "/confirm"}, ran)

	tasks, err := b.eng.Tasks(b.ctx, tenant, job.ID)
	require.NoError(t, err)
	bootstrapReady := false
	for _, task := range tasks {
		if task.NodeID == first && task.Action == domain.ActionBootstrap && !task.Rollback {
			bootstrapReady = task.Status == domain.TaskReady
		}
	}
	require.True(t, bootstrapReady, "the bootstrap that does not fit waits in the queue, not claimed: %+v", tasksOf(tasks, first))
}

func tasksOf(tasks []domain.Task, node string) []string {
	var out []string
	for _, t := range tasks {
		if t.NodeID == node && !t.Rollback {
			out = append(out, t.ID+"="+string(t.Status))
		}
	}
	return out
}

// TestResendReadySendsEveryReadyTask: a process whose in-process queue died
// with its last run sends every READY task again at start, however recently
// it became ready (the janitor would wait ResendAfter).
func TestResendReadySendsEveryReadyTask(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, Config{ResendAfter: time.Hour})
	job, err := b.eng.Submit(b.ctx, createSubmission(t, "c1", 3, nil))
	require.NoError(t, err)
	// The queue loses what Submit sent.
	ds, err := b.q.Receive(b.ctx, tenant, queue.MaxBatch, time.Second, time.Minute)
	require.NoError(t, err)
	require.Len(t, ds, 3, "each node's create")
	for _, d := range ds {
		require.NoError(t, b.q.Ack(b.ctx, tenant, d.Receipt))
	}
	r, err := b.eng.RunJanitor(b.ctx)
	require.NoError(t, err)
	require.Zero(t, r.Resent, "the janitor waits ResendAfter")

	n, err := b.eng.ResendReady(b.ctx)
	require.NoError(t, err)
	require.Equal(t, 3, n)
	again, err := b.q.Receive(b.ctx, tenant, queue.MaxBatch, time.Second, time.Minute)
	require.NoError(t, err)
	require.Len(t, again, 3)
	for _, d := range again {
		require.Contains(t, d.TaskID, job.ID)
	}
}

// TestAnActionNoInvocationCouldFitIsTakenWhileHalfAnInvocationIsLeft: a
// worker Lambda shorter than its actions' timeouts (60 s, node actions of
// 10 and 12 minutes, which it only starts: long actions run detached) can
// never fit them, and a fresh invocation could do no better. So a later
// message of its batch is taken while half an invocation is left, not
// handed off (each hand-off is a receive, and enough of them sent messages
// to the dead-letter queue); with less than half left it goes to a fresh
// invocation.
func TestAnActionNoInvocationCouldFitIsTakenWhileHalfAnInvocationIsLeft(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		left time.Duration
		kept []int
	}{
		{"most of the invocation left", 57 * time.Second, nil},
		{"less than half left", 20 * time.Second, []int{1}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, nil, Config{InvocationTimeout: time.Minute})
			_, err := b.eng.Submit(b.ctx, createSubmission(t, "c1", 2, nil))
			require.NoError(t, err)
			ds, err := b.q.Receive(b.ctx, tenant, queue.MaxBatch, time.Second, b.eng.cfg.Visibility)
			require.NoError(t, err)
			require.Len(t, ds, 2, "each node's create (a 12-minute timeout)")
			for i := range ds {
				ds[i].Group = "" // one lane: the second is later in it (see TestAWorkerClaimsOnlyWhatFitsBeforeItsDeadline)
			}

			ctx, cancel := context.WithTimeout(b.ctx, tt.left)
			defer cancel()
			kept := b.eng.HandleBatch(ctx, tenant, ds)
			require.Equal(t, tt.kept, kept)
			var creates []string
			for _, r := range b.rec.runs {
				if strings.HasSuffix(r.task, "/create") {
					creates = append(creates, r.task)
				}
			}
			require.Len(t, creates, 2-len(tt.kept), "the creates run in this invocation")
		})
	}
}
