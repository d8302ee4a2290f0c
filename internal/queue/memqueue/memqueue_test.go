package memqueue_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/queue"
	"github.com/heddle-io/heddle/internal/queue/memqueue"
	"github.com/heddle-io/heddle/internal/queue/queuetest"
)

func TestConformance(t *testing.T) {
	t.Parallel()
	queuetest.Run(t, func(testing.TB) queuetest.Backend {
		// Real time, which the suite's blocking receives and visibility
		// timeouts need, plus whatever the suite skips ahead.
		var skipped atomic.Int64
		q := memqueue.New(memqueue.Options{Now: func() time.Time {
			return time.Now().Add(time.Duration(skipped.Load()))
		}})
		return queuetest.Backend{
			Queue:       q,
			Provisioner: q,
			Advance:     func(d time.Duration) { skipped.Add(int64(d)) },
		}
	})
}

const tenant = "acme"

// setup returns a queue on a fake clock with the tenant's queue created.
func setup(t *testing.T) (*memqueue.Queue, *fakeClock) {
	t.Helper()
	clock := &fakeClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	q := memqueue.New(memqueue.Options{Now: clock.Now})
	require.NoError(t, q.CreateTenantQueue(t.Context(), tenant))
	return q, clock
}

func message(group string, i int) queue.Message {
	return queue.Message{TaskID: fmt.Sprintf("%s-%d", group, i), Attempt: 1, Group: group, Dedup: fmt.Sprintf("%s-%d#1#0", group, i)}
}

// receiveNow receives without waiting.
func receiveNow(t *testing.T, q *memqueue.Queue, max int, visibility time.Duration) []queue.Delivery {
	t.Helper()
	ds, err := q.Receive(t.Context(), tenant, max, 0, visibility)
	require.NoError(t, err)
	return ds
}

func TestDeduplicationWindow(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// gaps are the clock moves before each send of the same message.
		gaps []time.Duration
		want int // deliveries
	}{
		{"within the window", []time.Duration{0, queue.DedupWindow - time.Nanosecond}, 1},
		{"at the end of the window", []time.Duration{0, queue.DedupWindow}, 2},
		{"a duplicate does not extend the window", []time.Duration{0, 4 * time.Minute, time.Minute}, 2},
		{"a new window after the first", []time.Duration{0, queue.DedupWindow, time.Minute, queue.DedupWindow}, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			q, clock := setup(t)
			delivered := 0
			for _, gap := range tt.gaps {
				clock.Add(gap)
				require.NoError(t, q.Send(t.Context(), tenant, message("g", 1)))
				for _, d := range receiveNow(t, q, queue.MaxBatch, time.Minute) {
					delivered++
					require.NoError(t, q.Ack(t.Context(), tenant, d.Receipt))
				}
			}
			require.Equal(t, tt.want, delivered)
		})
	}
}

func TestDeduplicationIsPerGroup(t *testing.T) {
	t.Parallel()
	q, _ := setup(t)
	a := queue.Message{TaskID: "a", Group: "g1", Dedup: "same"}
	b := queue.Message{TaskID: "b", Group: "g2", Dedup: "same"}
	require.NoError(t, q.Send(t.Context(), tenant, a, b))
	require.Len(t, receiveNow(t, q, queue.MaxBatch, time.Minute), 2)
}

func TestReceiptEndsWithVisibility(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	q, clock := setup(t)
	require.NoError(t, q.Send(ctx, tenant, message("g", 1)))
	d := receiveNow(t, q, 1, 10*time.Second)[0]

	clock.Add(10*time.Second - time.Nanosecond)
	require.Empty(t, receiveNow(t, q, 1, time.Minute), "still in flight")
	require.NoError(t, q.Extend(ctx, tenant, d.Receipt, 10*time.Second), "heartbeat in time")

	clock.Add(10 * time.Second)
	// Nobody has received it again yet, but the delivery is over.
	require.ErrorIs(t, q.Ack(ctx, tenant, d.Receipt), queue.ErrReceiptInvalid)
	again := receiveNow(t, q, 1, time.Minute)
	require.Len(t, again, 1)
	require.Equal(t, 2, again[0].Received)
}

func TestOneMessagePerGroupPerReceive(t *testing.T) {
	t.Parallel()
	q, _ := setup(t)
	require.NoError(t, q.Send(t.Context(), tenant, message("a", 1), message("a", 2), message("b", 1), message("b", 2)))
	ds := receiveNow(t, q, queue.MaxBatch, time.Minute)
	require.ElementsMatch(t, []queue.Message{message("a", 1), message("b", 1)}, []queue.Message{ds[0].Message, ds[1].Message})
	require.Len(t, ds, 2)
}

func TestGroupsServedInTurn(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	q, _ := setup(t)
	// Group a has a long backlog; b and c arrive after it. One receiver
	// taking one message at a time still alternates between the groups.
	for i := range 5 {
		require.NoError(t, q.Send(ctx, tenant, message("a", i)))
	}
	require.NoError(t, q.Send(ctx, tenant, message("b", 0), message("c", 0), message("b", 1)))
	var order []string
	for {
		ds := receiveNow(t, q, 1, time.Minute)
		if len(ds) == 0 {
			break
		}
		order = append(order, ds[0].TaskID)
		require.NoError(t, q.Ack(ctx, tenant, ds[0].Receipt))
	}
	require.Equal(t, []string{"a-0", "b-0", "c-0", "a-1", "b-1", "a-2", "a-3", "a-4"}, order)
}

func TestDeleteWakesReceivers(t *testing.T) {
	t.Parallel()
	q, _ := setup(t)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	errs := make(chan error, 3)
	for range 3 {
		go func() {
			_, err := q.Receive(ctx, tenant, 1, queue.MaxWait, time.Minute)
			errs <- err
		}()
	}
	time.Sleep(100 * time.Millisecond) // let them block; if not, they find no queue
	require.NoError(t, q.DeleteTenantQueue(t.Context(), tenant))
	for range 3 {
		require.ErrorIs(t, <-errs, queue.ErrNoQueue)
	}
}

func TestRecreatedQueueStartsEmpty(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	q, _ := setup(t)
	require.NoError(t, q.Send(ctx, tenant, message("g", 1), message("h", 1)))
	d := receiveNow(t, q, 1, time.Minute)[0]
	require.NoError(t, q.DeleteTenantQueue(ctx, tenant))
	require.NoError(t, q.CreateTenantQueue(ctx, tenant))
	require.Empty(t, receiveNow(t, q, queue.MaxBatch, time.Minute))
	require.ErrorIs(t, q.Ack(ctx, tenant, d.Receipt), queue.ErrReceiptInvalid)
	// Deduplication starts over too: the store, not the queue, remembers.
	require.NoError(t, q.Send(ctx, tenant, message("g", 1)))
	require.Len(t, receiveNow(t, q, queue.MaxBatch, time.Minute), 1)
}
