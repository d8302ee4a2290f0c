// Package sqsbatch is the worker Lambda's handler: it turns an SQS FIFO event
// from a tenant's queue into engine deliveries, hands them to the engine in
// order, and answers BatchItemFailures with exactly the messages that must
// stay in the queue (the event source mapping runs with
// ReportBatchItemFailures). The worker Lambda's main only assembles it; the
// serverless end-to-end test drives this same handler.
package sqsbatch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/heddle-io/heddle/internal/queue"
	"github.com/heddle-io/heddle/internal/queue/sqsqueue"
)

// StopMargin is kept free before the invocation's deadline: the batch stops
// taking messages then, so that the answer (which messages stay) is returned
// rather than lost with a timed-out invocation.
const StopMargin = 3 * time.Second

// Queue is what the handler needs of the tenants' queues: the tenant behind
// an event source ARN, and releasing a message it will not handle.
type Queue interface {
	queue.Queue
	TenantOf(queueNameOrARN string) (string, error)
}

// Batches handles one tenant's batch of deliveries (engine.HandleBatch).
type Batches interface {
	HandleBatch(ctx context.Context, tenant string, ds []queue.Delivery) []int
}

// Handler is the worker Lambda's handler.
type Handler struct {
	Queue   Queue
	Batches Batches
	Log     *slog.Logger
}

// Handle processes one SQS event. It never returns an error: a failed
// invocation would make every record of the batch come back, including
// those already done; the records that must stay are listed instead.
func (w *Handler) Handle(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	var resp events.SQSEventResponse
	if len(ev.Records) == 0 {
		return resp, nil
	}
	fail := func(from int) {
		for _, r := range ev.Records[from:] {
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: r.MessageId})
		}
	}
	source := ev.Records[0].EventSourceARN
	tenant, err := w.Queue.TenantOf(source)
	if err != nil {
		// Not a tenant's queue (a mapping on a dead-letter queue, or another
		// prefix): nothing is taken, everything stays.
		w.Log.ErrorContext(ctx, "worker: the batch comes from no tenant's queue", "source", source, "error", err)
		fail(0)
		return resp, nil
	}

	// Deliveries up to the first record that is not a heddle message.
	ds := make([]queue.Delivery, 0, len(ev.Records))
	bad := len(ev.Records)
	for i, r := range ev.Records {
		var d queue.Delivery
		if r.EventSourceARN != source {
			err = fmt.Errorf("record %s comes from %s, not %s", r.MessageId, r.EventSourceARN, source)
		} else {
			d, err = sqsqueue.DeliveryFromRecord(r)
		}
		if err != nil {
			w.Log.WarnContext(ctx, "worker: a record is not a task message; it stays, with every later one", "tenant", tenant, "error", err)
			bad = i
			break
		}
		ds = append(ds, d)
	}

	if len(ds) > 0 {
		runCtx := ctx
		if dl, ok := ctx.Deadline(); ok {
			var cancel context.CancelFunc
			runCtx, cancel = context.WithDeadline(ctx, dl.Add(-StopMargin))
			defer cancel()
		}
		for _, i := range w.Batches.HandleBatch(runCtx, tenant, ds) {
			if i < 0 || i >= len(ds) {
				continue
			}
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: ev.Records[i].MessageId})
		}
	}
	if bad < len(ev.Records) {
		// The record that is not heddle's, and every later one (not taken),
		// are made visible again at once: the stranger then reaches the
		// dead-letter queue after maxReceiveCount receives instead of
		// holding its group for a visibility timeout each time, and the
		// rest come back behind it. Best effort: otherwise they come back
		// when their visibility runs out.
		for _, r := range ev.Records[bad:] {
			if err := w.Queue.Extend(ctx, tenant, r.ReceiptHandle, 0); err != nil && !errors.Is(err, queue.ErrReceiptInvalid) {
				w.Log.WarnContext(ctx, "worker: releasing a record failed", "tenant", tenant, "record", r.MessageId, "error", err)
			}
		}
		fail(bad)
	}
	return resp, nil
}
