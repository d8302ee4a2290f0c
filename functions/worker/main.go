// Command worker is the worker Lambda: the event source mapping of each
// tenant's SQS FIFO queue invokes it with a batch of up to 10 task messages,
// and it runs them through the engine (claim, run the action over SSH,
// record, send the next tasks) in order.
//
// The tenant is read from the records' eventSourceARN: a tenant's queue is
// named <HEDDLE_QUEUE_PREFIX><tenant>.fifo (internal/queue/sqsqueue), so the
// ARN arn:aws:sqs:<region>:<account>:heddle-prod-acme.fifo is tenant "acme"
// under the prefix "heddle-prod-". One function serves every tenant; each
// tenant's mapping caps its concurrency at the tenant's worker count.
//
// The answer lists in BatchItemFailures exactly the messages that must stay
// in the queue (the mapping has ReportBatchItemFailures on): those the engine
// kept (a failure, a retry's backoff, every later message of a group behind
// one), and, from the first record that is not a heddle message on, that
// record and every later one (FIFO: nothing after a failure is taken).
//
// Configuration (environment): HEDDLE_TABLE names the DynamoDB table;
// HEDDLE_QUEUE_PREFIX starts the tenants' queue names; HEDDLE_KMS_KEY_ID is
// the KMS key (ARN) that seals secrets. HEDDLE_DYNAMODB_ENDPOINT and
// HEDDLE_SQS_ENDPOINT point the clients at emulators (AWS_ENDPOINT_URL_KMS
// does the same for KMS).
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/heddle-io/heddle/internal/assemble"
	"github.com/heddle-io/heddle/internal/engine"
	"github.com/heddle-io/heddle/internal/queue"
	"github.com/heddle-io/heddle/internal/queue/sqsqueue"
)

// stopMargin is kept free before the invocation's deadline: the batch stops
// taking messages then, so that the answer (which messages stay) is returned
// rather than lost with a timed-out invocation.
const stopMargin = 3 * time.Second

func main() {
	ctx := context.Background()
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	// Clients are made once per execution environment, at init, not per event.
	w, err := fromEnv(ctx, log)
	if err != nil {
		log.Error("worker: cannot start", slog.Any("error", err))
		os.Exit(1)
	}
	lambda.Start(w.handle)
}

// Queue is what the worker needs of the tenants' queues: the tenant behind
// an event source ARN, and releasing a message it will not handle.
type Queue interface {
	queue.Queue
	TenantOf(queueNameOrARN string) (string, error)
}

// Batches handles one tenant's batch of deliveries (engine.HandleBatch).
type Batches interface {
	HandleBatch(ctx context.Context, tenant string, ds []queue.Delivery) []int
}

type worker struct {
	queue   Queue
	batches Batches
	log     *slog.Logger
}

func fromEnv(ctx context.Context, log *slog.Logger) (*worker, error) {
	a, err := assemble.AWSFromEnv(ctx, true)
	if err != nil {
		return nil, err
	}
	svc, err := assemble.BuildAWS(a, engine.Config{WorkerID: "lambda:" + lambdacontext.FunctionName + "/" + lambdacontext.LogStreamName}, assemble.ReceivesShort, true, log)
	if err != nil {
		return nil, err
	}
	return &worker{queue: a.Queue, batches: svc.Engine, log: log}, nil
}

// handle processes one SQS event. It never returns an error: a failed
// invocation would make every record of the batch come back, including
// those already done; the records that must stay are listed instead.
func (w *worker) handle(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
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
	tenant, err := w.queue.TenantOf(source)
	if err != nil {
		// Not a tenant's queue (a mapping on a dead-letter queue, or another
		// prefix): nothing is taken, everything stays.
		w.log.ErrorContext(ctx, "worker: the batch comes from no tenant's queue", "source", source, "error", err)
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
			w.log.WarnContext(ctx, "worker: a record is not a task message; it stays, with every later one", "tenant", tenant, "error", err)
			bad = i
			break
		}
		ds = append(ds, d)
	}

	if len(ds) > 0 {
		runCtx := ctx
		if dl, ok := ctx.Deadline(); ok {
			var cancel context.CancelFunc
			runCtx, cancel = context.WithDeadline(ctx, dl.Add(-stopMargin))
			defer cancel()
		}
		for _, i := range w.batches.HandleBatch(runCtx, tenant, ds) {
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
			if err := w.queue.Extend(ctx, tenant, r.ReceiptHandle, 0); err != nil && !errors.Is(err, queue.ErrReceiptInvalid) {
				w.log.WarnContext(ctx, "worker: releasing a record failed", "tenant", tenant, "record", r.MessageId, "error", err)
			}
		}
		fail(bad)
	}
	return resp, nil
}
