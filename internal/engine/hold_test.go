package engine

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/queue"
	"github.com/heddle-io/heddle/internal/store"
)

// visibilityLog is a queue that records every visibility change, in order.
type visibilityLog struct {
	queue.Queue
	mu      sync.Mutex
	changes []visibilityChange
}

type visibilityChange struct {
	receipt    string
	visibility time.Duration
	acked      bool
}

func (q *visibilityLog) Extend(ctx context.Context, tenant, receipt string, visibility time.Duration) error {
	q.mu.Lock()
	q.changes = append(q.changes, visibilityChange{receipt: receipt, visibility: visibility})
	q.mu.Unlock()
	return q.Queue.Extend(ctx, tenant, receipt, visibility)
}

func (q *visibilityLog) ExtendBatch(ctx context.Context, tenant string, receipts []string, visibility time.Duration) error {
	for _, r := range receipts {
		if err := q.Extend(ctx, tenant, r, visibility); err != nil && !errors.Is(err, queue.ErrReceiptInvalid) {
			return err
		}
	}
	return nil
}

func (q *visibilityLog) Ack(ctx context.Context, tenant, receipt string) error {
	q.mu.Lock()
	q.changes = append(q.changes, visibilityChange{receipt: receipt, acked: true})
	q.mu.Unlock()
	return q.Queue.Ack(ctx, tenant, receipt)
}

func (q *visibilityLog) DeadLetter(tenant string) (string, int, error) {
	if dl, ok := q.Queue.(queue.DeadLetterer); ok {
		return dl.DeadLetter(tenant)
	}
	return "", 0, nil
}

// TestHandleBatchHoldsItsMessagesForVisibility: a Lambda's batch arrives
// hidden for the queue's visibility timeout (15 minutes and more); the
// engine holds every message it has not settled at Visibility instead, so
// a worker killed mid-batch leaves nothing hidden longer than that, and it
// never holds a message after settling it (a delay or an ack is the last
// word).
func TestHandleBatchHoldsItsMessagesForVisibility(t *testing.T) {
	t.Parallel()
	q := &visibilityLog{Queue: openQueue(t)}
	b := setup(t, q, Config{Visibility: 3 * time.Second})
	_, err := b.eng.Submit(b.ctx, createSubmission(t, "c1", 3, nil))
	require.NoError(t, err)
	ds, err := q.Receive(b.ctx, tenant, queue.MaxBatch, time.Second, 15*time.Minute)
	require.NoError(t, err)
	require.Greater(t, len(ds), 1, "the job's roots, one per node")

	keep := b.eng.HandleBatch(b.ctx, tenant, ds)
	require.Empty(t, keep)

	q.mu.Lock()
	defer q.mu.Unlock()
	for _, d := range ds {
		var mine []visibilityChange
		for _, c := range q.changes {
			if c.receipt == d.Receipt {
				mine = append(mine, c)
			}
		}
		require.NotEmpty(t, mine, "message %s", d.TaskID)
		require.Equal(t, 3*time.Second, mine[0].visibility, "the first change to %s shortens its visibility to the engine's", d.TaskID)
		require.False(t, mine[0].acked, "held before it was settled: %s", d.TaskID)
		last := mine[len(mine)-1]
		require.True(t, last.acked, "nothing touches %s after its ack: %+v", d.TaskID, mine)
	}
}

// deadLetterQueue is a queue with a dead-letter queue after maxReceives.
type deadLetterQueue struct {
	queue.Queue
	maxReceives int
}

func (q deadLetterQueue) DeadLetter(tenant string) (string, int, error) {
	return "heddle-test-" + tenant + "_dlq.fifo", q.maxReceives, nil
}

// TestAPoisonMessageFailsItsJobOnItsLastDelivery: a message whose handling
// fails every time (here its task's item cannot be read) comes back after a
// backoff, not after the visibility timeout; on its last delivery before
// the dead-letter queue its job fails with a message naming the failure and
// the queue; other groups of the batch go on meanwhile.
func TestAPoisonMessageFailsItsJobOnItsLastDelivery(t *testing.T) {
	t.Parallel()
	q := &visibilityLog{Queue: deadLetterQueue{Queue: openQueue(t), maxReceives: 3}}
	b := setup(t, q, Config{Backoff: time.Second, Visibility: 10 * time.Second})
	job, err := b.eng.Submit(b.ctx, createSubmission(t, "c1", 2, nil))
	require.NoError(t, err)
	ds, err := q.Receive(b.ctx, tenant, queue.MaxBatch, time.Second, time.Minute)
	require.NoError(t, err)
	require.Len(t, ds, 2, "the job's two roots")
	poison := ds[0]
	ref, err := ParseTaskRef(tenant, poison.TaskID)
	require.NoError(t, err)
	// An item this engine cannot read (a newer format, or damage).
	_, err = b.db.Write(b.ctx, store.Put(store.Item{Key: taskKey(tenant, ref.Job, ref.Task), Data: []byte(`{"status":7}`)}, store.Condition{}))
	require.NoError(t, err)

	for received := 1; received <= 3; received++ {
		poison.Received = received
		batch := []queue.Delivery{poison}
		if received == 1 {
			batch = append(batch, ds[1])
		}
		keep := b.eng.HandleBatch(b.ctx, tenant, batch)
		require.Equal(t, []int{0}, keep, "delivery %d: the poison message stays, the other root was handled", received)
		j, err := b.eng.Job(b.ctx, tenant, "c1", job.ID)
		require.NoError(t, err)
		if received < 3 {
			require.Equal(t, domain.JobRunning, j.Status, "delivery %d", received)
			continue
		}
		require.Equal(t, domain.JobFailing, j.Status, "its last delivery fails the job (which settles once the item can be read)")
		require.Contains(t, j.StatusMessage, ref.Task)
		require.Contains(t, j.StatusMessage, "heddle-test-"+tenant+"_dlq.fifo")
		require.Contains(t, j.StatusMessage, "unreadable item")
	}
	q.mu.Lock()
	var delays []time.Duration
	for _, c := range q.changes {
		if c.receipt == poison.Receipt && c.visibility != b.eng.cfg.Visibility && !c.acked {
			delays = append(delays, c.visibility)
		}
	}
	q.mu.Unlock()
	require.Equal(t, []time.Duration{time.Second, 2 * time.Second, 4 * time.Second}, delays, "each failure delays the message by a backoff that grows with its receives")

	// Once the item reads again, the failing job settles: FAILED, its reason kept.
	_, err = b.db.Write(b.ctx, store.Delete(taskKey(tenant, ref.Job, ref.Task), store.Condition{}))
	require.NoError(t, err)
	stop := b.run(t, 2, 50*time.Millisecond)
	defer stop()
	final := b.waitJob(t, "c1", job.ID, 30*time.Second)
	require.Equal(t, domain.JobFailed, final.Status)
	require.Contains(t, final.StatusMessage, "_dlq.fifo")
}

// TestResentMessagesDoNotWaitBehindTheStuckOne: the roots' messages are
// stuck in flight (a worker took them and died before it could hold
// them: hidden for the queue's 15 minutes); the janitor's re-sends are in
// groups of their own, so they are delivered at once rather than behind
// the stuck messages of their nodes' groups.
func TestResentMessagesDoNotWaitBehindTheStuckOne(t *testing.T) {
	t.Parallel()
	var ahead atomic.Int64
	clock := func() time.Time { return time.Now().Add(time.Duration(ahead.Load())) }
	b := setup(t, nil, Config{ResendAfter: time.Minute, Clock: clock})
	_, err := b.eng.Submit(b.ctx, createSubmission(t, "c1", 2, nil))
	require.NoError(t, err)
	stuck, err := b.q.Receive(b.ctx, tenant, queue.MaxBatch, time.Second, 15*time.Minute)
	require.NoError(t, err)
	require.Len(t, stuck, 2)

	ahead.Store(int64(2 * time.Minute))
	r, err := b.eng.RunJanitor(b.ctx)
	require.NoError(t, err)
	require.Equal(t, 2, r.Resent)
	resent, err := b.q.Receive(b.ctx, tenant, queue.MaxBatch, time.Second, time.Minute)
	require.NoError(t, err)
	require.Len(t, resent, 2, "the re-sent roots are delivered while the stuck messages are still in flight")
	for i, d := range resent {
		require.NotEqual(t, stuck[0].Group, d.Group, "resent %d", i)
		require.NotEqual(t, stuck[1].Group, d.Group, "resent %d", i)
	}
}

func TestGroups(t *testing.T) {
	t.Parallel()
	require.Equal(t, "c1#c1-1000", group("c1", "c1-1000", "c1-1000/base/install", 0))
	require.Equal(t, "c1#c1-1000#r2", group("c1", "c1-1000", "c1-1000/base/install", 2))
	require.Regexp(t, `^c1#j[0-9a-f]{8}$`, group("c1", "", "join/x", 0))
	long := group("c1", strings.Repeat("n", 200), "t", 3)
	require.LessOrEqual(t, len(long), queue.MaxGroupLength)
	require.NotEqual(t, long, group("c1", strings.Repeat("n", 200), "t", 4), "sends still tell long groups apart")
}
