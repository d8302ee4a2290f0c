package engine

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/queue"
	"github.com/heddle-io/heddle/internal/store"
)

// blinkingStore fails its next Get once armed: a throttled or dropped
// request, the kind of transient failure a retry gets past.
type blinkingStore struct {
	store.Store
	armed atomic.Bool
}

var errBlink = errors.New("ProvisionedThroughputExceededException: the request rate is too high (a test's blink)")

func (s *blinkingStore) Get(ctx context.Context, k store.Key) (store.Item, error) {
	if s.armed.CompareAndSwap(true, false) {
		return store.Item{}, errBlink
	}
	return s.Store.Get(ctx, k)
}

// TestOnlyAMessageThatFailedEveryDeliveryIsPoison: SQS counts every
// receive, so workers that die before they get to a message (killed
// Lambdas, timeouts with an earlier message of the batch) bring it to its
// last delivery before the dead-letter queue without its handling ever
// failing. A transient failure on that last delivery must not fail the
// job as poisoned: the message goes to the dead-letter queue and the
// janitor sends its task again, and the job succeeds. Only a message whose
// deliveries went wrong on their own maxReceiveCount times fails its job
// (workers that die with it: TestAMessageThatKillsEveryWorkerIsPoison).
//
// Each pattern is the fate of the message's deliveries, up to the queue's
// maxReceiveCount (3): "crash" (received, then the worker died before
// handling it: nothing ran), "fail" (handled, and handling failed).
func TestOnlyAMessageThatFailedEveryDeliveryIsPoison(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name     string
		fates    []string
		poisoned bool
	}{
		{"crashes then one failure", []string{"crash", "crash", "fail"}, false},
		{"a crash between failures", []string{"fail", "crash", "fail"}, false},
		{"failed every time", []string{"fail", "fail", "fail"}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			eachBackend(t, func(t *testing.T) { deliverUntilDeadLetter(t, tt.fates, tt.poisoned) })
		})
	}
}

// deliverUntilDeadLetter gives a root's message the fates (see
// TestOnlyAMessageThatFailedEveryDeliveryIsPoison) and checks its job.
func deliverUntilDeadLetter(t *testing.T, fates []string, poisoned bool) {
	q := deadLetterQueue{Queue: openQueue(t), maxReceives: len(fates)}
	b := setup(t, q, Config{Backoff: time.Millisecond, ResendAfter: 200 * time.Millisecond})
	blink := &blinkingStore{Store: b.counts}
	b.eng = New(blink, q, b.rec, b.eng.cfg)
	job, err := b.eng.Submit(b.ctx, createSubmission(t, "c1", 2, nil))
	require.NoError(t, err)
	ds, err := q.Receive(b.ctx, tenant, queue.MaxBatch, time.Second, time.Minute)
	require.NoError(t, err)
	require.Len(t, ds, 2, "the job's two roots")
	msg := ds[0]

	for i, fate := range fates {
		msg.Received = i + 1
		if fate == "crash" {
			continue // a worker took it and died: SQS counted the receive, nothing else happened
		}
		blink.armed.Store(true)
		keep := b.eng.HandleBatch(b.ctx, tenant, []queue.Delivery{msg})
		require.False(t, blink.armed.Load(), "delivery %d met the blink", msg.Received)
		require.Equal(t, []int{0}, keep, "delivery %d: the failed message stays", msg.Received)
	}
	j, err := b.eng.Job(b.ctx, tenant, "c1", job.ID)
	require.NoError(t, err)
	if poisoned {
		require.Contains(t, []domain.JobStatus{domain.JobFailing, domain.JobRollingBack, domain.JobFailed}, j.Status, "a message that failed on every delivery fails its job")
		require.Contains(t, j.StatusMessage, "_dlq.fifo")
		require.Contains(t, j.StatusMessage, errBlink.Error())
		return
	}
	require.Equal(t, domain.JobRunning, j.Status, "a message brought to its last delivery by dead workers is no poison: %s", j.StatusMessage)

	// SQS moves the message to the dead-letter queue; the janitor
	// sends the task again and the job runs to its end.
	// (The other root's message goes with it: its worker died too.)
	for {
		left, err := q.Receive(b.ctx, tenant, queue.MaxBatch, 100*time.Millisecond, time.Minute)
		require.NoError(t, err)
		if len(left) == 0 {
			break
		}
		for _, d := range left {
			require.NoError(t, q.Ack(b.ctx, tenant, d.Receipt))
		}
	}
	stop := b.run(t, 2, 50*time.Millisecond)
	defer stop()
	final := b.waitJob(t, "c1", job.ID, time.Minute)
	require.Equal(t, domain.JobSucceeded, final.Status, "%s%s", final.StatusMessage, b.failures(t, job.ID))
}
