package sqsbatch

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/queue"
	"github.com/heddle-io/heddle/internal/queue/sqsqueue"
)

// fakeQueue names tenants as sqsqueue does and records Extend calls; the
// worker calls nothing else on it.
type fakeQueue struct {
	*sqsqueue.Queue

	mu       sync.Mutex
	released []string // receipts made visible again
}

func (q *fakeQueue) Extend(_ context.Context, tenant, receipt string, d time.Duration) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if tenant == "acme" && d == 0 {
		q.released = append(q.released, receipt)
	}
	return nil
}

// fakeBatches answers HandleBatch with keep and records what it was given.
type fakeBatches struct {
	keep     []int
	tenant   string
	got      []queue.Delivery
	deadline time.Time
}

func (b *fakeBatches) HandleBatch(ctx context.Context, tenant string, ds []queue.Delivery) []int {
	b.tenant, b.got = tenant, ds
	b.deadline, _ = ctx.Deadline()
	return b.keep
}

type testBundle struct {
	queue   *fakeQueue
	batches *fakeBatches
	worker  *Handler
	event   events.SQSEvent
}

func setup(t *testing.T, keep []int) *testBundle {
	t.Helper()
	q, err := sqsqueue.New(nil, sqsqueue.Options{Prefix: "heddle-prod-"})
	require.NoError(t, err)
	raw, err := os.ReadFile("testdata/fifo-event.json")
	require.NoError(t, err)
	b := &testBundle{queue: &fakeQueue{Queue: q}, batches: &fakeBatches{keep: keep}}
	require.NoError(t, json.Unmarshal(raw, &b.event))
	b.worker = &Handler{Queue: b.queue, Batches: b.batches, Log: slog.New(slog.DiscardHandler)}
	return b
}

func failures(resp events.SQSEventResponse) []string {
	ids := []string{}
	for _, f := range resp.BatchItemFailures {
		ids = append(ids, f.ItemIdentifier)
	}
	return ids
}

// TestHandleReportsWhatTheEngineKeeps: the answer lists exactly the records
// whose indexes HandleBatch returned, for the tenant named by the queue ARN.
func TestHandleReportsWhatTheEngineKeeps(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		keep []int
		want []string
	}{
		{"none", nil, []string{}},
		{"a later group kept", []int{2}, []string{"m-3"}},
		{"first and its group", []int{0, 2}, []string{"m-1", "m-3"}},
		{"all", []int{0, 1, 2}, []string{"m-1", "m-2", "m-3"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, tt.keep)
			resp, err := b.worker.Handle(t.Context(), b.event)
			require.NoError(t, err)
			require.Equal(t, tt.want, failures(resp))
			require.Equal(t, "acme", b.batches.tenant)
			require.Len(t, b.batches.got, 3)
			require.Equal(t, "acme/c-7/j-3/install:web@n-1", b.batches.got[0].TaskID)
			require.Equal(t, "c-7#n-1", b.batches.got[0].Group)
			require.Equal(t, 2, b.batches.got[2].Received)
			require.Empty(t, b.queue.released)
		})
	}
}

// TestHandleStopsAtAStranger: a record that is not a heddle message stays,
// with every later record; those before it are handled.
func TestHandleStopsAtAStranger(t *testing.T) {
	t.Parallel()
	b := setup(t, []int{0})
	b.event.Records[1].Body = "not heddle's"
	resp, err := b.worker.Handle(t.Context(), b.event)
	require.NoError(t, err)
	require.Equal(t, []string{"m-1", "m-2", "m-3"}, failures(resp))
	require.Len(t, b.batches.got, 1, "only the records before the stranger are handled")
	require.Equal(t, []string{"r-2", "r-3"}, b.queue.released)
}

// TestHandleForeignQueue: a batch from a queue that is no tenant's (a
// dead-letter queue, another prefix) is not handled; every record stays.
func TestHandleForeignQueue(t *testing.T) {
	t.Parallel()
	for _, arn := range []string{
		"arn:aws:sqs:eu-west-1:123456789012:heddle-prod-acme_dlq.fifo",
		"arn:aws:sqs:eu-west-1:123456789012:heddle-dev-acme.fifo",
	} {
		b := setup(t, nil)
		for i := range b.event.Records {
			b.event.Records[i].EventSourceARN = arn
		}
		resp, err := b.worker.Handle(t.Context(), b.event)
		require.NoError(t, err)
		require.Equal(t, []string{"m-1", "m-2", "m-3"}, failures(resp), arn)
		require.Nil(t, b.batches.got)
	}
}

// TestHandleStopsBeforeTheDeadline: the batch's context ends StopMargin
// before the invocation's, so the answer gets out.
func TestHandleStopsBeforeTheDeadline(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	deadline := time.Now().Add(time.Minute)
	ctx, cancel := context.WithDeadline(t.Context(), deadline)
	defer cancel()
	_, err := b.worker.Handle(ctx, b.event)
	require.NoError(t, err)
	require.WithinDuration(t, deadline.Add(-StopMargin), b.batches.deadline, time.Millisecond)
}

func TestHandleEmptyEvent(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	resp, err := b.worker.Handle(t.Context(), events.SQSEvent{})
	require.NoError(t, err)
	require.Empty(t, resp.BatchItemFailures)
	require.Nil(t, b.batches.got)
}
