package engine

import (
	"context"
	"errors"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/queue"
	"github.com/heddle-io/heddle/internal/store"
	"github.com/heddle-io/heddle/planner"
)

func TestCreateRunsToActive(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T) {
		b := setup(t, nil, Config{})
		job, err := b.eng.Submit(b.ctx, createSubmission(t, "c1", 6, nil))
		require.NoError(t, err)
		stop := b.run(t, 4, 50*time.Millisecond)
		final := b.waitJob(t, "c1", job.ID, 30*time.Second)
		stop()
		require.Equal(t, domain.JobSucceeded, final.Status, "%s%s", final.StatusMessage, b.failures(t, final.ID))
		require.Equal(t, final.TaskTotal, final.TaskDone, "progress counts every work task")
		_, c, err := b.eng.loadCluster(b.ctx, tenant, "c1")
		require.NoError(t, err)
		require.Equal(t, domain.ClusterActive, c.Status)
		require.Equal(t, 6, c.NodeCount)
		checkInvariants(t, b)
	})
}

func TestOneJobPerClusterAndQuota(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, Config{})
	sub := createSubmission(t, "c1", 3, nil)
	_, err := b.eng.Submit(b.ctx, sub)
	require.NoError(t, err)
	_, err = b.eng.Submit(b.ctx, sub)
	require.ErrorIs(t, err, ErrClusterBusy, "a second job on the same cluster is refused")

	big := createSubmission(t, "c2", 3, nil)
	big.TakeNodes = 998
	_, err = b.eng.Submit(b.ctx, big)
	require.ErrorIs(t, err, ErrQuota)
	_, _, err = b.eng.loadCluster(b.ctx, tenant, "c2")
	require.ErrorIs(t, err, store.ErrNotFound, "a refused submission writes nothing")
}

// dupQueue delivers every message twice (two sends with distinct ids).
type dupQueue struct{ queue.Queue }

func (d dupQueue) Send(ctx context.Context, tenant string, msgs ...queue.Message) error {
	for _, m := range msgs {
		twin := m
		twin.Dedup += "#twin"
		if err := d.Queue.Send(ctx, tenant, m, twin); err != nil {
			return err
		}
	}
	return nil
}

func TestEveryMessageDeliveredTwice(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T) {
		b := setup(t, nil, Config{})
		b.eng.queue = dupQueue{b.q}
		job, err := b.eng.Submit(b.ctx, createSubmission(t, "c1", 5, func(planner.Task) map[string]string {
			return map[string]string{SimDuration: "2ms"}
		}))
		require.NoError(t, err)
		stop := b.run(t, 6, 50*time.Millisecond)
		final := b.waitJob(t, "c1", job.ID, 30*time.Second)
		stop()
		require.Equal(t, domain.JobSucceeded, final.Status, "%s%s", final.StatusMessage, b.failures(t, final.ID))
		checkInvariants(t, b) // includes: no attempt ran twice
	})
}

// lossyQueue drops a share of sends, as a lost message would be.
type lossyQueue struct {
	queue.Queue
	mu      sync.Mutex
	rng     *rand.Rand
	dropped atomic.Int64
}

func (l *lossyQueue) Send(ctx context.Context, tenant string, msgs ...queue.Message) error {
	var kept []queue.Message
	l.mu.Lock()
	for _, m := range msgs {
		if l.rng.Float64() < 0.3 {
			l.dropped.Add(1)
			continue
		}
		kept = append(kept, m)
	}
	l.mu.Unlock()
	if len(kept) == 0 {
		return nil
	}
	return l.Queue.Send(ctx, tenant, kept...)
}

func TestDroppedMessagesAreRecoveredByTheJanitor(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T) {
		b := setup(t, nil, Config{ResendAfter: 100 * time.Millisecond})
		lossy := &lossyQueue{Queue: b.q, rng: rand.New(rand.NewPCG(1, 2))}
		b.eng.queue = lossy
		job, err := b.eng.Submit(b.ctx, createSubmission(t, "c1", 5, nil))
		require.NoError(t, err)
		stop := b.run(t, 4, 30*time.Millisecond)
		final := b.waitJob(t, "c1", job.ID, 60*time.Second)
		stop()
		require.Equal(t, domain.JobSucceeded, final.Status, "%s%s", final.StatusMessage, b.failures(t, final.ID))
		require.Positive(t, lossy.dropped.Load(), "the test must actually lose messages")
		checkInvariants(t, b)
	})
}

func TestManyWorkersRaceOnOneQueue(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T) {
		b := setup(t, nil, Config{})
		var jobs []domain.Job
		for i := range 3 {
			job, err := b.eng.Submit(b.ctx, createSubmission(t, "c"+strconv.Itoa(i), 8, func(planner.Task) map[string]string {
				return map[string]string{SimDuration: "1ms"}
			}))
			require.NoError(t, err)
			jobs = append(jobs, job)
		}
		stop := b.run(t, 12, 50*time.Millisecond)
		for i, job := range jobs {
			require.Equal(t, domain.JobSucceeded, b.waitJob(t, "c"+strconv.Itoa(i), job.ID, 60*time.Second).Status)
		}
		stop()
		checkInvariants(t, b)
	})
}

func TestRetriesThenSucceeds(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, Config{})
	job, err := b.eng.Submit(b.ctx, createSubmission(t, "c1", 3, func(pt planner.Task) map[string]string {
		if pt.Action == domain.ActionInstall {
			return map[string]string{SimFailAttempts: "2"} // fails twice, the third attempt works
		}
		return nil
	}))
	require.NoError(t, err)
	stop := b.run(t, 4, 50*time.Millisecond)
	final := b.waitJob(t, "c1", job.ID, 30*time.Second)
	stop()
	require.Equal(t, domain.JobSucceeded, final.Status, "%s%s", final.StatusMessage, b.failures(t, final.ID))
	installs := 0
	for _, r := range b.rec.runs {
		if !r.ok {
			installs++
		}
	}
	require.Equal(t, 6, installs, "three installs failed twice each")
	checkInvariants(t, b)
}

func TestFailedCreateRollsBack(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T) {
		b := setup(t, nil, Config{})
		log := &idLog{Queue: b.q}
		b.eng.queue = log
		job, err := b.eng.Submit(b.ctx, createSubmission(t, "c1", 4, failAppStart(alwaysFails)))
		require.NoError(t, err)
		stop := b.run(t, 4, 50*time.Millisecond)
		final := b.waitJob(t, "c1", job.ID, 60*time.Second)
		stop()
		require.Equal(t, domain.JobFailed, final.Status)
		require.Contains(t, final.StatusMessage, "rolled back")
		log.requireDistinctIDs(t) // retries and rollback tasks: no message dropped as a duplicate
		_, c, err := b.eng.loadCluster(b.ctx, tenant, "c1")
		require.NoError(t, err)
		require.Equal(t, domain.ClusterTerminated, c.Status)
		require.Contains(t, c.StatusMessage, "app/start failed")
		deletes := 0
		for _, r := range b.rec.runs {
			if r.ok && len(r.task) > 9 && r.task[:9] == "rollback:" {
				deletes++
			}
		}
		require.Positive(t, deletes, "the rollback plan ran")
		checkInvariants(t, b) // quota is back
	})
}

func TestWorkerKilledMidTask(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T) {
		b := setup(t, nil, Config{Visibility: 200 * time.Millisecond})
		killed := make(chan struct{})
		var once sync.Once
		workerCtx, kill := context.WithCancel(b.ctx)
		b.rec.hook = func(ctx context.Context, a Attempt) {
			if a.Task.Action == domain.ActionBootstrap && a.Task.Attempt == 1 {
				once.Do(func() { kill(); close(killed) })
				<-ctx.Done() // the worker dies with this attempt in hand
			}
		}
		sub := createSubmission(t, "c1", 2, nil)
		for i := range sub.Plan.Tasks {
			if sub.Plan.Tasks[i].Action == domain.ActionBootstrap {
				sub.Plan.Tasks[i].Timeout = domain.Duration(300 * time.Millisecond)
			}
		}
		job, err := b.eng.Submit(b.ctx, sub)
		require.NoError(t, err)
		go b.eng.RunWorkers(workerCtx, tenant, 1)
		<-killed
		stop := b.run(t, 2, 50*time.Millisecond) // a new worker and the janitor
		final := b.waitJob(t, "c1", job.ID, 30*time.Second)
		stop()
		require.Equal(t, domain.JobSucceeded, final.Status, "%s%s", final.StatusMessage, b.failures(t, final.ID))
		lt, err := b.eng.loadTask(b.ctx, TaskRef{Tenant: tenant, Cluster: "c1", Job: job.ID, Task: "c1-1000/bootstrap"})
		require.NoError(t, err)
		require.GreaterOrEqual(t, lt.task.Attempt, 2, "the killed attempt was failed by the janitor and retried")
		require.Contains(t, lt.task.Attempts[0].Error, "timed out")
		checkInvariants(t, b)
	})
}

func TestPauseResumeAbort(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, Config{})
	job, err := b.eng.Submit(b.ctx, createSubmission(t, "c1", 3, func(planner.Task) map[string]string {
		return map[string]string{SimDuration: "5ms"}
	}))
	require.NoError(t, err)
	require.NoError(t, b.eng.Pause(b.ctx, tenant, "c1", job.ID))
	require.ErrorIs(t, b.eng.Pause(b.ctx, tenant, "c1", job.ID), ErrJobState)
	stop := b.run(t, 2, 50*time.Millisecond)
	time.Sleep(100 * time.Millisecond)
	require.Empty(t, b.rec.runs, "a paused job starts nothing")
	require.NoError(t, b.eng.Resume(b.ctx, tenant, "c1", job.ID))
	require.Equal(t, domain.JobSucceeded, b.waitJob(t, "c1", job.ID, 30*time.Second).Status)

	job2, err := b.eng.Submit(b.ctx, createSubmission(t, "c2", 3, func(planner.Task) map[string]string {
		return map[string]string{SimDuration: "20ms"}
	}))
	require.NoError(t, err)
	time.Sleep(50 * time.Millisecond)
	require.NoError(t, b.eng.Abort(b.ctx, tenant, "c2", job2.ID, "ann"))
	final := b.waitJob(t, "c2", job2.ID, 30*time.Second)
	stop()
	require.Equal(t, domain.JobAborted, final.Status)
	require.Contains(t, final.StatusMessage, "aborted by ann")
	checkInvariants(t, b)
}

// failingBatches fails every multi-op transaction after the first n, like a
// server that dies while writing a job's tasks.
type failingBatches struct {
	store.Store
	left atomic.Int64
}

func (f *failingBatches) Transact(ctx context.Context, ops []store.Op) error {
	if f.left.Add(-1) < 0 {
		return context.DeadlineExceeded
	}
	return f.Store.Transact(ctx, ops)
}

func TestInterruptedSubmissionIsUndone(t *testing.T) {
	t.Parallel()
	now := time.Now()
	var clock atomic.Int64
	clock.Store(now.UnixNano())
	b := setup(t, nil, Config{Clock: func() time.Time { return time.Unix(0, clock.Load()) }})
	broken := &failingBatches{Store: b.db}
	broken.left.Store(1) // step 1 passes, the first batch of tasks fails
	crashing := New(broken, b.q, b.rec, b.eng.cfg)
	_, err := crashing.Submit(b.ctx, createSubmission(t, "c1", 40, nil))
	require.Error(t, err)

	ten, err := b.acc.GetTenant(b.ctx, tenant)
	require.NoError(t, err)
	require.Equal(t, 1, ten.Usage.Clusters, "quota is held while the job is PENDING")

	r, err := b.eng.RunJanitor(b.ctx)
	require.NoError(t, err)
	require.Zero(t, r.Undone, "too early: the submitter may still be writing")
	clock.Add(int64(3 * time.Minute))
	r, err = b.eng.RunJanitor(b.ctx)
	require.NoError(t, err)
	require.Equal(t, 1, r.Undone)
	_, c, err := b.eng.loadCluster(b.ctx, tenant, "c1")
	require.NoError(t, err)
	require.Equal(t, domain.ClusterTerminated, c.Status)
	require.Contains(t, c.StatusMessage, "did not finish")
	require.Empty(t, b.rec.runs, "nothing of an undone job ran")
	checkInvariants(t, b)
}

func TestRetryContinuesAFailedJobFromItsFailedTasks(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T) {
		b := setup(t, nil, Config{})
		// app/start fails every attempt of the first run and succeeds on the
		// first attempt of the retry; without a rollback plan the job stops
		// FAILED with the cluster held at FAILED.
		log := &idLog{Queue: b.q}
		b.eng.queue = log
		sub := createSubmission(t, "c1", 4, failAppStart(failsFirstRun))
		sub.Plan.Rollback = nil
		job, err := b.eng.Submit(b.ctx, sub)
		require.NoError(t, err)
		stop := b.run(t, 4, 50*time.Millisecond)
		defer stop()
		failed := b.waitJob(t, "c1", job.ID, 30*time.Second)
		require.Equal(t, domain.JobFailed, failed.Status)
		_, c, err := b.eng.loadCluster(b.ctx, tenant, "c1")
		require.NoError(t, err)
		require.Equal(t, domain.ClusterFailed, c.Status)
		require.Contains(t, c.StatusMessage, "app/start failed")
		require.Empty(t, c.ActiveJobID, "a failed job gives its cluster's lock back")
		runsBefore := map[string]int{}
		for _, r := range b.rec.runs {
			runsBefore[r.task]++
		}

		_, err = b.eng.Retry(b.ctx, tenant, "c1", job.ID, "ann")
		require.NoError(t, err)
		final := b.waitJob(t, "c1", job.ID, 30*time.Second)
		require.Equal(t, domain.JobSucceeded, final.Status, "%s%s", final.StatusMessage, b.failures(t, final.ID))
		require.Equal(t, 1, final.Retries)
		log.requireDistinctIDs(t) // attempts' retries and the job's: no message dropped as a duplicate
		_, c, err = b.eng.loadCluster(b.ctx, tenant, "c1")
		require.NoError(t, err)
		require.Equal(t, domain.ClusterActive, c.Status)

		runsAfter := map[string]int{}
		for _, r := range b.rec.runs {
			runsAfter[r.task]++
		}
		for task, n := range runsBefore {
			if runsAfter[task] > n && !strings.Contains(task, "app/start") && !strings.Contains(task, "lb/start") {
				t.Errorf("task %s ran again on retry (%d then %d runs): only failed tasks and what waited on them may run", task, n, runsAfter[task])
			}
		}
		_, err = b.eng.Retry(b.ctx, tenant, "c1", job.ID, "ann")
		require.ErrorIs(t, err, ErrNothingToRetry)
		checkInvariants(t, b)
	})
}

// interleavingStore runs hook once, just before the first transaction: the
// place where a worker's progress count lands between a read and a write.
type interleavingStore struct {
	store.Store
	once sync.Once
	hook func()
}

func (s *interleavingStore) Transact(ctx context.Context, ops []store.Op) error {
	s.once.Do(s.hook)
	return s.Store.Transact(ctx, ops)
}

func TestRetrySurvivesAProgressCountLandingMeanwhile(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, Config{})
	sub := createSubmission(t, "c1", 3, failAppStart(failsFirstRun))
	sub.Plan.Rollback = nil
	job, err := b.eng.Submit(b.ctx, sub)
	require.NoError(t, err)
	stop := b.run(t, 2, 50*time.Millisecond)
	require.Equal(t, domain.JobFailed, b.waitJob(t, "c1", job.ID, 30*time.Second).Status)
	stop() // no worker flushes progress now but the hook below

	landed := false
	racing := &interleavingStore{Store: b.counts, hook: func() {
		require.NoError(t, b.eng.AddProgress(b.ctx, tenant, "c1", job.ID, 1))
		landed = true
	}}
	eng := New(racing, b.q, b.rec, b.eng.cfg)
	_, err = eng.Retry(b.ctx, tenant, "c1", job.ID, "ann")
	require.NoError(t, err, "a progress count is no reason to refuse a retry")
	require.True(t, landed, "the hook ran inside the retry")

	stop = b.run(t, 2, 50*time.Millisecond)
	defer stop()
	require.Equal(t, domain.JobSucceeded, b.waitJob(t, "c1", job.ID, 30*time.Second).Status)
	checkInvariants(t, b)
}

func TestRetryRefusesARolledBackJob(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, Config{})
	job, err := b.eng.Submit(b.ctx, createSubmission(t, "c1", 2, func(pt planner.Task) map[string]string {
		if pt.Action == domain.ActionInstall {
			return map[string]string{SimFailAttempts: "99"}
		}
		return nil
	}))
	require.NoError(t, err)
	stop := b.run(t, 2, 50*time.Millisecond)
	defer stop()
	require.Equal(t, domain.JobFailed, b.waitJob(t, "c1", job.ID, 30*time.Second).Status)
	_, err = b.eng.Retry(b.ctx, tenant, "c1", job.ID, "ann")
	require.ErrorIs(t, err, ErrNothingToRetry)
	checkInvariants(t, b)
}

// confirmingExecutor reports an address for every confirm, as a provider does.
type confirmingExecutor struct{ Simulation }

func (c confirmingExecutor) Execute(ctx context.Context, a Attempt) Result {
	res := c.Simulation.Execute(ctx, a)
	if res.Err == nil && a.Task.Action == domain.ActionConfirm {
		res.Node = &NodeFacts{Addresses: map[string]string{"access_v4": "10.0.0." + strconv.Itoa(a.Node.Num-999)}, HostKey: "ssh-ed25519 AAAA" + a.Node.ID}
	}
	if res.Err == nil && a.Task.Action == domain.ActionBootstrap && (a.Node == nil || a.Node.Addresses["access_v4"] == "") {
		res.Err = errors.New("bootstrap ran before the node's address was recorded")
	}
	return res
}

func TestNodeFactsReachLaterTasksAndTheNode(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, Config{})
	b.rec.inner = confirmingExecutor{}
	job, err := b.eng.Submit(b.ctx, createSubmission(t, "c1", 3, nil))
	require.NoError(t, err)
	stop := b.run(t, 3, 50*time.Millisecond)
	final := b.waitJob(t, "c1", job.ID, 30*time.Second)
	stop()
	require.Equal(t, domain.JobSucceeded, final.Status, "%s%s", final.StatusMessage, b.failures(t, final.ID))
	n, err := b.eng.loadNode(b.ctx, tenant, "c1", "c1-1002")
	require.NoError(t, err)
	require.Equal(t, "10.0.0.3", n.Addresses["access_v4"])
	require.Equal(t, "ssh-ed25519 AAAAc1-1002", n.HostKey)
	require.Equal(t, domain.NodeActive, n.Status)
}

func TestHeartbeatKeepsALongAttemptAlive(t *testing.T) {
	t.Parallel()
	// Each attempt outlives the lease several times over; only the
	// heartbeat keeps the janitor from taking it for lost. The lease is
	// long enough that a loaded machine's scheduling stalls (a 150 ms
	// lease failed at a load average of 17-24) do not outlast it.
	b := setup(t, nil, Config{TaskLease: time.Second})
	job, err := b.eng.Submit(b.ctx, createSubmission(t, "c1", 1, func(pt planner.Task) map[string]string {
		if pt.Action == domain.ActionInstall {
			return map[string]string{SimDuration: "3500ms"}
		}
		return nil
	}))
	require.NoError(t, err)
	stop := b.run(t, 1, 20*time.Millisecond)
	final := b.waitJob(t, "c1", job.ID, 30*time.Second)
	stop()
	require.Equal(t, domain.JobSucceeded, final.Status, "%s%s", final.StatusMessage, b.failures(t, final.ID))
	lt, err := b.eng.loadTask(b.ctx, TaskRef{Tenant: tenant, Cluster: "c1", Job: job.ID, Task: "c1-1000/lb/install"})
	require.NoError(t, err)
	require.Equal(t, 1, lt.task.Attempt, "the first attempt was never timed out")
	checkInvariants(t, b)
}

func TestJanitorDeletesAClusterWhoseLeaseExpired(t *testing.T) {
	t.Parallel()
	var b *testBundle
	expired := make(chan string, 4)
	b = setup(t, nil, Config{ExpireLease: func(ctx context.Context, tenant string, c domain.Cluster) error {
		// What the cluster service does: plan the delete of what exists.
		var nodes []domain.Node
		var ids []string
		for _, n := range layout(c.ID, c.NodeCount) {
			nodes, ids = append(nodes, n), append(ids, n.ID)
		}
		plan, err := planner.Build(planner.Request{Operation: domain.OpDelete, Old: nodes, Services: services()})
		if err != nil {
			return err
		}
		_, err = b.eng.Submit(ctx, Submission{Tenant: tenant, Cluster: c, ClusterStatus: domain.ClusterDeleting,
			Operation: domain.OpDelete, RequestedBy: "janitor", Plan: plan,
			OnSuccess: Effect{ClusterStatus: domain.ClusterTerminated, Message: "lease expired", ReleaseClusters: 1, ReleaseNodes: len(ids), NodeStatus: domain.NodeDeleted, Nodes: ids},
			OnFailure: Effect{ClusterStatus: domain.ClusterFailed}})
		if err == nil {
			expired <- c.ID
		}
		return err
	}})
	sub := createSubmission(t, "c1", 3, nil)
	sub.Cluster.ExpiresAt = time.Now().Add(300 * time.Millisecond)
	job, err := b.eng.Submit(b.ctx, sub)
	require.NoError(t, err)
	stop := b.run(t, 3, 20*time.Millisecond)
	defer stop()
	require.Equal(t, domain.JobSucceeded, b.waitJob(t, "c1", job.ID, 30*time.Second).Status)
	select {
	case id := <-expired:
		require.Equal(t, "c1", id)
	case <-time.After(30 * time.Second):
		t.Fatal("the janitor never expired the lease")
	}
	_, c, err := b.eng.loadCluster(b.ctx, tenant, "c1")
	require.NoError(t, err)
	require.NotEqual(t, job.ID, c.LatestJobID, "a delete job was submitted")
	final := b.waitJob(t, "c1", c.LatestJobID, 30*time.Second)
	require.Equal(t, domain.JobSucceeded, final.Status, "%s%s", final.StatusMessage, b.failures(t, final.ID))
	_, c, err = b.eng.loadCluster(b.ctx, tenant, "c1")
	require.NoError(t, err)
	require.Equal(t, domain.ClusterTerminated, c.Status)
	require.Equal(t, "lease expired", c.StatusMessage)
	require.Len(t, expired, 0, "the lease expired once")
	checkInvariants(t, b)
}
