// Package assemble builds heddle's services over one store and one queue:
// access control, the catalog, the engine, the cluster service and, when the
// process runs tasks, the provisioning dispatcher. The same assembly serves
// the local server and the three Lambdas; each brings its own parts (bbolt
// and the in-process queue locally, DynamoDB, SQS and KMS in AWS).
//
// The services refer to one another in a circle, which Build closes with
// late-bound closures: the catalog asks the cluster service which clusters
// are live (so what they use cannot be deleted), the cluster service submits
// through the engine, the engine's janitor hands expired clusters back to
// the cluster service, and the engine runs tasks through the dispatcher,
// which reads each cluster's spec from the cluster service.
package assemble

import (
	"context"
	"errors"
	"log/slog"

	"github.com/heddle-io/heddle/internal/access"
	"github.com/heddle-io/heddle/internal/audit"
	"github.com/heddle-io/heddle/internal/automator"
	"github.com/heddle-io/heddle/internal/catalog"
	"github.com/heddle-io/heddle/internal/cluster"
	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/engine"
	"github.com/heddle-io/heddle/internal/provider"
	"github.com/heddle-io/heddle/internal/provision"
	"github.com/heddle-io/heddle/internal/queue"
	"github.com/heddle-io/heddle/internal/secrets"
	"github.com/heddle-io/heddle/internal/sshexec"
	"github.com/heddle-io/heddle/internal/store"
	"github.com/heddle-io/heddle/internal/usage"
	"github.com/heddle-io/heddle/internal/webhooks"
)

// Parts are what a process brings.
type Parts struct {
	Store     store.Store
	Queue     queue.Queue
	Keyring   *secrets.Keyring
	Providers *provider.Registry
	// Automators run service actions by type. A process that only submits
	// and reads jobs (the API and janitor Lambdas) leaves them nil and its
	// engine gets no executor.
	Automators map[string]automator.Automator
	// SSH is the worker's connection pool, shared by the automators (given
	// to them by the caller) and the providers' confirms.
	SSH *sshexec.Pool
	// Engine tunes the engine; its ExpireLease is set by Build.
	Engine engine.Config
	// Webhooks tunes webhook deliveries (the SSRF policy among them).
	Webhooks webhooks.Config
	Logger   *slog.Logger
	// SoleWriter says this process is the only one that writes Store (the
	// local server's embedded store): see catalog.WithSoleWriter.
	SoleWriter bool
}

// Services are what Build makes.
type Services struct {
	Access    *access.Access
	Catalog   *catalog.Catalog
	Engine    *engine.Engine
	Clusters  *cluster.Service
	Providers *provider.Registry // Parts.Providers, for the API and the EC2 sweep
	Audit     *audit.Log         // who changed what, for the API
	Usage     *usage.Reader      // node lifetimes, for the API
	// Webhooks registers endpoints and Deliveries delivers to them (the
	// engine's workers and janitor run it) and reads the delivery log.
	Webhooks   *webhooks.Registry
	Deliveries *webhooks.Deliverer
}

// Build assembles the services over p.
func Build(p Parts) (*Services, error) {
	if p.Store == nil || p.Queue == nil || p.Keyring == nil || p.Providers == nil {
		return nil, errors.New("assemble: Store, Queue, Keyring and Providers are required")
	}
	if p.Logger == nil {
		p.Logger = slog.New(slog.DiscardHandler)
	}
	var clusters *cluster.Service
	acc := access.New(p.Store)
	catOpts := []catalog.Option{catalog.WithProviders(p.Providers, p.Keyring)}
	if p.SoleWriter {
		catOpts = append(catOpts, catalog.WithSoleWriter())
	}
	cat := catalog.New(p.Store, func(ctx context.Context, tenant string) ([]domain.Cluster, error) { return clusters.Live(ctx, tenant) },
		catOpts...)
	ecfg := p.Engine
	ecfg.Logger = p.Logger
	ecfg.ExpireLease = func(ctx context.Context, tenant string, c domain.Cluster) error {
		return clusters.ExpireLease(ctx, tenant, c)
	}
	ecfg.Verify = func(ctx context.Context, tenant string, c domain.Cluster) error {
		return clusters.VerifyDue(ctx, tenant, c)
	}
	ecfg.Drift = func(ctx context.Context, tenant string, c domain.Cluster) error {
		return clusters.DriftDue(ctx, tenant, c)
	}
	ecfg.Repair = func(ctx context.Context, tenant string, c domain.Cluster) error {
		return clusters.RepairDue(ctx, tenant, c)
	}
	ecfg.Autoscale = func(ctx context.Context, tenant, cluster string) (bool, error) {
		return clusters.AutoscaleDue(ctx, tenant, cluster)
	}
	var exec *lateExecutor
	var executor engine.Executor
	if p.Automators != nil {
		exec = &lateExecutor{}
		executor = exec
	}
	eng := engine.New(p.Store, p.Queue, executor, ecfg)
	var err error
	clusters, err = cluster.New(cluster.Config{Store: p.Store, Catalog: cat, Access: acc, Engine: eng,
		Keyring: p.Keyring, Providers: p.Providers, Logger: p.Logger, PlanLaterNodes: planLaterNodes, Clock: ecfg.Clock})
	if err != nil {
		return nil, err
	}
	if exec != nil {
		exec.Executor, err = provision.New(provision.Config{Clusters: clusters, Providers: p.Providers, Keyring: p.Keyring,
			Automators: p.Automators, Logger: p.Logger, SSH: p.SSH})
		if err != nil {
			return nil, err
		}
	}
	hooks := webhooks.NewRegistry(p.Store, p.Keyring, p.Webhooks.Policy)
	deliveries := webhooks.NewDeliverer(p.Store, hooks, eng.SendHook, p.Webhooks)
	eng.SetHooks(deliveries)
	return &Services{Access: acc, Catalog: cat, Engine: eng, Clusters: clusters, Providers: p.Providers, Audit: audit.New(p.Store), Usage: usage.NewReader(p.Store),
		Webhooks: hooks, Deliveries: deliveries}, nil
}

// lateExecutor lets the engine be built before the dispatcher, which needs
// the cluster service, which needs the engine.
type lateExecutor struct{ engine.Executor }

// planLaterNodes is the create size from which the API request writes only
// the job and its inputs and answers 202, and the background (or, after a
// crash, the janitor) plans and writes the nodes and tasks: a 10,000-node
// create answers in tens of milliseconds on either store instead of
// seconds, well inside API Gateway's 30 s.
const planLaterNodes = 1000
