package engine

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/store"
	"github.com/heddle-io/heddle/planner"
)

// writtenKeys wraps a store and records the key of every op it wrote,
// while on (the store's Counts count refused ones too).
type writtenKeys struct {
	store.Store
	mu   sync.Mutex
	on   bool
	keys []store.Key
}

func (w *writtenKeys) note(ops ...store.Op) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.on {
		for _, op := range ops {
			w.keys = append(w.keys, op.Key)
		}
	}
}

func (w *writtenKeys) Write(ctx context.Context, op store.Op) (store.Item, error) {
	it, err := w.Store.Write(ctx, op)
	if err == nil {
		w.note(op)
	}
	return it, err
}

func (w *writtenKeys) Transact(ctx context.Context, ops []store.Op) error {
	err := w.Store.Transact(ctx, ops)
	if err == nil {
		w.note(ops...)
	}
	return err
}

func (w *writtenKeys) start() {
	w.mu.Lock()
	w.on, w.keys = true, nil
	w.mu.Unlock()
}

func (w *writtenKeys) stop() []store.Key {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.on = false
	return w.keys
}

// checkedServices is services() with a check action on app.
func checkedServices() map[string]*domain.Service {
	s := services()
	app := *s["app"]
	app.Actions = map[domain.Action]domain.ServiceAction{domain.ActionCheck: {Type: "shell"}}
	s["app"] = &app
	return s
}

// driftBundle is a test bundle whose engine writes through a key recorder,
// with an ACTIVE cluster c1 of n nodes whose services heddle recorded
// running. The cluster is made by a create whose plan is a drift check's
// (tasks the simulation answers at once): what matters here is the
// cluster's record, not how it was built.
func driftBundle(t testing.TB, n int) (*testBundle, *writtenKeys) {
	t.Helper()
	b := setup(t, nil, Config{})
	rec := &writtenKeys{Store: b.counts}
	b.eng = New(rec, b.q, b.rec, b.eng.cfg)
	nodes := layout("c1", n)
	ids := make([]string, n)
	for i := range nodes {
		ids[i] = nodes[i].ID
		nodes[i].ServiceStates = map[string]domain.ServiceState{}
		for _, s := range nodes[i].Services {
			nodes[i].ServiceStates[s] = domain.ServiceState{State: domain.RunRunning, Action: domain.ActionStart, JobID: "j0", At: time.Now()}
		}
	}
	plan, err := planner.Drift(nodes, checkedServices())
	require.NoError(t, err)
	job, err := b.eng.Submit(b.ctx, Submission{
		Tenant: tenant, Cluster: domain.Cluster{ID: "c1", Name: "c1", Owner: "ann", Status: domain.ClusterPending, CreatedAt: time.Now()},
		Create: true, ClusterStatus: domain.ClusterPending, NewNodes: nodes, Operation: domain.OpCreate, RequestedBy: "ann",
		Plan: plan, TakeClusters: 1, TakeNodes: n,
		OnSuccess: Effect{ClusterStatus: domain.ClusterActive, NodeStatus: domain.NodeActive, Nodes: ids},
		OnFailure: Effect{ClusterStatus: domain.ClusterFailed},
	})
	require.NoError(t, err)
	stop := b.run(t, 16, time.Second)
	defer stop()
	require.Equal(t, domain.JobSucceeded, b.waitJobQuietly(t, "c1", job.ID, 5*time.Minute).Status)
	return b, rec
}

// driftPass submits a drift check of c1 (with config findings, as the
// cluster service hands them over) and waits for its end.
func driftPass(t testing.TB, b *testBundle, workers int, stale []domain.DriftFinding) *domain.ClusterDrift {
	t.Helper()
	nodes, err := b.eng.Nodes(b.ctx, tenant, "c1")
	require.NoError(t, err)
	plan, err := planner.Drift(nodes, checkedServices())
	require.NoError(t, err)
	c, err := b.eng.Cluster(b.ctx, tenant, "c1")
	require.NoError(t, err)
	keep := Effect{ClusterStatus: c.Status}
	onSuccess := keep
	onSuccess.Drift = stale
	job, err := b.eng.Submit(b.ctx, Submission{Tenant: tenant, Cluster: c, Operation: domain.OpDrift, RequestedBy: "ann",
		Plan: plan, OnSuccess: onSuccess, OnFailure: keep})
	require.NoError(t, err)
	stop := b.run(t, workers, time.Second)
	defer stop()
	require.Equal(t, domain.JobSucceeded, b.waitJobQuietly(t, "c1", job.ID, 5*time.Minute).Status)
	c, err = b.eng.Cluster(b.ctx, tenant, "c1")
	require.NoError(t, err)
	require.NotNil(t, c.Drift)
	require.Equal(t, job.ID, c.Drift.JobID)
	return c.Drift
}

// outsideTheJob keeps the written keys that are not the drift job's own
// records (its job and task items, its index and event entries), by
// partition kind: what a drift pass costs the cluster's record.
func outsideTheJob(keys []store.Key) map[string]int {
	out := map[string]int{}
	for _, k := range keys {
		_, rest, ok := store.TenantOf(k.PK)
		if !ok {
			continue // the index and outbox partitions
		}
		kind, _, _ := strings.Cut(rest, "#")
		switch kind {
		case "JOBS", "TASKS", "TASKIDX", "DEFERRED", "ROLLBACK", "EVENTS", "JOBLISTS", "VERIFYDUE", "DELIVERIES":
			continue
		case "NODESUM":
			// The node summary every job rewrites at its start and end
			// (nodesummary.go): job bookkeeping, not the drift's.
			continue
		}
		out[kind+" "+k.SK]++
	}
	return out
}

// TestCleanDriftPassWritesOnlyTheClusterItem: a drift check that finds
// nothing writes no node item; of the cluster's records it writes its
// cluster item alone (the lock taken, and released with the report).
func TestCleanDriftPassWritesOnlyTheClusterItem(t *testing.T) {
	t.Parallel()
	b, rec := driftBundle(t, 40)
	rec.start()
	d := driftPass(t, b, 8, nil)
	written := outsideTheJob(rec.stop())
	require.Zero(t, d.Drifted)
	require.Equal(t, 40, d.Nodes)
	require.Equal(t, map[string]int{"CLUSTERS c1": 2}, written,
		"one item of the cluster's record: its cluster item, locked at the start and released with the report; no node item")
}

// TestDriftPassReportsFindingsAndKeepsTheirFirstTime: the probes', the
// checks' and the handed-over config findings make the report; a check
// that fails on a service recorded running is serviceDown, and a finding
// seen again keeps its first time.
func TestDriftPassReportsFindingsAndKeepsTheirFirstTime(t *testing.T) {
	t.Parallel()
	b, _ := driftBundle(t, 4)
	b.rec.hook = nil
	exec := &driftExecutor{inner: Simulation{}, probe: map[string]domain.DriftKind{"c1-1003": domain.DriftUnreachable}, failCheck: map[string]bool{"c1-1002": true}}
	b.eng.exec = exec
	stale := []domain.DriftFinding{{Node: "c1-1002", Service: "app", Kind: domain.DriftConfigStale, Detail: "applied a, renders b"}}
	first := driftPass(t, b, 4, stale)
	require.Equal(t, 2, first.Drifted)
	require.Equal(t, map[domain.DriftKind]int{domain.DriftServiceDown: 1, domain.DriftConfigStale: 1, domain.DriftUnreachable: 1}, first.Counts,
		"c1-1003's app check fails too, explained by its node")
	second := driftPass(t, b, 4, stale)
	require.Equal(t, first.Findings[0].Since, second.Findings[0].Since)
	require.True(t, second.At.After(first.At))
	exec.probe, exec.failCheck = nil, nil
	clean := driftPass(t, b, 4, nil)
	require.Zero(t, clean.Drifted)
}

// driftExecutor answers probes and checks as a test says: a probe of a
// node in probe finds that kind; a check on a node in failCheck fails.
type driftExecutor struct {
	inner     Executor
	probe     map[string]domain.DriftKind
	failCheck map[string]bool
}

func (x *driftExecutor) Execute(ctx context.Context, a Attempt) Result {
	switch {
	case a.Task.Action == domain.ActionProbe && x.probe[a.Task.NodeID] != "":
		return Result{Drift: x.probe[a.Task.NodeID], Err: errUnreachableForTest}
	case a.Task.Action == domain.ActionCheck && (x.failCheck[a.Task.NodeID] || x.probe[a.Task.NodeID] != ""):
		return Result{Err: errUnreachableForTest, ExitCode: 1}
	}
	return x.inner.Execute(ctx, a)
}

var errUnreachableForTest = &testError{"dial tcp: connection refused"}

type testError struct{ s string }

func (e *testError) Error() string { return e.s }

// BenchmarkDriftPass measures a drift check of a 1,000-node cluster whose
// probes find nothing, through the embedded engine with simulated probes
// and checks (what the engine and the store pay; the SSH round trips are
// the nodes'): store writes per node, writes outside the job's own records
// (the cluster item alone), and the pass's wall time.
//
//	go test -run '^$' -bench DriftPass -benchtime 3x ./internal/engine/
func BenchmarkDriftPass(b *testing.B) {
	const nodes, workers = 1000, 64
	tb, rec := driftBundle(b, nodes)
	var writes, outside float64
	var elapsed time.Duration
	for b.Loop() {
		tb.counts.Reset()
		rec.start()
		start := time.Now()
		d := driftPass(b, tb, workers, nil)
		elapsed += time.Since(start)
		written := outsideTheJob(rec.stop())
		require.Zero(b, d.Drifted)
		c := tb.counts.Counts()
		writes += float64(c.Writes + c.Checks)
		for _, n := range written {
			outside += float64(n)
		}
		require.Equal(b, map[string]int{"CLUSTERS c1": 2}, written)
	}
	runs := float64(b.N)
	b.ReportMetric(writes/runs/nodes, "writes/node")
	b.ReportMetric(outside/runs, "cluster-writes/pass")
	b.ReportMetric(elapsed.Seconds()/runs, "s/pass")
}

// TestDriftChecksAreScheduledAfterCreateAndEachCheck: a cluster whose
// resolved template sets driftEvery has a drift check due that long after
// its create and after each check; the janitor hands a due one to
// Config.Drift (not before it is due, not while a job holds the cluster)
// and drops it; a cluster with no period gets none.
func TestDriftChecksAreScheduledAfterCreateAndEachCheck(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	now := time.Now().UTC()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	var asked []string
	cfg := Config{Clock: clock, Drift: func(_ context.Context, _ string, c domain.Cluster) error {
		mu.Lock()
		defer mu.Unlock()
		asked = append(asked, c.ID)
		return nil
	}}
	b := setup(t, nil, cfg)
	every := domain.Duration(10 * time.Minute)
	off := domain.Duration(0)
	for _, c := range []struct {
		id    string
		every *domain.Duration
	}{{"c1", &every}, {"c2", &off}} {
		sub := createSubmission(t, c.id, 3, nil)
		sub.Cluster.Resolved = &domain.ClusterTemplate{TemplateSections: domain.TemplateSections{Administration: domain.Administration{DriftEvery: c.every}}}
		job, err := b.eng.Submit(b.ctx, sub)
		require.NoError(t, err)
		stop := b.run(t, 4, time.Hour)
		require.Equal(t, domain.JobSucceeded, b.waitJob(t, c.id, job.ID, time.Minute).Status)
		stop()
	}
	due := func(id string) bool {
		_, err := b.db.Get(b.ctx, driftDueKey(tenant, id))
		return err == nil
	}
	require.True(t, due("c1"), "the create made a drift check due")
	require.False(t, due("c2"), "driftEvery 0: none")

	r, err := b.eng.RunJanitor(b.ctx)
	require.NoError(t, err)
	require.Zero(t, r.DriftChecks, "not due yet")
	advance(11 * time.Minute)
	r, err = b.eng.RunJanitor(b.ctx)
	require.NoError(t, err)
	require.Equal(t, 1, r.DriftChecks)
	mu.Lock()
	require.Equal(t, []string{"c1"}, asked)
	mu.Unlock()
	require.False(t, due("c1"), "handed over, then dropped")

	// The check's end makes the next one due a period later.
	d := driftPass(t, b, 4, nil)
	require.Zero(t, d.Drifted)
	require.True(t, due("c1"))
	r, err = b.eng.RunJanitor(b.ctx)
	require.NoError(t, err)
	require.Zero(t, r.DriftChecks)
}
