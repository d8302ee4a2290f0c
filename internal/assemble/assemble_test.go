package assemble

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/access"
	"github.com/heddle-io/heddle/internal/automator"
	"github.com/heddle-io/heddle/internal/automator/shell"
	"github.com/heddle-io/heddle/internal/catalog"
	"github.com/heddle-io/heddle/internal/cluster"
	"github.com/heddle-io/heddle/internal/demotest"
	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/provider"
	"github.com/heddle-io/heddle/internal/provider/local"
	"github.com/heddle-io/heddle/internal/queue/memqueue"
	"github.com/heddle-io/heddle/internal/secrets"
	"github.com/heddle-io/heddle/internal/store/boltstore"
)

func parts(t testing.TB) Parts {
	t.Helper()
	db, err := boltstore.Open(filepath.Join(t.TempDir(), "heddle.db"), boltstore.Options{NoSync: true})
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	key, err := secrets.LoadOrCreateKeyFile(filepath.Join(t.TempDir(), "master.key"))
	require.NoError(t, err)
	nodes, err := local.New(local.Config{Dir: t.TempDir()})
	require.NoError(t, err)
	t.Cleanup(nodes.Close)
	registry := provider.NewRegistry()
	require.NoError(t, registry.Register(local.Type(), nodes))
	return Parts{Store: db, Queue: memqueue.New(memqueue.Options{}), Keyring: secrets.NewKeyring(key), Providers: registry}
}

// tenantWithCatalog makes tenant acme (with its queue) and imports the demo
// catalog into it.
func tenantWithCatalog(t *testing.T, p Parts, svc *Services) access.Principal {
	t.Helper()
	ctx := context.Background()
	_, _, err := svc.Access.CreateTenant(ctx, domain.Tenant{ID: "acme", Workers: 1, MaxClusters: 2, MaxNodes: 10}, "")
	require.NoError(t, err)
	require.NoError(t, p.Queue.(*memqueue.Queue).CreateTenantQueue(ctx, "acme"))
	raw, err := os.ReadFile(demotest.Catalog)
	require.NoError(t, err)
	doc, err := catalog.DecodeDocument(raw)
	require.NoError(t, err)
	_, err = svc.Catalog.Import(ctx, "acme", doc)
	require.NoError(t, err)
	return access.Principal{Tenant: "acme", User: "ann", Role: domain.RoleAdmin}
}

func TestBuildRefusesMissingParts(t *testing.T) {
	t.Parallel()
	_, err := Build(Parts{})
	require.ErrorContains(t, err, "Store, Queue, Keyring and Providers are required")
}

// The circle Build closes: the catalog asks the cluster service which
// clusters are live, the cluster service submits through the engine, and the
// engine runs tasks through the dispatcher, which reads the cluster's spec
// from the cluster service.
func TestBuildClosesTheCircle(t *testing.T) {
	t.Parallel()
	p := parts(t)
	sh := shell.New(shell.Config{})
	t.Cleanup(sh.Close)
	p.Automators = map[string]automator.Automator{shell.Type: sh}
	svc, err := Build(p)
	require.NoError(t, err)
	ctx := context.Background()
	live, err := svc.Clusters.Live(ctx, "acme")
	require.NoError(t, err)
	require.Empty(t, live)
	r, err := svc.Engine.RunJanitor(ctx)
	require.NoError(t, err)
	require.Zero(t, r.LeasesExpired)

	who := tenantWithCatalog(t, p, svc)
	res, err := svc.Clusters.Create(ctx, who, cluster.CreateRequest{Name: "shop", Template: "web", Size: 2}, false)
	require.NoError(t, err)

	// catalog -> cluster service: the template the live cluster was made
	// from (which nothing else in the catalog refers to) cannot go.
	var refused *catalog.ReferencedError
	require.ErrorAs(t, svc.Catalog.Delete(ctx, "acme", domain.KindClusterTemplate, "web", ""), &refused)
	require.Contains(t, refused.Referrers, catalog.Ref{Kind: catalog.KindCluster, Name: res.Cluster.ID})

	// engine -> dispatcher -> cluster service -> local provider: the first
	// task a worker takes (a node's create) really makes the node.
	ds, err := p.Queue.Receive(ctx, "acme", 1, time.Second, time.Minute)
	require.NoError(t, err)
	require.Len(t, ds, 1)
	_, err = svc.Engine.Handle(ctx, "acme", ds[0])
	require.NoError(t, err)
	tasks, err := svc.Engine.Tasks(ctx, "acme", res.Job.ID)
	require.NoError(t, err)
	created := 0
	for _, task := range tasks {
		if task.Action == domain.ActionCreate && task.Status == domain.TaskSucceeded {
			created++
		}
	}
	require.Positive(t, created, "a create ran through the dispatcher")
}

func TestBuildWithoutAutomatorsStillSubmits(t *testing.T) {
	t.Parallel()
	p := parts(t)
	svc, err := Build(p) // the API and janitor Lambdas: no executor
	require.NoError(t, err)
	require.NotNil(t, svc.Engine)
	require.NotNil(t, svc.Clusters)
	require.Same(t, p.Providers, svc.Providers)
	who := tenantWithCatalog(t, p, svc)
	_, err = svc.Clusters.Create(context.Background(), who, cluster.CreateRequest{Name: "shop", Template: "web", Size: 2}, false)
	require.NoError(t, err)
	ds, err := p.Queue.Receive(context.Background(), "acme", 10, time.Second, time.Minute)
	require.NoError(t, err)
	require.NotEmpty(t, ds, "the create's first tasks wait in the tenant's queue for a worker")
}
