package api

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/access"
	"github.com/heddle-io/heddle/internal/catalog"
	"github.com/heddle-io/heddle/internal/cluster"
	"github.com/heddle-io/heddle/internal/engine"
	"github.com/heddle-io/heddle/internal/provider"
	"github.com/heddle-io/heddle/internal/provider/local"
	"github.com/heddle-io/heddle/internal/queue/memqueue"
	"github.com/heddle-io/heddle/internal/secrets"
	"github.com/heddle-io/heddle/internal/store"
)

// newClusterService is the cluster service the API tests run with: the real
// service and engine over the test's store, with no worker, so submitted
// jobs stay where they are and the tests see exactly what the API wrote.
func newClusterService(t testing.TB, db store.Store, acc *access.Access, cat *catalog.Catalog) *cluster.Service {
	t.Helper()
	q := memqueue.New(memqueue.Options{})
	for _, tenant := range []string{"acme", "globex"} {
		require.NoError(t, q.CreateTenantQueue(context.Background(), tenant))
	}
	key, err := secrets.LoadOrCreateKeyFile(filepath.Join(t.TempDir(), "master.key"))
	require.NoError(t, err)
	nodes, err := local.New(local.Config{Dir: t.TempDir()})
	require.NoError(t, err)
	t.Cleanup(nodes.Close)
	registry := provider.NewRegistry()
	require.NoError(t, registry.Register(local.Type(), nodes))
	svc, err := cluster.New(cluster.Config{Store: db, Catalog: cat, Access: acc,
		Engine: engine.New(db, q, engine.Simulation{}, engine.Config{}), Keyring: secrets.NewKeyring(key), Providers: registry,
		// Creates of 1,000 nodes or more planned in the background, so the
		// 10,000-node tests and benchmarks take that path.
		PlanLaterNodes: 1000})
	require.NoError(t, err)
	return svc
}

func (b *testBundle) clusterOf(t testing.TB, key, id string) map[string]any {
	t.Helper()
	status, body := b.do(t, key, http.MethodGet, "/v1/clusters/"+id, nil)
	require.Equal(t, http.StatusOK, status, "%v", body)
	return body
}

func TestClusterRoutesAnswerWithTheEnvelope(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.importExample(t, b.acmeKey)

	status, body := b.do(t, b.acmeKey, http.MethodPost, "/v1/clusters?dryRun=true", map[string]any{"name": "shop", "template": "web", "size": 3})
	require.Equal(t, http.StatusOK, status, "%v", body)
	require.Equal(t, true, body["dryRun"])
	require.NotEmpty(t, body["preview"].(map[string]any)["tasks"])

	resp := b.raw(t, b.acmeKey, http.MethodPost, "/v1/clusters", map[string]any{"name": "shop", "template": "web", "size": 3})
	resp.Body.Close()
	require.Equal(t, http.StatusAccepted, resp.StatusCode)
	location := resp.Header.Get("Location")
	require.Regexp(t, `^/v1/clusters/c[0-9a-f]+/jobs/j[0-9a-f]+$`, location)
	status, body = b.do(t, b.acmeKey, http.MethodGet, location, nil)
	require.Equal(t, http.StatusOK, status, "%v", body)
	require.Equal(t, "RUNNING", body["status"])
	require.NotEmpty(t, body["tasks"])
	clusterID := body["clusterId"].(string)

	// The create job holds the cluster: another operation is refused.
	status, body = b.do(t, b.acmeKey, http.MethodPost, "/v1/clusters/"+clusterID+"/expand", map[string]any{"count": 1})
	require.Equal(t, http.StatusConflict, status)
	code, e := errorOf(t, body)
	require.Equal(t, CodeClusterBusy, code)
	require.Contains(t, e["message"], "wait for it, or abort it")

	cases := []struct {
		name   string
		method string
		path   string
		body   any
		status int
		code   string
	}{
		{"bad dryRun", http.MethodPost, "/v1/clusters?dryRun=maybe", map[string]any{"name": "x", "template": "web", "size": 3}, 400, CodeInvalidParameter},
		{"no name", http.MethodPost, "/v1/clusters", map[string]any{"template": "web", "size": 3}, 400, CodeInvalidBody},
		{"wrong type", http.MethodPost, "/v1/clusters", map[string]any{"name": "x", "template": "web", "size": "three"}, 400, CodeInvalidBody},
		{"no layout", http.MethodPost, "/v1/clusters", map[string]any{"name": "x", "template": "web", "size": 1}, 422, ""},
		{"unknown job", http.MethodGet, "/v1/clusters/" + clusterID + "/jobs/j000", nil, 404, CodeNotFound},
		{"bad page size", http.MethodGet, "/v1/clusters?limit=0", nil, 400, CodeInvalidParameter},
		{"bad task status", http.MethodGet, location + "/tasks?status=DONE", nil, 400, CodeInvalidParameter},
		{"bad stage", http.MethodGet, location + "/tasks?stage=0", nil, 400, CodeInvalidParameter},
		{"bad rollback filter", http.MethodGet, location + "/tasks?rollback=perhaps", nil, 400, CodeInvalidParameter},
		{"task page too large", http.MethodGet, location + "/tasks?limit=501", nil, 400, CodeInvalidParameter},
		{"unknown task", http.MethodGet, location + "/tasks/nope%2Finstall", nil, 404, CodeNotFound},
		{"bad node status", http.MethodGet, "/v1/clusters/" + clusterID + "/nodes?status=GONE", nil, 400, CodeInvalidParameter},
		{"another tenant's nodes", http.MethodGet, "/v1/clusters/" + clusterID + "/nodes?status=GONE", nil, 404, CodeNotFound},
	}
	for _, c := range cases {
		key := b.acmeKey
		if strings.HasPrefix(c.name, "another tenant") {
			key = b.otherKey
		}
		status, body := b.do(t, key, c.method, c.path, c.body)
		require.Equal(t, c.status, status, "%s: %v", c.name, body)
		code, _ := errorOf(t, body)
		if c.code != "" {
			require.Equal(t, c.code, code, c.name)
		}
	}
	// The job view counts; its task listing filters and pages.
	status, body = b.do(t, b.acmeKey, http.MethodGet, location, nil)
	require.Equal(t, http.StatusOK, status)
	counts := body["taskStatus"].(map[string]any)
	status, page := b.do(t, b.acmeKey, http.MethodGet, location+"/tasks?status=READY&limit=1", nil)
	require.Equal(t, http.StatusOK, status, "%v", page)
	require.Len(t, page["items"], 1)
	if counts["READY"].(float64) > 1 {
		require.NotEmpty(t, page["nextCursor"])
	}
	status, page = b.do(t, b.acmeKey, http.MethodGet, location+"/tasks?stage=1&rollback=false", nil)
	require.Equal(t, http.StatusOK, status, "%v", page)
	require.EqualValues(t, body["stages"].([]any)[0].(map[string]any)["total"], len(page["items"].([]any)))
	status, body = b.do(t, b.acmeKey, http.MethodGet, "/v1/clusters?all=true", nil)
	require.Equal(t, http.StatusOK, status)
	require.Len(t, body["items"], 1, "refused requests created nothing")
}

func TestCatalogOnlyDeploymentAnswers503(t *testing.T) {
	t.Parallel()
	s := New(Config{})
	d := describe(errNoClusters)
	require.Equal(t, http.StatusServiceUnavailable, d.Status)
	require.Equal(t, CodeUnavailable, d.Code)
	_, err := s.clusterService()
	require.ErrorIs(t, err, errNoClusters)
}

func TestEngineErrorsReadAsSentences(t *testing.T) {
	t.Parallel()
	// A bare sentinel once made the not-found message panic (a 500).
	d := describe(engine.ErrNotFound)
	require.Equal(t, http.StatusNotFound, d.Status)
	require.Equal(t, "not found does not exist", d.Message)
	d = describe(fmt.Errorf("%w: cluster c1", engine.ErrNotFound))
	require.Equal(t, "cluster c1 does not exist", d.Message)
	d = describe(fmt.Errorf("%w: job j1 is working on cluster c1; wait for it, or abort it", engine.ErrClusterBusy))
	require.Equal(t, CodeClusterBusy, d.Code)
	require.Equal(t, "job j1 is working on cluster c1; wait for it, or abort it", d.Message)
}
