package api

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/access"
	"github.com/heddle-io/heddle/internal/catalog"
	"github.com/heddle-io/heddle/internal/cluster"
	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/engine"
	"github.com/heddle-io/heddle/internal/provider"
	"github.com/heddle-io/heddle/internal/provider/local"
	"github.com/heddle-io/heddle/internal/provider/static"
	"github.com/heddle-io/heddle/internal/queue/memqueue"
	"github.com/heddle-io/heddle/internal/secrets"
	"github.com/heddle-io/heddle/internal/sshexec"
	"github.com/heddle-io/heddle/internal/store"
	"github.com/heddle-io/heddle/internal/store/boltstore"
)

// poolBundle serves the API with the cluster service over the static
// provider (and no worker: submitted jobs stay where they are), tenant
// acme having the demo catalog and docs/examples/static-pool.yaml, whose
// pool "pool" has hosts registered (never contacted).
type poolTestBundle struct {
	*testBundle
	db store.Store
}

func poolBundle(t testing.TB, hosts int) poolTestBundle {
	t.Helper()
	ctx := context.Background()
	db, err := boltstore.Open(filepath.Join(t.TempDir(), "heddle.db"), boltstore.Options{NoSync: true})
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	key, err := secrets.LoadOrCreateKeyFile(filepath.Join(t.TempDir(), "master.key"))
	require.NoError(t, err)
	kr := secrets.NewKeyring(key)
	reg := provider.NewRegistry()
	nodes, err := local.New(local.Config{Dir: t.TempDir()})
	require.NoError(t, err)
	t.Cleanup(nodes.Close)
	require.NoError(t, reg.Register(local.Type(), nodes))
	pool := static.NewPool(db, kr)
	require.NoError(t, reg.Register(static.Type(), static.New(pool, static.Config{})))
	acc := access.New(db)
	root, err := acc.Bootstrap(ctx, "")
	require.NoError(t, err)
	var clusters *cluster.Service
	cat := catalog.New(db, func(ctx context.Context, tenant string) ([]domain.Cluster, error) { return clusters.Live(ctx, tenant) },
		catalog.WithProviders(reg, kr))
	q := memqueue.New(memqueue.Options{})
	require.NoError(t, q.CreateTenantQueue(ctx, "acme"))
	clusters, err = cluster.New(cluster.Config{Store: db, Catalog: cat, Access: acc,
		Engine: engine.New(db, q, engine.Simulation{}, engine.Config{}), Keyring: kr, Providers: reg})
	require.NoError(t, err)
	s := New(Config{Catalog: cat, Access: acc, Clusters: clusters, Providers: reg, Backend: "bolt", Version: "test", Logger: testLogger(t)})
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	b := &testBundle{srv: srv, api: s, rootKey: root}
	b.acmeKey = b.createTenant(t, "acme")
	b.importExample(t, b.acmeKey)
	doc, err := os.ReadFile("../../docs/examples/static-pool.yaml")
	require.NoError(t, err)
	status, body := b.do(t, b.acmeKey, http.MethodPost, "/v1/catalog", doc, "Content-Type", "application/yaml")
	require.Equal(t, http.StatusOK, status, "%v", body)
	kp, err := sshexec.GenerateKeyPair()
	require.NoError(t, err)
	var specs []any
	for i := range hosts {
		specs = append(specs, map[string]any{"id": fmt.Sprintf("h%d", i), "address": "192.0.2.10", "user": "admin", "privateKey": string(kp.PrivateKey)})
	}
	status, body = b.do(t, b.acmeKey, http.MethodPost, "/v1/providers/pool/hosts", map[string]any{"hosts": specs})
	require.Equal(t, http.StatusOK, status, "%v", body)
	return poolTestBundle{testBundle: b, db: db}
}

// requirePoolExhausted checks the refusal: 409, code pool_exhausted, the
// request's field and the pool named.
func requirePoolExhausted(t testing.TB, status int, body map[string]any, field, msg string) {
	t.Helper()
	require.Equal(t, http.StatusConflict, status, "%v", body)
	code, e := errorOf(t, body)
	require.Equal(t, CodePoolExhausted, code)
	require.Contains(t, e["message"], msg)
	var fields []string
	for _, d := range e["details"].([]any) {
		fields = append(fields, d.(map[string]any)["field"].(string))
	}
	require.Equal(t, []string{field, "provider"}, fields)
}

// requireForeseen checks a dry run's answer: the preview, with the
// refusal the real request would meet.
func requireForeseen(t testing.TB, status int, body map[string]any, field, msg string) {
	t.Helper()
	require.Equal(t, http.StatusOK, status, "%v", body)
	require.Equal(t, true, body["dryRun"])
	require.NotEmpty(t, body["preview"])
	refusal, ok := body["refusal"].(map[string]any)
	require.True(t, ok, "the dry run foresees the refusal: %v", body)
	require.Equal(t, CodePoolExhausted, refusal["code"])
	require.Equal(t, field, refusal["field"])
	require.Equal(t, "pool", refusal["pool"])
	require.Contains(t, refusal["message"], msg)
}

// TestPoolCapacityIsCheckedInTheDryRunAndAtSubmission: a layout the static
// pool cannot hold is refused with the reason before anything is written,
// for a create (field size) and an expand (field count); the dry run shows
// its preview with that refusal foreseen, as it does the tenant's quota.
func TestPoolCapacityIsCheckedInTheDryRunAndAtSubmission(t *testing.T) {
	t.Parallel()
	b := poolBundle(t, 5)
	status, body := b.do(t, b.acmeKey, http.MethodPost, "/v1/clusters?dryRun=true", map[string]any{"name": "shop", "template": "web-static", "size": 6})
	requireForeseen(t, status, body, "size", "pool `pool` has 5 free hosts, 6 needed")
	status, body = b.do(t, b.acmeKey, http.MethodPost, "/v1/clusters", map[string]any{"name": "shop", "template": "web-static", "size": 6})
	requirePoolExhausted(t, status, body, "size", "pool `pool` has 5 free hosts, 6 needed")
	status, body = b.do(t, b.acmeKey, http.MethodGet, "/v1/clusters", nil)
	require.Equal(t, http.StatusOK, status)
	require.Empty(t, body["items"], "a refused create writes no cluster")

	status, body = b.do(t, b.acmeKey, http.MethodPost, "/v1/clusters", map[string]any{"name": "shop", "template": "web-static", "size": 4})
	require.Equal(t, http.StatusAccepted, status, "%v", body)
	// The create's job runs (no worker here: its nodes never take their
	// hosts), so its hold still promises 4 of the 5 hosts.
	status, body = b.do(t, b.acmeKey, http.MethodPost, "/v1/clusters?dryRun=true", map[string]any{"name": "more", "template": "web-static", "size": 2})
	requireForeseen(t, status, body, "size", "pool `pool` has 1 free host, 2 needed")
}

// TestTwoSubmissionsThatEachFitOnlyOneWins: two creates of 3 nodes on a
// pool of 5 hosts, at once: each fits alone, not both. The hold is
// conditional (the pool's head item, on the version each read), so one
// is accepted and the other refused with pool_exhausted, having written
// nothing. The winner's hosts go back with its job's end (engine's
// TestHoldsAreTakenAndGivenBackWithTheJob: finish, failPending, retry).
func TestTwoSubmissionsThatEachFitOnlyOneWins(t *testing.T) {
	t.Parallel()
	b := poolBundle(t, 5)
	statuses := make([]int, 2)
	bodies := make([]map[string]any, 2)
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			statuses[i], bodies[i] = b.do(t, b.acmeKey, http.MethodPost, "/v1/clusters", map[string]any{"name": fmt.Sprintf("shop%d", i), "template": "web-static", "size": 3})
		}()
	}
	wg.Wait()
	won := 0
	for i := range 2 {
		if statuses[i] == http.StatusAccepted {
			won++
			continue
		}
		requirePoolExhausted(t, statuses[i], bodies[i], "size", "pool `pool` has 2 free hosts, 3 needed")
	}
	require.Equal(t, 1, won, "%v", bodies)
	status, body := b.do(t, b.acmeKey, http.MethodGet, "/v1/clusters", nil)
	require.Equal(t, http.StatusOK, status)
	require.Len(t, body["items"], 1, "the refused create wrote no cluster")
	specs, err := b.db.Query(context.Background(), store.TenantPK("acme", "CLUSTERSPECS"), store.Query{})
	require.NoError(t, err)
	require.Len(t, specs.Items, 1, "nor kept a spec")
}
