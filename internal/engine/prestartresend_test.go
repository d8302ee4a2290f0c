package engine

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/queue"
)

// dedupRecorder records the deduplication ids of the pre-start messages
// sent through it.
type dedupRecorder struct {
	queue.Queue
	mu  sync.Mutex
	ids []string
}

func (d *dedupRecorder) Send(ctx context.Context, tenant string, msgs ...queue.Message) error {
	d.mu.Lock()
	for _, m := range msgs {
		if strings.HasPrefix(m.TaskID, preStartCluster+"|") {
			d.ids = append(d.ids, m.Dedup)
		}
	}
	d.mu.Unlock()
	return d.Queue.Send(ctx, tenant, msgs...)
}

func (d *dedupRecorder) sent() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.ids...)
}

// takeOne receives the one message the queue holds and deletes it, as a
// worker of an older release does with a pre-start message (it reads it as
// a task that does not exist): the message is gone, and the queue has seen
// its deduplication id.
func (b *testBundle) takeOne(t *testing.T) queue.Delivery {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ds, err := b.q.Receive(b.ctx, tenant, queue.MaxBatch, 200*time.Millisecond, time.Minute)
		require.NoError(t, err)
		if len(ds) > 0 {
			require.Len(t, ds, 1)
			require.NoError(t, b.q.Ack(b.ctx, tenant, ds[0].Receipt))
			return ds[0]
		}
		require.True(t, time.Now().Before(deadline), "the submission sent no message")
	}
}

// TestALostPreStartMessageIsSentAgainByTheJanitor: a job waits for its
// pre-start hooks and the message that would ask them is lost after the
// queue saw it. The janitor sends it again, with a deduplication id the
// queue has not seen, and the job starts. Before the fix nothing sent it
// again and the janitor failed the job after SubmitTimeout ("the pre-start
// hooks were not asked in time").
func TestALostPreStartMessageIsSentAgainByTheJanitor(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T) {
		b := setup(t, nil, Config{ResendAfter: 100 * time.Millisecond, SubmitTimeout: 20 * time.Second})
		hook := &gate{}
		b.eng.SetHooks(hook)
		job, err := b.eng.Submit(b.ctx, createSubmission(t, "c1", 3, nil))
		require.NoError(t, err)
		lj, err := b.eng.loadJob(b.ctx, tenant, "c1", job.ID)
		require.NoError(t, err)
		require.Equal(t, domain.JobPending, lj.job.Status)
		require.True(t, lj.job.AwaitingPreStart)

		lost := b.takeOne(t)
		require.Equal(t, TaskRef{Tenant: tenant, Cluster: preStartCluster, Job: "c1", Task: job.ID}.String(), lost.TaskID)

		stop := b.run(t, 3, 50*time.Millisecond)
		defer stop()
		final := b.waitJob(t, "c1", job.ID, 60*time.Second)
		require.Equal(t, domain.JobSucceeded, final.Status, "%s%s", final.StatusMessage, b.failures(t, job.ID))
		require.Positive(t, final.PreStartSends, "the janitor sent the question again")
		hook.mu.Lock()
		require.Equal(t, 1, hook.asked, "the lost message asked nothing; the re-sent one asked once")
		hook.mu.Unlock()
		checkInvariants(t, b)
	})
}

// TestAPreStartQuestionSentThreeTimesStartsTheJobOnce: the janitor's
// re-send and a restarted process's re-send add two messages to one that
// was never lost. Each has an id of its own (the queue keeps all three);
// the first answer starts the job, the others find it started and ask
// nothing, and every task runs once.
func TestAPreStartQuestionSentThreeTimesStartsTheJobOnce(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T) {
		b := setup(t, nil, Config{ResendAfter: 50 * time.Millisecond, SubmitTimeout: time.Minute})
		rec := &dedupRecorder{Queue: b.q}
		b.eng.queue = rec
		hook := &gate{}
		b.eng.SetHooks(hook)
		job, err := b.eng.Submit(b.ctx, createSubmission(t, "c1", 3, nil))
		require.NoError(t, err)

		// No worker runs yet: the janitor takes the first message for lost
		// once it is older than preStartResendAfter.
		deadline := time.Now().Add(30 * time.Second)
		for {
			r, err := b.eng.RunJanitor(b.ctx)
			require.NoError(t, err)
			if r.PreStartsResent > 0 {
				require.Equal(t, 1, r.PreStartsResent)
				require.Zero(t, r.Undone)
				break
			}
			require.True(t, time.Now().Before(deadline), "the janitor never sent the question again")
			time.Sleep(20 * time.Millisecond)
		}
		n, err := b.eng.ResendReady(b.ctx)
		require.NoError(t, err)
		require.Equal(t, 1, n, "the job's question, and no task: none is READY before the job starts")
		ids := rec.sent()
		require.Len(t, ids, 3)
		require.Equal(t, "prestart#"+job.ID, ids[0], "the first message keeps the id older releases give it")
		require.NotEqual(t, ids[0], ids[1])
		require.NotEqual(t, ids[1], ids[2])
		require.NotEqual(t, ids[0], ids[2])

		stop := b.run(t, 3, time.Hour) // no janitor pass: the queue holds all three
		defer stop()
		final := b.waitJob(t, "c1", job.ID, 60*time.Second)
		require.Equal(t, domain.JobSucceeded, final.Status, "%s%s", final.StatusMessage, b.failures(t, job.ID))
		hook.mu.Lock()
		require.Equal(t, 1, hook.asked, "the later messages found the job started")
		hook.mu.Unlock()
		checkInvariants(t, b)
	})
}

// TestAPreStartQuestionResentAtStartGetsAFreshSubmitTimeout: a process
// that lost its queue with its last run asks again at start, and the
// janitor's "not asked in time" counts from then, not from a submission
// made before the process stopped.
func TestAPreStartQuestionResentAtStartGetsAFreshSubmitTimeout(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	set := func(at time.Time) { mu.Lock(); now = at; mu.Unlock() }
	b := setup(t, nil, Config{ResendAfter: time.Hour, SubmitTimeout: time.Hour, Clock: clock})
	b.eng.SetHooks(&gate{})
	job, err := b.eng.Submit(b.ctx, createSubmission(t, "c1", 2, nil))
	require.NoError(t, err)
	submitted, err := b.eng.loadJob(b.ctx, tenant, "c1", job.ID)
	require.NoError(t, err)

	// The process comes back 50 minutes later.
	later := submitted.job.PreStartAskedAt.Add(50 * time.Minute)
	set(later)
	n, err := b.eng.ResendReady(b.ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n)

	// 20 minutes after that the submission is 70 minutes old, the question
	// 20: the janitor neither undoes the job nor sends the question again.
	set(later.Add(20 * time.Minute))
	r, err := b.eng.RunJanitor(b.ctx)
	require.NoError(t, err)
	require.Zero(t, r.Undone)
	require.Zero(t, r.PreStartsResent)
	lj, err := b.eng.loadJob(b.ctx, tenant, "c1", job.ID)
	require.NoError(t, err)
	require.Equal(t, domain.JobPending, lj.job.Status)

	// An hour after the restart nobody has answered: the janitor gives up.
	set(later.Add(61 * time.Minute))
	r, err = b.eng.RunJanitor(b.ctx)
	require.NoError(t, err)
	require.Equal(t, 1, r.Undone)
	lj, err = b.eng.loadJob(b.ctx, tenant, "c1", job.ID)
	require.NoError(t, err)
	require.Equal(t, domain.JobFailed, lj.job.Status)
	require.Contains(t, lj.job.StatusMessage, "pre-start hooks were not asked in time")
}

// TestASecondWriterDoesNotMarkAJobAgain: a staged job has two writers
// that may both reach its pre-start gate (the submitter's background one
// and the janitor's). The second, holding the job as it was before the
// first marked it, must leave the job as the first wrote it: before the
// fix it wrote the mark again, which changed the job's version under the
// worker answering the first question, so the worker's veto found the job
// changed and did nothing and the job stayed PENDING until the janitor
// asked again (TestAVetoedStagedAddServicesPutsTheLayoutsBack failed about
// one run in six that way).
func TestASecondWriterDoesNotMarkAJobAgain(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T) {
		b := setup(t, nil, Config{})
		b.eng.inlineBatches = 0 // staged
		hook := &gate{}
		hook.set(true)
		b.eng.SetHooks(hook)
		sub := createSubmission(t, "c1", 2, nil)
		job, err := b.eng.Submit(b.ctx, sub)
		require.NoError(t, err)
		before, err := b.eng.loadJob(b.ctx, tenant, "c1", job.ID)
		require.NoError(t, err)
		stale := before.job // as the second writer read it
		require.NoError(t, b.eng.ContinueSubmission(b.ctx, tenant, "c1", job.ID))
		marked, err := b.eng.loadJob(b.ctx, tenant, "c1", job.ID)
		require.NoError(t, err)
		require.True(t, marked.job.AwaitingPreStart)

		require.False(t, stale.AwaitingPreStart)
		require.NoError(t, b.eng.start(b.ctx, tenant, "c1", &stale, nil, nil))
		after, err := b.eng.loadJob(b.ctx, tenant, "c1", job.ID)
		require.NoError(t, err)
		require.Equal(t, marked.item.Version, after.item.Version, "the second writer wrote the job again")

		// The worker answering the first question ends the job.
		stop := b.run(t, 1, 50*time.Millisecond)
		defer stop()
		final := b.waitJob(t, "c1", job.ID, 30*time.Second)
		require.Equal(t, domain.JobFailed, final.Status)
		require.True(t, final.Withdrawn)
	})
}
