package engine

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/queue"
	"github.com/heddle-io/heddle/planner"
)

// takenQueue stands for SQS delivering a message twice at once (an early
// redelivery, which the nemesis run's faults make and SQS allows): the
// other delivery was handled first, found its task running and
// acknowledged it as a duplicate, so when this worker delays the message
// (parking its attempt's polls there) the message is gone. The first
// short delay asked for does that: the message is deleted and the delay
// refused as SQS refuses it.
type takenQueue struct {
	queue.Queue
	mu    sync.Mutex
	taken int
}

func (q *takenQueue) Extend(ctx context.Context, tenant, receipt string, visibility time.Duration) error {
	q.mu.Lock()
	take := q.taken == 0 && visibility > 0 && visibility < 10*time.Second
	if take {
		q.taken++
	}
	q.mu.Unlock()
	if take {
		if err := q.Queue.Ack(ctx, tenant, receipt); err != nil {
			return err
		}
		return queue.ErrReceiptInvalid
	}
	return q.Queue.Extend(ctx, tenant, receipt, visibility)
}

// TestDelayOfATakenMessageSendsAnother: a parked attempt whose message was
// taken by another delivery gets a fresh message at once, rather than
// waiting for the janitor's ResendAfter (two minutes) to notice its
// polls stopped: the workers alone, with no janitor, finish the job.
func TestDelayOfATakenMessageSendsAnother(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T) {
		b := setup(t, nil, Config{})
		q := &takenQueue{Queue: b.eng.queue}
		b.eng.queue = q
		pe := &pollingExec{inner: Simulation{}, after: 200 * time.Millisecond, starts: make(chan string, 4)}
		b.rec.inner = pe
		sub := createSubmission(t, "c1", 1, func(pt planner.Task) map[string]string {
			if pt.Action == domain.ActionInstall {
				return map[string]string{testPolls: "1"}
			}
			return nil
		})
		job, err := b.eng.Submit(b.ctx, sub)
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(b.ctx)
		done := make(chan struct{})
		go func() { defer close(done); b.eng.RunWorkers(ctx, tenant, 1) }()
		t.Cleanup(func() { cancel(); <-done })
		// No janitor runs: without the fresh message the job never ends.
		final := b.waitJob(t, "c1", job.ID, time.Minute)
		require.Equal(t, domain.JobSucceeded, final.Status, "%s%s", final.StatusMessage, b.failures(t, final.ID))
		q.mu.Lock()
		defer q.mu.Unlock()
		require.Equal(t, 1, q.taken, "a delay met a taken message")
	})
}
