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
// After the pass, the invocation sweeps EC2 (see sweep.go): for every
// tenant's ec2 provider it opens the provider's fields and calls
// ec2.EC2.Sweep, once per distinct region, access key id and endpoint, so
// that one account and region is swept once per invocation whichever
// providers name it. The sweep terminates the live instances, and deletes
// the key pairs, that heddle tagged (heddle:tenant, heddle:cluster) for a
// cluster whose record is gone or TERMINATED and that are older than 15
// minutes. A cluster whose record cannot be read counts as existing: when in
// doubt, nothing is removed. A provider whose fields cannot be opened or
// whose sweep fails is logged and counted, the others are swept all the
// same, and the invocation does not fail for it (a tenant's stale
// credentials would otherwise fail every invocation).
//
// The event is the schedule's Input, shaped as an EventBridge event
// (template.yaml fills in the schedule's ARN and time); an empty event
// works as well. The answer is the pass's report with the sweep's counts
// (ec2Sweep: providers seen, accounts and regions swept, failures,
// instances terminated, key pairs deleted, doubts); a pass that met errors
// still does what it could, sweeps, logs the report and returns the
// errors, so that the invocation counts as failed in the function's
// metrics.
//
// Configuration (environment): HEDDLE_TABLE, HEDDLE_QUEUE_PREFIX and
// HEDDLE_KMS_KEY_ID as for the worker; HEDDLE_DYNAMODB_ENDPOINT and
// HEDDLE_SQS_ENDPOINT point the clients at emulators. HEDDLE_EC2_SWEEP
// switches the EC2 sweep: "on" (the default, also when unset) removes
// orphans, "dry-run" only reports and logs what it would remove, "off"
// does not sweep; any other value stops the function at start. A provider
// without keys is swept with the function's own role, which then needs
// ec2:DescribeInstances, ec2:DescribeKeyPairs, ec2:TerminateInstances and
// ec2:DeleteKeyPair.
package main

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/heddle-io/heddle/internal/access"
	"github.com/heddle-io/heddle/internal/assemble"
	"github.com/heddle-io/heddle/internal/audit"
	"github.com/heddle-io/heddle/internal/buildinfo"
	"github.com/heddle-io/heddle/internal/catalog"
	"github.com/heddle-io/heddle/internal/engine"
	"github.com/heddle-io/heddle/internal/metrics"
	"github.com/heddle-io/heddle/internal/provider/ec2"
)

func main() {
	ctx := context.Background()
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	// One line per cold start says which build runs, so a log names the
	// commit behind what it shows.
	log.Info("janitor: starting", buildinfo.Read().LogAttrs()...)
	// Clients are made once per execution environment, at init, not per event.
	// Measurements go to CloudWatch as Embedded Metric Format log lines.
	emf := metrics.NewEMF(os.Stdout, "janitor")
	j, err := fromEnv(ctx, emf, log)
	if err != nil {
		log.Error("janitor: cannot start", slog.Any("error", err))
		os.Exit(1)
	}
	lambda.Start(func(ctx context.Context, ev events.EventBridgeEvent) (Report, error) {
		defer emf.Flush()
		return j.handle(ctx, ev)
	})
}

// Janitor makes one janitor pass (engine.RunJanitor).
type Janitor interface {
	RunJanitor(ctx context.Context) (engine.JanitorReport, error)
}

type janitor struct {
	engine Janitor
	sweep  *ec2Sweep // nil: no sweep
	log    *slog.Logger
	// audit and tenants prune the audit past its retention once an hour;
	// nil: no pruning.
	audit   *audit.Log
	tenants func(context.Context) ([]access.TenantView, error)
	// catalog, with tenants, collects what catalog imports that were never
	// published left staged, once an hour; nil: no collection.
	catalog *catalog.Catalog
}

// Report is an invocation's answer: the pass's report and the EC2 sweep's.
type Report struct {
	engine.JanitorReport
	EC2Sweep SweepReport `json:"ec2Sweep"`
	// AuditPruned counts the audit records past their retention deleted
	// by the hourly pass.
	AuditPruned int `json:"auditPruned,omitempty"`
	// StagedCollected counts the staged catalog versions of abandoned
	// imports deleted by the hourly pass (catalog.CollectStaged).
	StagedCollected int `json:"stagedCollected,omitempty"`
}

// collectStaged deletes every tenant's abandoned staged catalog versions.
func (j *janitor) collectStaged(ctx context.Context, now time.Time) int {
	if j.catalog == nil || j.tenants == nil {
		return 0
	}
	tenants, err := j.tenants(ctx)
	if err != nil {
		j.log.ErrorContext(ctx, "janitor: listing tenants to collect staged catalog imports", "error", err)
		return 0
	}
	ids := make([]string, len(tenants))
	for i, t := range tenants {
		ids[i] = t.ID
	}
	n, err := j.catalog.CollectStagedAll(ctx, ids, now)
	if err != nil {
		j.log.ErrorContext(ctx, "janitor: collecting staged catalog imports", "error", err)
	}
	return n
}

// pruneAudit deletes every tenant's audit records past their retention.
func (j *janitor) pruneAudit(ctx context.Context, now time.Time) int {
	if j.audit == nil || j.tenants == nil {
		return 0
	}
	tenants, err := j.tenants(ctx)
	if err != nil {
		j.log.ErrorContext(ctx, "janitor: listing tenants to prune the audit", "error", err)
		return 0
	}
	ids := make([]string, len(tenants))
	for i, t := range tenants {
		ids[i] = t.ID
	}
	n, err := j.audit.PruneAll(ctx, ids, now)
	if err != nil {
		j.log.ErrorContext(ctx, "janitor: pruning the audit", "error", err)
	}
	return n
}

func fromEnv(ctx context.Context, obs metrics.Observer, log *slog.Logger) (*janitor, error) {
	mode, err := parseSweepMode(os.Getenv("HEDDLE_EC2_SWEEP"))
	if err != nil {
		return nil, err
	}
	a, err := assemble.AWSFromEnv(ctx, true)
	if err != nil {
		return nil, err
	}
	// It runs no task, so its engine has no executor; expired clusters go to
	// the cluster service, which submits their delete jobs.
	a.Store = metrics.CountStore(a.Store, obs)
	svc, err := assemble.BuildAWS(a, engine.Config{WorkerID: "lambda:" + lambdacontext.FunctionName + "/" + lambdacontext.LogStreamName, Observer: obs}, assemble.ReceivesShort, false, log)
	if err != nil {
		return nil, err
	}
	j := &janitor{engine: svc.Engine, log: log, audit: svc.Audit, tenants: svc.Access.AllTenants, catalog: svc.Catalog}
	if mode == SweepOff {
		return j, nil
	}
	// The services' own provider types open the fields and sweep.
	registry := svc.Providers
	impl, _ := registry.Provider(ec2.TypeName)
	sweeper, ok := impl.(Sweeper)
	if !ok {
		return nil, errors.New("janitor: the ec2 provider cannot sweep")
	}
	j.sweep = &ec2Sweep{mode: mode, tenants: svc.Access, providers: svc.Catalog, clusters: svc.Engine,
		opener: registryOpener{registry: registry, keyring: a.Keyring}, sweeper: sweeper, log: log}
	return j, nil
}

// handle makes one pass, then sweeps EC2. The event says only when and by
// which schedule it was sent, which is logged.
func (j *janitor) handle(ctx context.Context, ev events.EventBridgeEvent) (Report, error) {
	jr, err := j.engine.RunJanitor(ctx)
	r := Report{JanitorReport: jr, EC2Sweep: j.sweep.run(ctx)}
	if ev.Time.Minute() == 0 {
		// The schedule fires every minute; the audit is pruned on the hour.
		r.AuditPruned = j.pruneAudit(ctx, ev.Time)
		r.StagedCollected = j.collectStaged(ctx, ev.Time)
	}
	sw := r.EC2Sweep
	attrs := []any{"scheduledAt", ev.Time, "schedule", ev.Resources,
		"timedOut", r.TimedOut, "resent", r.Resent, "jobsMovedOn", r.JobsMovedOn, "undone", r.Undone,
		"leasesExpired", r.LeasesExpired, "indexCleared", r.IndexCleared, "stuck", r.Stuck,
		"auditPruned", r.AuditPruned, "stagedCollected", r.StagedCollected,
		slog.Group("ec2Sweep", "mode", sw.Mode, "providers", sw.Providers, "swept", sw.Swept, "failed", sw.Failed,
			"examined", sw.Examined, "terminated", sw.Terminated, "keyPairsDeleted", sw.KeyPairsDeleted, "doubts", sw.Doubts)}
	if err != nil {
		j.log.ErrorContext(ctx, "janitor: pass met errors", append(attrs, "error", err)...)
		return r, err
	}
	j.log.InfoContext(ctx, "janitor: pass done", attrs...)
	return r, nil
}
