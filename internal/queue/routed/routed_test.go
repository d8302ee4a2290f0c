package routed_test

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
	"github.com/heddle-io/heddle/internal/queue/routed"
)

const tenant = "acme"

func newQueue(t *testing.T) *memqueue.Queue {
	t.Helper()
	q := memqueue.New(memqueue.Options{})
	require.NoError(t, q.CreateTenantQueue(t.Context(), tenant))
	return q
}

func msg(i int, long bool) queue.Message {
	return queue.Message{TaskID: fmt.Sprintf("t%d", i), Attempt: 1, Group: fmt.Sprintf("g%d", i), Dedup: fmt.Sprintf("t%d#1#0", i), Long: long}
}

// drain receives every visible message of q, in order.
func drain(t *testing.T, q queue.Queue) []queue.Delivery {
	t.Helper()
	var out []queue.Delivery
	for {
		ds, err := q.Receive(t.Context(), tenant, queue.MaxBatch, 0, time.Minute)
		require.NoError(t, err)
		if len(ds) == 0 {
			return out
		}
		out = append(out, ds...)
	}
}

func ids(ds []queue.Delivery) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.TaskID
		if d.Long {
			out[i] += "(long)"
		}
	}
	return out
}

// countingQueue counts Send calls.
type countingQueue struct {
	queue.Queue
	sends atomic.Int32
}

func (c *countingQueue) Send(ctx context.Context, tenant string, msgs ...queue.Message) error {
	c.sends.Add(1)
	return c.Queue.Send(ctx, tenant, msgs...)
}

func TestSendSplitsByLong(t *testing.T) {
	t.Parallel()
	short, long := &countingQueue{Queue: newQueue(t)}, &countingQueue{Queue: newQueue(t)}
	q := routed.New(short, short, long)
	require.NoError(t, q.Send(t.Context(), tenant, msg(1, false), msg(2, true), msg(3, false), msg(4, true), msg(5, false)))
	require.EqualValues(t, 1, short.sends.Load(), "one call per target")
	require.EqualValues(t, 1, long.sends.Load(), "one call per target")
	require.Equal(t, []string{"t1", "t3", "t5"}, ids(drain(t, short)), "order kept; Long is not delivered")
	require.Equal(t, []string{"t2", "t4"}, ids(drain(t, long)), "order kept; Long is not delivered")
}

func TestSendOnlyShortOrOnlyLong(t *testing.T) {
	t.Parallel()
	short, long := &countingQueue{Queue: newQueue(t)}, &countingQueue{Queue: newQueue(t)}
	q := routed.New(short, short, long)
	require.NoError(t, q.Send(t.Context(), tenant, msg(1, false)))
	require.NoError(t, q.Send(t.Context(), tenant, msg(2, true)))
	require.EqualValues(t, 1, short.sends.Load(), "no empty send to the short queue")
	require.EqualValues(t, 1, long.sends.Load(), "no empty send to the long queue")
	require.Equal(t, []string{"t1"}, ids(drain(t, short)))
	require.Equal(t, []string{"t2"}, ids(drain(t, long)))
}

func TestNilLongSendsEverythingShort(t *testing.T) {
	t.Parallel()
	short := &countingQueue{Queue: newQueue(t)}
	q := routed.New(short, short, nil)
	require.NoError(t, q.Send(t.Context(), tenant, msg(1, true), msg(2, false), msg(3, true)))
	require.EqualValues(t, 1, short.sends.Load())
	require.Equal(t, []string{"t1", "t2", "t3"}, ids(drain(t, short)), "the caller's order, in one call")
}

// TestReceiveFromTheReceivingQueue is the Fargate worker's shape: it
// receives from the long queue, and what it readies goes by its length.
func TestReceiveFromTheReceivingQueue(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	short, long := newQueue(t), newQueue(t)
	q := routed.New(long, short, long)
	require.NoError(t, long.Send(ctx, tenant, msg(1, false), msg(2, false)))
	require.NoError(t, short.Send(ctx, tenant, msg(9, false)))

	ds, err := q.Receive(ctx, tenant, queue.MaxBatch, 0, time.Minute)
	require.NoError(t, err)
	require.Equal(t, []string{"t1", "t2"}, ids(ds), "from the long queue only")
	require.NoError(t, q.Ack(ctx, tenant, ds[0].Receipt), "the receipt is the long queue's")
	require.NoError(t, q.Extend(ctx, tenant, ds[1].Receipt, 0))
	again, err := long.Receive(ctx, tenant, queue.MaxBatch, 0, time.Minute)
	require.NoError(t, err)
	require.Equal(t, []string{"t2"}, ids(again), "acked on the long queue; the extended one is back")

	require.NoError(t, q.Send(ctx, tenant, msg(3, false), msg(4, true)))
	require.Equal(t, []string{"t9", "t3"}, ids(drain(t, short)), "a short follow-up goes to the short queue")
	require.NoError(t, long.Ack(ctx, tenant, again[0].Receipt))
	require.Equal(t, []string{"t4"}, ids(drain(t, long)))
}

func TestSendChecksTheWholeBatchFirst(t *testing.T) {
	t.Parallel()
	short, long := newQueue(t), newQueue(t)
	q := routed.New(short, short, long)
	bad := msg(3, true)
	bad.Dedup = ""
	require.Error(t, q.Send(t.Context(), tenant, msg(1, false), msg(2, true), bad))
	require.Empty(t, drain(t, short), "nothing sent")
	require.Empty(t, drain(t, long), "nothing sent")
	require.Error(t, q.Send(t.Context(), "", msg(1, false)))
}

func TestSendErrors(t *testing.T) {
	t.Parallel()
	short := newQueue(t)
	long := memqueue.New(memqueue.Options{}) // the tenant has no long queue
	q := routed.New(short, short, long)
	require.NoError(t, q.Send(t.Context(), tenant, msg(1, false)))
	require.ErrorIs(t, q.Send(t.Context(), tenant, msg(2, false), msg(3, true)), queue.ErrNoQueue)
	require.ErrorIs(t, routed.New(long, long, short).Send(t.Context(), tenant, msg(4, false), msg(5, true)), queue.ErrNoQueue,
		"a failed short send sends no long one")
	require.Equal(t, []string{"t1", "t2"}, ids(drain(t, short)), "the short part was sent; the janitor re-sends the rest")
}

// TestConformance: with one queue in every role, routed is the queue itself.
func TestConformance(t *testing.T) {
	t.Parallel()
	queuetest.Run(t, func(testing.TB) queuetest.Backend {
		var skipped atomic.Int64
		m := memqueue.New(memqueue.Options{Now: func() time.Time {
			return time.Now().Add(time.Duration(skipped.Load()))
		}})
		return queuetest.Backend{
			Queue:       routed.New(m, m, m),
			Provisioner: m,
			Advance:     func(d time.Duration) { skipped.Add(int64(d)) },
		}
	})
}
