package engine

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/queue"
	"github.com/heddle-io/heddle/internal/store"
)

// TestOlderReleaseLeavesNewerWorkAlone: the release before a format change
// (an engine that handles formats up to 1, the stand-in for it: its
// MaxFormat is what such code compares with) meets a job the current one
// submitted. Its worker hands every message back with a delay, claiming
// nothing; its janitor, an hour later by its clock (every task overdue, the
// job stuck by any measure), leaves the job, its tasks and its messages
// alone. The current release then runs the job to its end.
func TestOlderReleaseLeavesNewerWorkAlone(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T) {
		b := setup(t, nil, Config{})
		job, err := b.eng.Submit(b.ctx, createSubmission(t, "c1", 3, nil))
		require.NoError(t, err)
		later := func() time.Time { return time.Now().Add(time.Hour) }
		oldCounts := store.NewCounting(b.db)
		old := New(oldCounts, b.q, b.rec, Config{MaxFormat: 1, Clock: later, Visibility: 2 * time.Second, TaskLease: time.Second})

		deliveries, err := b.q.Receive(b.ctx, tenant, queue.MaxBatch, 2*time.Second, 30*time.Second)
		require.NoError(t, err)
		require.NotEmpty(t, deliveries)
		for _, d := range deliveries {
			require.Equal(t, FormatVersion, d.Format, "the current release marks what it sends")
			disp, err := old.Handle(b.ctx, tenant, d)
			require.NoError(t, err)
			require.Equal(t, newerFormatDelay, disp.Delay, "handed back, not acknowledged")
		}
		require.Zero(t, oldCounts.Counts().Writes, "the older release wrote nothing")
		require.Zero(t, b.rec.seq.Load(), "and ran nothing")

		r, err := old.RunJanitor(b.ctx)
		require.NoError(t, err)
		require.Zero(t, r.Stuck)
		require.Zero(t, r.TimedOut)
		require.Zero(t, r.Resent)
		require.Zero(t, oldCounts.Counts().Writes, "the older janitor wrote nothing")
		lj, err := b.eng.loadJob(b.ctx, tenant, "c1", job.ID)
		require.NoError(t, err)
		require.Equal(t, domain.JobRunning, lj.job.Status)

		// The newer release's workers get the messages back (here at
		// once; SQS would after newerFormatDelay) and finish the job.
		for _, d := range deliveries {
			require.NoError(t, b.q.Extend(b.ctx, tenant, d.Receipt, 0))
		}
		// Midway, with a task RUNNING (its item written by the newer
		// release) and others READY, the older janitor still touches
		// nothing.
		release := make(chan struct{})
		running := make(chan struct{})
		var once sync.Once
		b.rec.hook = func(ctx context.Context, a Attempt) {
			if a.Task.ID == "c1-1000/bootstrap" {
				once.Do(func() { close(running) })
				select {
				case <-release:
				case <-ctx.Done():
				}
			}
		}
		stop := b.run(t, 4, 50*time.Millisecond)
		<-running
		r, err = old.RunJanitor(b.ctx)
		require.NoError(t, err)
		require.Equal(t, JanitorReport{}, r)
		require.Zero(t, oldCounts.Counts().Writes, "the older janitor wrote nothing while the job ran")
		close(release)
		final := b.waitJob(t, "c1", job.ID, 30*time.Second)
		stop()
		require.Equal(t, domain.JobSucceeded, final.Status, "%s%s", final.StatusMessage, b.failures(t, final.ID))
		checkInvariants(t, b)
	})
}

// formatlessQueue sends messages as a sender from before formats were
// recorded did: with no Format.
type formatlessQueue struct{ queue.Queue }

func (q formatlessQueue) Send(ctx context.Context, tenant string, msgs ...queue.Message) error {
	for i := range msgs {
		msgs[i].Format = 0
	}
	return q.Queue.Send(ctx, tenant, msgs...)
}

// TestUnmarkedWorkStillRuns: messages and a job item with no format marker
// (written before formats were recorded) are format 1, which the current
// release handles as it always did.
func TestUnmarkedWorkStillRuns(t *testing.T) {
	t.Parallel()
	b := setup(t, formatlessQueue{openQueue(t)}, Config{})
	job, err := b.eng.Submit(b.ctx, createSubmission(t, "c1", 3, nil))
	require.NoError(t, err)
	_, err = b.db.Write(b.ctx, store.Update(jobKey(tenant, "c1", job.ID), store.Condition{MustExist: true},
		store.Changes{Set: map[string]int64{counterFormat: 0}}))
	require.NoError(t, err)
	it, err := b.db.Get(b.ctx, jobKey(tenant, "c1", job.ID))
	require.NoError(t, err)
	require.Equal(t, 1, formatOf(it))
	stop := b.run(t, 4, 50*time.Millisecond)
	final := b.waitJob(t, "c1", job.ID, 30*time.Second)
	stop()
	require.Equal(t, domain.JobSucceeded, final.Status, "%s%s", final.StatusMessage, b.failures(t, final.ID))
}

// TestReadingANewerJobSaysSo: an older release asked for a newer job (an
// API instance during a deploy) says it is a newer release's, without
// decoding it.
func TestReadingANewerJobSaysSo(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, Config{})
	job, err := b.eng.Submit(b.ctx, createSubmission(t, "c1", 2, nil))
	require.NoError(t, err)
	old := New(b.db, b.q, b.rec, Config{MaxFormat: 1})
	_, err = old.loadJob(b.ctx, tenant, "c1", job.ID)
	require.ErrorIs(t, err, ErrNewerFormat)
	require.ErrorContains(t, err, "newer than this heddle handles")
}

// TestFormatTwoHandsBackHookMessages: a webhook delivery's message names a
// pseudo-cluster that code of format 2 never heard of; that release (an
// engine handling formats up to 2) must hand it back for a newer worker
// rather than look for the task, miss it and drop the delivery.
func TestFormatTwoHandsBackHookMessages(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T) {
		b := setup(t, nil, Config{})
		require.NoError(t, b.eng.SendHook(b.ctx, tenant, "wh-1", "ev-1", 0))
		counts := store.NewCounting(b.db)
		old := New(counts, b.q, b.rec, Config{MaxFormat: 2})
		deliveries, err := b.q.Receive(b.ctx, tenant, queue.MaxBatch, 2*time.Second, 30*time.Second)
		require.NoError(t, err)
		require.Len(t, deliveries, 1)
		require.Equal(t, FormatVersion, deliveries[0].Format)
		disp, err := old.Handle(b.ctx, tenant, deliveries[0])
		require.NoError(t, err)
		require.Equal(t, newerFormatDelay, disp.Delay, "handed back, not dropped")
		require.Zero(t, counts.Counts().Writes)
	})
}
