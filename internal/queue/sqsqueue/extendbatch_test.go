package sqsqueue_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/queue"
	"github.com/heddle-io/heddle/internal/queue/sqsqueue"
)

// TestExtendBatch: one ChangeMessageVisibilityBatch sets the visibility of
// several deliveries; a receipt whose message was acknowledged meanwhile
// is skipped, not an error.
func TestExtendBatch(t *testing.T) {
	t.Parallel()
	q, _ := setup(t, sqsqueue.Options{})
	ctx := t.Context()
	require.NoError(t, q.CreateTenantQueue(ctx, "acme"))
	var msgs []queue.Message
	for _, g := range []string{"a", "b", "c"} {
		msgs = append(msgs, queue.Message{TaskID: "c1/j1/" + g, Attempt: 1, Group: "c1#" + g, Dedup: "j1#" + g})
	}
	require.NoError(t, q.Send(ctx, "acme", msgs...))
	var ds []queue.Delivery
	for len(ds) < 3 {
		got, err := q.Receive(ctx, "acme", queue.MaxBatch, time.Second, 15*time.Minute)
		require.NoError(t, err)
		require.NotEmpty(t, got, "the three messages, hidden for 15 minutes")
		ds = append(ds, got...)
	}
	require.NoError(t, q.Ack(ctx, "acme", ds[0].Receipt))

	receipts := []string{ds[0].Receipt, ds[1].Receipt, ds[2].Receipt}
	require.NoError(t, q.ExtendBatch(ctx, "acme", receipts, 0), "the acknowledged one is skipped")
	again, err := q.Receive(ctx, "acme", queue.MaxBatch, 2*time.Second, time.Minute)
	require.NoError(t, err)
	got := map[string]bool{}
	for _, d := range again {
		got[d.TaskID] = true
	}
	require.Equal(t, map[string]bool{ds[1].TaskID: true, ds[2].TaskID: true}, got, "visible again at once, without their 15 minutes")

	require.Error(t, q.ExtendBatch(ctx, "acme", make([]string, queue.MaxBatch+1), time.Second), "more than SQS takes at once")
	name, maxReceives, err := q.DeadLetter("acme")
	require.NoError(t, err)
	require.Equal(t, 5, maxReceives)
	dlq, _ := q.DeadLetterQueueName("acme")
	require.Equal(t, dlq, name)
}
