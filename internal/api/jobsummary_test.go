package api

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/access"
	"github.com/heddle-io/heddle/internal/audit"
	"github.com/heddle-io/heddle/internal/catalog"
	"github.com/heddle-io/heddle/internal/cluster"
	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/engine"
	"github.com/heddle-io/heddle/internal/provider"
	"github.com/heddle-io/heddle/internal/provider/local"
	"github.com/heddle-io/heddle/internal/queue/memqueue"
	"github.com/heddle-io/heddle/internal/secrets"
	"github.com/heddle-io/heddle/internal/store"
	"github.com/heddle-io/heddle/internal/store/boltstore"
	"github.com/heddle-io/heddle/internal/usage"
)

// summaryBundle serves the API over db with workers running the simulation
// executor, job views reading job summaries and creates planned in the
// background from the smallest on (cluster.Config.SummaryMinTasks and
// PlanLaterNodes 1), so small jobs take the big jobs' paths.
func summaryBundle(t *testing.T, db store.Store) *testBundle {
	t.Helper()
	b, _ := summaryBundleWith(t, db, engine.Config{})
	return b
}

// summaryBundleWith is summaryBundle with the engine configured as cfg;
// it also returns the engine.
func summaryBundleWith(t *testing.T, db store.Store, cfg engine.Config) (*testBundle, *engine.Engine) {
	t.Helper()
	acc := access.New(db)
	root, err := acc.Bootstrap(context.Background(), "")
	require.NoError(t, err)
	q := memqueue.New(memqueue.Options{})
	require.NoError(t, q.CreateTenantQueue(context.Background(), "acme"))
	key, err := secrets.LoadOrCreateKeyFile(filepath.Join(t.TempDir(), "master.key"))
	require.NoError(t, err)
	nodes, err := local.New(local.Config{Dir: t.TempDir()})
	require.NoError(t, err)
	t.Cleanup(nodes.Close)
	registry := provider.NewRegistry()
	require.NoError(t, registry.Register(local.Type(), nodes))
	eng := engine.New(db, q, engine.Simulation{}, cfg)
	var clusters *cluster.Service
	cat := catalog.New(db, func(ctx context.Context, tenant string) ([]domain.Cluster, error) { return clusters.Live(ctx, tenant) })
	clusters, err = cluster.New(cluster.Config{Store: db, Catalog: cat, Access: acc, Engine: eng,
		Keyring: secrets.NewKeyring(key), Providers: registry, SummaryMinTasks: 1, PlanLaterNodes: 1})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); eng.RunWorkers(ctx, "acme", 2) }()
	t.Cleanup(func() { cancel(); wg.Wait() })
	s := New(Config{Catalog: cat, Access: acc, Clusters: clusters, Backend: "bolt", Version: "test", Logger: testLogger(t), Audit: audit.New(db), Usage: usage.NewReader(db)})
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	b := &testBundle{srv: srv, api: s, rootKey: root}
	b.acmeKey = b.createTenant(t, "acme")
	b.importExample(t, b.acmeKey)
	return b, eng
}

// allTasks follows a job's task pages to the end.
func (b *testBundle) allTasks(t *testing.T, path string) []map[string]any {
	t.Helper()
	var out []map[string]any
	cursor := ""
	for {
		p := path + "?limit=7"
		if cursor != "" {
			p += "&cursor=" + cursor
		}
		status, body := b.do(t, b.acmeKey, http.MethodGet, p, nil)
		require.Equal(t, http.StatusOK, status, "%v", body)
		for _, it := range body["items"].([]any) {
			out = append(out, it.(map[string]any))
		}
		next, _ := body["nextCursor"].(string)
		if next == "" {
			return out
		}
		cursor = next
	}
}

// TestJobSummaryIsARecount drives a create (planned again and written in
// the background: the request stores only its inputs) to ACTIVE and
// checks that the
// job view read from its summary counts what its tasks say (each task
// listed once through the pages, the first of which comes from the
// summary), and that a summary stored while the job ran (as by a process
// that died then) is recounted once the job has ended, and holds after.
func TestJobSummaryIsARecount(t *testing.T) {
	t.Parallel()
	db, err := boltstore.Open(filepath.Join(t.TempDir(), "heddle.db"), boltstore.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	b := summaryBundle(t, db)

	status, body := b.do(t, b.acmeKey, http.MethodPost, "/v1/clusters", map[string]any{"name": "shop", "template": "web", "size": 3})
	require.Equal(t, http.StatusAccepted, status, "%v", body)
	id := body["cluster"].(map[string]any)["id"].(string)
	jobID := body["job"].(map[string]any)["id"].(string)
	require.Equal(t, string(domain.JobPending), body["job"].(map[string]any)["status"], "answered before the plan is written")
	jobPath := "/v1/clusters/" + id + "/jobs/" + jobID
	// A view once it has started (a PENDING job is counted on every view)
	// stores a summary.
	var running map[string]any
	require.Eventually(t, func() bool {
		status, running = b.do(t, b.acmeKey, http.MethodGet, jobPath, nil)
		require.Equal(t, http.StatusOK, status, "%v", running)
		return running["status"] != string(domain.JobPending)
	}, 30*time.Second, 5*time.Millisecond, "the background planned, wrote and started the job")
	require.NotEmpty(t, running["countedAt"], "a summarized view says when it counted")
	stale, err := db.Get(context.Background(), store.Key{PK: store.TenantPK("acme", "JOBSUM"), SK: jobID})
	require.NoError(t, err)

	require.Eventually(t, func() bool {
		return b.clusterOf(t, b.acmeKey, id)["status"] == string(domain.ClusterActive)
	}, 60*time.Second, 20*time.Millisecond)
	// As if a process had stored a summary while the job ran and nothing
	// recounted since (the job may already have ended at the first view,
	// so the stored one is made a running job's): the first view after
	// the end recounts.
	var planted map[string]any
	require.NoError(t, json.Unmarshal(stale.Data, &planted))
	planted["jobStatus"], planted["endedAt"] = string(domain.JobRunning), time.Time{}
	planted["taskStatus"] = map[string]int{string(domain.TaskReady): 1}
	stale.Data, err = json.Marshal(planted)
	require.NoError(t, err)
	_, err = db.Write(context.Background(), store.Put(stale, store.Condition{}))
	require.NoError(t, err)

	status, view := b.do(t, b.acmeKey, http.MethodGet, jobPath, nil)
	require.Equal(t, http.StatusOK, status, "%v", view)
	require.Equal(t, string(domain.JobSucceeded), view["status"])
	listed := b.allTasks(t, jobPath+"/tasks")
	seen := map[string]bool{}
	counted := map[string]any{}
	for _, task := range listed {
		id := task["id"].(string)
		require.False(t, seen[id], "task %s listed twice", id)
		seen[id] = true
		if rb, _ := task["rollback"].(bool); !rb {
			n, _ := counted[task["status"].(string)].(float64)
			counted[task["status"].(string)] = n + 1
		}
	}
	require.Equal(t, counted, view["taskStatus"], "the summary's counts are a recount")
	require.Equal(t, map[string]any{string(domain.TaskSucceeded): view["taskTotal"]}, view["taskStatus"])
	first := view["tasks"].([]any)
	require.Equal(t, listed[0]["id"], first[0].(map[string]any)["id"], "the view's first task is the pages' first")
	require.Equal(t, float64(len(listed)), float64(len(first))+numberOr(view["tasksOmitted"]))

	// The ended job's summary holds: the next view does not recount.
	_, again := b.do(t, b.acmeKey, http.MethodGet, jobPath, nil)
	require.Equal(t, view["countedAt"], again["countedAt"])
	cv := b.clusterOf(t, b.acmeKey, id)
	require.Equal(t, map[string]any{string(domain.NodeActive): float64(3)}, cv["nodeStatus"])
	require.Equal(t, view["stages"], cv["progress"].(map[string]any)["stages"])
}

func numberOr(v any) float64 {
	n, _ := v.(float64)
	return n
}
