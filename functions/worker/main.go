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
	"log/slog"
	"os"
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/heddle-io/heddle/internal/assemble"
	"github.com/heddle-io/heddle/internal/buildinfo"
	"github.com/heddle-io/heddle/internal/engine"
	"github.com/heddle-io/heddle/internal/metrics"
	"github.com/heddle-io/heddle/internal/sqsbatch"
)

func main() {
	ctx := context.Background()
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	// One line per cold start says which build runs, so a log names the
	// commit behind what it shows.
	log.Info("worker: starting", buildinfo.Read().LogAttrs()...)
	// Clients are made once per execution environment, at init, not per event.
	// Measurements go to CloudWatch as Embedded Metric Format log lines.
	emf := metrics.NewEMF(os.Stdout, "worker")
	w, err := fromEnv(ctx, emf, log)
	if err != nil {
		log.Error("worker: cannot start", slog.Any("error", err))
		os.Exit(1)
	}
	lambda.Start(func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		defer emf.Flush()
		return w.Handle(ctx, ev)
	})
}

func fromEnv(ctx context.Context, obs metrics.Observer, log *slog.Logger) (*sqsbatch.Handler, error) {
	a, err := assemble.AWSFromEnv(ctx, true)
	if err != nil {
		return nil, err
	}
	a.Store = metrics.CountStore(a.Store, obs)
	// The function's timeout (template.yaml's WorkerTimeout, which
	// AWSFromEnv has checked): the engine claims an action that no
	// invocation could fit while half of one is left, rather than hand it
	// to a fresh one (engine.Config.InvocationTimeout).
	secs, _ := strconv.Atoi(os.Getenv("HEDDLE_WORKER_TIMEOUT"))
	svc, err := assemble.BuildAWS(a, engine.Config{WorkerID: "lambda:" + lambdacontext.FunctionName + "/" + lambdacontext.LogStreamName, Observer: obs,
		InvocationTimeout: time.Duration(secs) * time.Second}, assemble.ReceivesShort, true, log)
	if err != nil {
		return nil, err
	}
	return &sqsbatch.Handler{Queue: a.Queue, Batches: svc.Engine, Log: log}, nil
}
