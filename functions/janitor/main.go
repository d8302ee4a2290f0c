// Command janitor is the janitor Lambda: an EventBridge Scheduler schedule
// invokes it every minute, and each invocation makes one engine.RunJanitor
// pass over every tenant: running attempts past their deadline are failed,
// ready tasks whose message was lost are sent again, stuck submissions are
// undone, jobs whose last step was lost move on, and clusters whose lease ran
// out are handed to the cluster service, which submits their delete job.
//
// Every action of a pass is a conditional write on what it read, so an
// invocation that overlaps the next one, or a retried one, does no harm.
//
// The event is the schedule's Input, shaped as an EventBridge event
// (template.yaml fills in the schedule's ARN and time); an empty event
// works as well. The answer is the pass's report; a pass that met errors
// still does what it could, logs the report and returns the errors, so
// that the invocation counts as failed in the function's metrics.
//
// Configuration (environment): HEDDLE_TABLE, HEDDLE_QUEUE_PREFIX and
// HEDDLE_KMS_KEY_ID as for the worker; HEDDLE_DYNAMODB_ENDPOINT and
// HEDDLE_SQS_ENDPOINT point the clients at emulators.
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/heddle-io/heddle/internal/assemble"
	"github.com/heddle-io/heddle/internal/engine"
)

func main() {
	ctx := context.Background()
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	// Clients are made once per execution environment, at init, not per event.
	j, err := fromEnv(ctx, log)
	if err != nil {
		log.Error("janitor: cannot start", slog.Any("error", err))
		os.Exit(1)
	}
	lambda.Start(j.handle)
}

// Janitor makes one janitor pass (engine.RunJanitor).
type Janitor interface {
	RunJanitor(ctx context.Context) (engine.JanitorReport, error)
}

type janitor struct {
	engine Janitor
	log    *slog.Logger
}

func fromEnv(ctx context.Context, log *slog.Logger) (*janitor, error) {
	a, err := assemble.AWSFromEnv(ctx, true)
	if err != nil {
		return nil, err
	}
	// It runs no task, so its engine has no executor; expired clusters go to
	// the cluster service, which submits their delete jobs.
	svc, err := assemble.BuildAWS(a, engine.Config{WorkerID: "lambda:" + lambdacontext.FunctionName + "/" + lambdacontext.LogStreamName}, false, log)
	if err != nil {
		return nil, err
	}
	return &janitor{engine: svc.Engine, log: log}, nil
}

// handle makes one pass. The event says only when and by which schedule it
// was sent, which is logged.
func (j *janitor) handle(ctx context.Context, ev events.EventBridgeEvent) (engine.JanitorReport, error) {
	r, err := j.engine.RunJanitor(ctx)
	attrs := []any{"scheduledAt", ev.Time, "schedule", ev.Resources,
		"timedOut", r.TimedOut, "resent", r.Resent, "jobsMovedOn", r.JobsMovedOn, "undone", r.Undone,
		"leasesExpired", r.LeasesExpired, "indexCleared", r.IndexCleared, "stuck", r.Stuck}
	if err != nil {
		j.log.ErrorContext(ctx, "janitor: pass met errors", append(attrs, "error", err)...)
		return r, err
	}
	j.log.InfoContext(ctx, "janitor: pass done", attrs...)
	return r, nil
}
