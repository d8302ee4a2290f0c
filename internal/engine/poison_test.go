package engine

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/queue"
	"github.com/heddle-io/heddle/internal/store"
	"github.com/heddle-io/heddle/planner"
)

// dyingStore plays a worker that dies at one task's claim: armed, a write
// of that task's item ends the delivery's context (the process is gone)
// and never lands. Nothing after it runs, just as after a kill -9, an
// out-of-memory kill or a Lambda timeout there.
type dyingStore struct {
	store.Store
	mu     sync.Mutex
	target store.Key
	kill   context.CancelFunc // set while a delivery that dies runs
}

func (s *dyingStore) arm(target store.Key, kill context.CancelFunc) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.target, s.kill = target, kill
}

func (s *dyingStore) Write(ctx context.Context, op store.Op) (store.Item, error) {
	s.mu.Lock()
	kill := s.kill
	if op.Key != s.target {
		kill = nil
	}
	s.mu.Unlock()
	if kill != nil {
		kill()
		return store.Item{}, context.Canceled
	}
	return s.Store.Write(ctx, op)
}

// poisonBench is a job of two roots on a queue whose dead-letter queue
// takes a message after maxReceives receives, with one root's message in
// hand to deliver as a test likes.
type poisonBench struct {
	*testBundle
	q     deadLetterQueue
	dying *dyingStore
	job   domain.Job
	msg   queue.Delivery
	ref   TaskRef
}

func setupPoison(t *testing.T, maxReceives int) *poisonBench {
	t.Helper()
	q := deadLetterQueue{Queue: openQueue(t), maxReceives: maxReceives}
	b := setup(t, q, Config{Backoff: time.Millisecond, ResendAfter: 100 * time.Millisecond})
	dying := &dyingStore{Store: b.counts}
	b.eng = New(dying, q, b.rec, b.eng.cfg)
	job, err := b.eng.Submit(b.ctx, createSubmission(t, "c1", 2, nil))
	require.NoError(t, err)
	ds, err := q.Receive(b.ctx, tenant, queue.MaxBatch, time.Second, time.Second)
	require.NoError(t, err)
	require.Len(t, ds, 2, "the job's two roots")
	ref, err := ParseTaskRef(tenant, ds[0].TaskID)
	require.NoError(t, err)
	return &poisonBench{testBundle: b, q: q, dying: dying, job: job, msg: ds[0], ref: ref}
}

// deliver hands d to a worker; dies says the worker dies at the task's
// claim. It returns the indexes HandleBatch kept (nil when it died).
func (p *poisonBench) deliver(t *testing.T, d queue.Delivery, dies bool) []int {
	t.Helper()
	ctx, kill := context.WithCancel(p.ctx)
	defer kill()
	if dies {
		p.dying.arm(taskKey(tenant, p.ref.Job, p.ref.Task), kill)
		defer p.dying.arm(store.Key{}, nil)
	}
	keep := p.eng.HandleBatch(ctx, tenant, []queue.Delivery{d})
	if dies {
		require.Error(t, ctx.Err(), "delivery %d was to die at the claim", d.Received)
		return nil
	}
	return keep
}

// resend is the janitor sending the still-READY task again, once its
// message is taken for lost; it returns the new message's first delivery.
func (p *poisonBench) resend(t *testing.T) queue.Delivery {
	t.Helper()
	// An unclaimed root has no item (chunks.go); the janitor sends it
	// again ResendAfter after its job started.
	time.Sleep(p.eng.cfg.ResendAfter + 10*time.Millisecond)
	r, err := p.eng.RunJanitor(p.ctx)
	require.NoError(t, err)
	require.Positive(t, r.Resent)
	for {
		ds, err := p.q.Receive(p.ctx, tenant, queue.MaxBatch, time.Second, time.Second)
		require.NoError(t, err)
		require.NotEmpty(t, ds, "the janitor's re-send")
		for _, d := range ds {
			if d.TaskID == p.msg.TaskID && d.Dedup != p.msg.Dedup {
				return d
			}
		}
	}
}

func (p *poisonBench) records(t *testing.T) []store.Item {
	t.Helper()
	page, err := p.db.Query(p.ctx, deliveryRecordsPK(tenant, p.job.ID), store.Query{Limit: store.MaxPageSize})
	require.NoError(t, err)
	return page.Items
}

// finish runs workers and the janitor until the job ends, and checks that
// its delivery records went with it.
func (p *poisonBench) finish(t *testing.T) jobRecord {
	t.Helper()
	stop := p.run(t, 2, 20*time.Millisecond)
	defer stop()
	final := p.waitJob(t, "c1", p.job.ID, time.Minute)
	// The finisher deletes them just after the job's final write.
	require.Eventually(t, func() bool { return len(p.records(t)) == 0 }, 10*time.Second, 10*time.Millisecond,
		"an ended job keeps no delivery records")
	return final
}

// longAgo says a delivery's message was first received long before: its
// earlier deliveries may have died with their workers.
var longAgo = time.Now().Add(-time.Hour)

// TestAMessageThatKillsEveryWorkerIsPoison: a message whose every worker
// dies at its task's claim (killed, out of memory, out of time) reports no
// failure at all. Each delivery after a message's first marks its start
// before the claim; none ever gets the task claimed, so once the marks of
// the message and of the janitor's re-send reach the queue's
// maxReceiveCount, the next delivery fails the job, saying why, instead of
// leaving it to cycle until the idle rule an hour later. The job's end
// then deletes the records.
func TestAMessageThatKillsEveryWorkerIsPoison(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T) {
		p := setupPoison(t, 3)
		msg := p.msg
		msg.FirstReceived = longAgo
		for received := 1; received <= 3; received++ {
			msg.Received = received
			p.deliver(t, msg, true)
		}
		require.Len(t, p.records(t), 1, "deliveries 2 and 3 marked, in one record")
		j, err := p.eng.Job(p.ctx, tenant, "c1", p.job.ID)
		require.NoError(t, err)
		require.Equal(t, domain.JobRunning, j.Status, "two dead deliveries are not yet maxReceiveCount")

		// SQS moves it to the dead-letter queue; the janitor sends the
		// task again, and its workers die too.
		again := p.resend(t)
		again.FirstReceived = longAgo
		again.Received = 1
		p.deliver(t, again, true) // a first delivery: unmarked
		again.Received = 2
		p.deliver(t, again, true) // the third mark
		again.Received = 3
		require.Empty(t, p.deliver(t, again, false), "the verdict acknowledges the delivery; nothing runs")

		j, err = p.eng.Job(p.ctx, tenant, "c1", p.job.ID)
		require.NoError(t, err)
		require.Contains(t, []domain.JobStatus{domain.JobFailing, domain.JobRollingBack, domain.JobFailed}, j.Status)
		require.Contains(t, j.StatusMessage, "task "+p.ref.Task)
		require.Contains(t, j.StatusMessage, "3 started and never ended")
		require.Contains(t, j.StatusMessage, "_dlq.fifo")
		lt, err := p.eng.loadTaskOrDeferred(p.ctx, p.ref)
		require.NoError(t, err)
		require.Equal(t, domain.TaskReady, lt.task.Status, "the poisoned task never ran")

		final := p.finish(t)
		require.Equal(t, domain.JobFailed, final.Status)
		require.Contains(t, final.StatusMessage, "_dlq.fifo")
	})
}

// TestAWorkerKilledOnceFailsNothing: a worker killed with a message (a
// chaos test's kill -9) leaves one mark at most; the next delivery claims
// the task and the job succeeds, and its end deletes the record.
func TestAWorkerKilledOnceFailsNothing(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T) {
		p := setupPoison(t, 3)
		msg := p.msg
		msg.FirstReceived = longAgo
		msg.Received = 1
		p.deliver(t, msg, true)
		msg.Received = 2
		p.deliver(t, msg, true) // marked
		require.Len(t, p.records(t), 1)
		msg.Received = 3 // the last delivery before the dead-letter queue
		require.Empty(t, p.deliver(t, msg, false), "handled and acknowledged")
		lt, err := p.eng.loadTaskOrDeferred(p.ctx, p.ref)
		require.NoError(t, err)
		require.NotEqual(t, domain.TaskReady, lt.task.Status, "the task ran")
		// The other root's message is still in flight from the first
		// receive; it comes back after its visibility.
		final := p.finish(t)
		require.Equal(t, domain.JobSucceeded, final.Status, "%s%s", final.StatusMessage, p.failures(t, p.job.ID))
	})
}

// TestHandBacksAndDelaysNeverMakeAMessagePoison: deliveries that end
// before the task's own work starts (a message of a newer format handed
// back during a deploy, a retry waiting out its backoff, a message handed
// to a fresh invocation) write nothing and count for nothing, however
// many there are, as do deliveries received again soon after their
// message's first receive.
func TestHandBacksAndDelaysNeverMakeAMessagePoison(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T) {
		p := setupPoison(t, 2)
		msg := p.msg
		msg.FirstReceived = longAgo

		newer := msg
		newer.Format = FormatVersion + 1
		for received := 1; received <= 6; received++ {
			newer.Received = received
			require.Equal(t, []int{0}, p.deliver(t, newer, false), "handed back")
		}

		// A retry's backoff: the task is READY but not before ReadyAt.
		// (An unclaimed root has no item yet: give it one.)
		lt, err := p.eng.loadTaskOrDeferred(p.ctx, p.ref)
		require.NoError(t, err)
		require.Zero(t, lt.item.Version, "a deferred root")
		lt.task.ReadyAt = time.Now().Add(time.Hour)
		key := taskKey(tenant, p.ref.Job, p.ref.Task)
		_, err = p.db.Write(p.ctx, store.Put(taskItem(key, lt.task), store.Condition{MustNotExist: true}))
		require.NoError(t, err)
		for received := 7; received <= 12; received++ {
			msg.Received = received
			require.Equal(t, []int{0}, p.deliver(t, msg, false), "kept for its backoff")
		}
		require.Empty(t, p.records(t), "nothing marked")

		// Back to ready. Received again soon after its first receive (a
		// hand-off to a fresh invocation, a release from behind a kept
		// message): no worker can have died with it, and none is marked,
		// even when this one dies.
		lt, err = p.eng.loadTask(p.ctx, p.ref)
		require.NoError(t, err)
		lt.task.ReadyAt = time.Now()
		_, err = p.db.Write(p.ctx, store.Update(key, store.Condition{Version: lt.item.Version}, taskChanges(key, lt.task)))
		require.NoError(t, err)
		soon := msg
		soon.FirstReceived = time.Now()
		for received := 13; received <= 16; received++ {
			soon.Received = received
			p.deliver(t, soon, true)
		}
		require.Empty(t, p.records(t), "nothing marked")

		j, err := p.eng.Job(p.ctx, tenant, "c1", p.job.ID)
		require.NoError(t, err)
		require.Equal(t, domain.JobRunning, j.Status, j.StatusMessage)
		msg.Received = 17
		require.Empty(t, p.deliver(t, msg, false), "handled at last")
		final := p.finish(t)
		require.Equal(t, domain.JobSucceeded, final.Status, "%s%s", final.StatusMessage, p.failures(t, p.job.ID))
	})
}

// panickingStore panics on reading one item, as a handler bug would on
// something in it.
type panickingStore struct {
	store.Store
	target store.Key
}

func (s *panickingStore) Get(ctx context.Context, k store.Key) (store.Item, error) {
	if k == s.target {
		panic("a bug met this item")
	}
	return s.Store.Get(ctx, k)
}

// TestAMessageThatPanicsEveryTimeIsPoison: a panic while handling a
// message is that message's failure (the worker and its other messages go
// on), so a message that panics on every delivery fails its job with the
// panic as the reason.
func TestAMessageThatPanicsEveryTimeIsPoison(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T) {
		p := setupPoison(t, 3)
		key := taskKey(tenant, p.ref.Job, p.ref.Task)
		p.eng = New(&panickingStore{Store: p.dying, target: key}, p.q, p.rec, p.eng.cfg)
		msg := p.msg
		for received := 1; received <= 3; received++ {
			msg.Received = received
			require.Equal(t, []int{0}, p.deliver(t, msg, false), "delivery %d: the failed message stays", received)
		}
		j, err := p.eng.Job(p.ctx, tenant, "c1", p.job.ID)
		require.NoError(t, err)
		require.Contains(t, []domain.JobStatus{domain.JobFailing, domain.JobRollingBack, domain.JobFailed}, j.Status)
		require.Contains(t, j.StatusMessage, "3 failed in the handler")
		require.Contains(t, j.StatusMessage, "panicked: a bug met this item")
	})
}

// unclaimableRollback refuses every claim of a rollback task (a write
// that makes it RUNNING), as DynamoDB refuses an item grown past 400 KB.
type unclaimableRollback struct{ store.Store }

func (s *unclaimableRollback) Write(ctx context.Context, op store.Op) (store.Item, error) {
	status := op.Item.Status
	if op.Changes.Status != nil {
		status = *op.Changes.Status
	}
	if _, rest, _ := store.TenantOf(op.Key.PK); strings.HasPrefix(rest, "TASKS#") && strings.HasPrefix(op.Key.SK, planner.RollbackPrefix) && status == string(domain.TaskRunning) {
		return store.Item{}, errors.New("ValidationException: Item size has exceeded the maximum allowed size (a test's)")
	}
	return s.Store.Write(ctx, op)
}

// TestAPoisonedRollbackTaskEndsTheRollback: a rollback task whose message
// can never be handled ends its job's rollback as its last failure would
// (FAILED, saying why), rather than leave the job ROLLING_BACK until the
// idle rule.
func TestAPoisonedRollbackTaskEndsTheRollback(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T) {
		q := deadLetterQueue{Queue: openQueue(t), maxReceives: 3}
		b := setup(t, q, Config{})
		b.eng = New(&unclaimableRollback{Store: b.counts}, q, b.rec, b.eng.cfg)
		job, err := b.eng.Submit(b.ctx, createSubmission(t, "c1", 4, failAppStart(alwaysFails)))
		require.NoError(t, err)
		stop := b.run(t, 2, 50*time.Millisecond)
		defer stop()
		final := b.waitJob(t, "c1", job.ID, time.Minute)
		require.Equal(t, domain.JobFailed, final.Status)
		require.Contains(t, final.StatusMessage, "rollback failed: task "+planner.RollbackPrefix)
		require.Contains(t, final.StatusMessage, "3 failed in the handler")
		require.Contains(t, final.StatusMessage, "Item size has exceeded")
		require.Eventually(t, func() bool {
			page, err := b.db.Query(b.ctx, deliveryRecordsPK(tenant, job.ID), store.Query{Limit: store.MaxPageSize})
			require.NoError(t, err)
			return len(page.Items) == 0
		}, 10*time.Second, 10*time.Millisecond, "an ended job keeps no delivery records")
	})
}

// TestARetryStartsWithoutDeliveryRecords: a retried job's tasks start with
// no delivery record, even one its end failed to delete (a finisher that
// died between the job's final write and the deletion): the marks of a
// task that was poison would fail the retry at its first marked delivery.
func TestARetryStartsWithoutDeliveryRecords(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T) {
		q := deadLetterQueue{Queue: openQueue(t), maxReceives: 3}
		b := setup(t, q, Config{})
		sub := createSubmission(t, "c1", 4, failAppStart(failsFirstRun))
		sub.Plan.Rollback = nil
		job, err := b.eng.Submit(b.ctx, sub)
		require.NoError(t, err)
		stop := b.run(t, 4, 50*time.Millisecond)
		defer stop()
		require.Equal(t, domain.JobFailed, b.waitJob(t, "c1", job.ID, 30*time.Second).Status)

		left := deliveryRecordKey(TaskRef{Tenant: tenant, Cluster: "c1", Job: job.ID, Task: "c1-1002/app/start"}, 4)
		_, err = b.db.Write(b.ctx, store.Update(left, store.Condition{}, store.Changes{Set: map[string]int64{"d0.2": markStarted, "d0.3": markStarted, "d1.2": markStarted}}))
		require.NoError(t, err)
		_, err = b.eng.Retry(b.ctx, tenant, "c1", job.ID, "ann")
		require.NoError(t, err)
		_, err = b.db.Get(b.ctx, left)
		require.ErrorIs(t, err, store.ErrNotFound, "the retry deleted the leftover record")
		final := b.waitJob(t, "c1", job.ID, 30*time.Second)
		require.Equal(t, domain.JobSucceeded, final.Status, "%s%s", final.StatusMessage, b.failures(t, final.ID))
	})
}
