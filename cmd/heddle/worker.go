package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/heddle-io/heddle/internal/access"
	"github.com/heddle-io/heddle/internal/assemble"
	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/engine"
	"github.com/heddle-io/heddle/internal/pools"
	"github.com/heddle-io/heddle/internal/store"
)

// tenantsEvery is how often `heddle worker` lists the tenants: a new
// tenant's long tasks wait at most this long for a pool, and a deleted
// tenant's pool stops within it.
const tenantsEvery = 30 * time.Second

func newWorkerCommand() *cobra.Command {
	workers := 2
	cmd := &cobra.Command{
		Use:   "worker",
		Short: "Run the tenants' long tasks from their SQS long-task queues (on Fargate)",
		Long: `Run the tasks whose actions may outlast a Lambda (over 13 minutes): one
worker pool per tenant long-polls the tenant's long-task queue
(<HEDDLE_QUEUE_PREFIX>long_<tenant>.fifo), runs each task's action with the
shell automator, heartbeats its message and attempt, records the result and
sends the tasks it readies to the tenant's queue (for the worker Lambda) or
its long-task queue (for this command), by their length. The tenants are
listed every 30 seconds: new tenants get a pool, deleted tenants' pools stop.

It reads the same environment as the Lambdas: HEDDLE_TABLE (the DynamoDB
table), HEDDLE_QUEUE_PREFIX (heddle-<stage>-) and HEDDLE_KMS_KEY_ID (the key
that seals secrets) are required; HEDDLE_DYNAMODB_ENDPOINT and
HEDDLE_SQS_ENDPOINT point at emulators. AWS credentials and region come from
the usual chain (the task role on Fargate).

SIGTERM or SIGINT stops it: the pools stop taking messages, an attempt still
running is left to its lease (the janitor retries it), and the progress
counted so far is written before it exits.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if workers < 1 {
				return fmt.Errorf("--workers must be at least 1, not %d", workers)
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			a, err := assemble.AWSFromEnv(ctx, true)
			if err != nil {
				return err
			}
			log := slog.New(slog.NewJSONHandler(cmd.ErrOrStderr(), nil))
			host, _ := os.Hostname()
			svc, err := assemble.BuildAWS(a, engine.Config{WorkerID: "fargate:" + host}, assemble.ReceivesLong, true, log)
			if err != nil {
				return err
			}
			log.InfoContext(ctx, "heddle worker: started", "version", buildVersion(), "workersPerTenant", workers)
			pools.Supervise(ctx, tenantsEvery, tenantIDs(svc.Access), func(ctx context.Context, tenant string) {
				svc.Engine.RunWorkers(ctx, tenant, workers)
			}, log)
			log.Info("heddle worker: stopped")
			return nil
		},
	}
	cmd.Flags().IntVar(&workers, "workers", workers, "workers per tenant: how many of a tenant's long tasks run at once in this process")
	return cmd
}

// tenantLister is the part of *access.Access that lists tenants.
type tenantLister interface {
	ListTenants(ctx context.Context, limit int, cursor string) ([]access.TenantView, string, error)
}

// tenantIDs lists every tenant but the system tenant, which runs no tasks.
func tenantIDs(acc tenantLister) func(context.Context) ([]string, error) {
	return func(ctx context.Context) ([]string, error) {
		var out []string
		cursor := ""
		for {
			page, next, err := acc.ListTenants(ctx, store.MaxPageSize, cursor)
			if err != nil {
				return nil, err
			}
			for _, t := range page {
				if t.ID != domain.SystemTenant {
					out = append(out, t.ID)
				}
			}
			if next == "" {
				return out, nil
			}
			cursor = next
		}
	}
}
