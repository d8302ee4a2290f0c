package engine

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/access"
	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/queue"
	"github.com/heddle-io/heddle/internal/queue/memqueue"
	"github.com/heddle-io/heddle/internal/queue/sqsqueue"
	"github.com/heddle-io/heddle/internal/store"
	"github.com/heddle-io/heddle/internal/store/boltstore"
	"github.com/heddle-io/heddle/internal/store/dynamotest"
	"github.com/heddle-io/heddle/planner"
)

// recorder wraps an executor and logs every execution with a global
// sequence number at its start and its end: the checker proves ordering and
// exactly-once from this log, not from clocks.
type recorder struct {
	inner Executor
	seq   atomic.Int64
	mu    sync.Mutex
	runs  []execution
	// hook, when set, runs at the start of every execution.
	hook func(ctx context.Context, a Attempt)
}

type execution struct {
	job, task  string
	attempt    int
	start, end int64
	ok         bool
	poll       bool // a poll of a parked attempt, not a run
}

func (r *recorder) Execute(ctx context.Context, a Attempt) Result {
	start := r.seq.Add(1)
	if r.hook != nil {
		r.hook(ctx, a)
	}
	res := r.inner.Execute(ctx, a)
	end := r.seq.Add(1)
	// A run whose worker died with it in hand (its context canceled) is no
	// success the engine saw, even if the executor finished it: under load
	// such a run can end after the janitor's retry succeeded and its
	// dependents started, and counting it would date the success too late.
	ok := res.Err == nil && res.PollAfter == 0 && ctx.Err() == nil
	r.mu.Lock()
	r.runs = append(r.runs, execution{job: a.Task.JobID, task: a.Task.ID, attempt: a.Task.Attempt, start: start, end: end, ok: ok, poll: a.Poll != ""})
	r.mu.Unlock()
	return res
}

type testBundle struct {
	ctx    context.Context
	db     store.Store
	counts *store.Counting
	q      queue.Queue
	eng    *Engine
	rec    *recorder
	acc    *access.Access
}

const tenant = "acme"

// eachBackend runs a reliability test on the embedded backends (bolt store,
// memqueue) and on the AWS ones: DynamoDB Local (HEDDLE_DYNAMODB_ENDPOINT,
// from scripts/dynamodb-local.sh) plus the SQS backend on fauxqs
// (HEDDLE_SQS_ENDPOINT, from scripts/fauxqs.sh); skipped when either is
// unset, except in CI. setup reads which one from the subtest's name.
// Tests that move a queue's clock by hand stay on memqueue (SQS has no
// such clock); dropped messages need no emulator support (lossyQueue drops
// them before they are sent), so those tests run on both.
func eachBackend(t *testing.T, run func(t *testing.T)) {
	t.Run("embedded", func(t *testing.T) {
		t.Parallel()
		run(t)
	})
	t.Run("dynamodb", func(t *testing.T) {
		t.Parallel()
		dynamotest.Endpoint(t) // skips without DynamoDB Local (fails in CI)
		if os.Getenv(sqsEndpointVar) == "" {
			if os.Getenv("CI") == "true" {
				t.Fatal("CI=true but " + sqsEndpointVar + " is unset: run scripts/fauxqs.sh start and eval its env")
			}
			t.Skip(sqsEndpointVar + " is unset: run scripts/fauxqs.sh start and eval its env")
		}
		run(t)
	})
}

// openStore opens the store the test runs on (see eachBackend).
func openStore(t testing.TB) store.Store {
	t.Helper()
	if strings.HasSuffix(t.Name(), "/dynamodb") {
		return dynamotest.Store(t, "engine")
	}
	db, err := boltstore.Open(filepath.Join(t.TempDir(), "heddle.db"), boltstore.Options{NoSync: os.Getenv("HEDDLE_BENCH_NOSYNC") != ""})
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	return db
}

const sqsEndpointVar = "HEDDLE_SQS_ENDPOINT"

// openQueue returns the queue the test runs on (see eachBackend): the
// tenant's SQS FIFO queue on fauxqs for the "dynamodb" variant, under a
// prefix of its own (deleted afterwards), else memqueue.
func openQueue(t testing.TB) queue.Queue {
	t.Helper()
	ctx := context.Background()
	if !strings.HasSuffix(t.Name(), "/dynamodb") {
		mq := memqueue.New(memqueue.Options{})
		require.NoError(t, mq.CreateTenantQueue(ctx, tenant))
		return mq
	}
	client := sqsqueue.NewEmulatorClient(os.Getenv(sqsEndpointVar))
	suffix := make([]byte, 4)
	_, _ = rand.Read(suffix)
	prefix := "heddle-engine-" + hex.EncodeToString(suffix) + "-"
	q, err := sqsqueue.New(client, sqsqueue.Options{Prefix: prefix})
	require.NoError(t, err)
	require.NoError(t, q.CreateTenantQueue(ctx, tenant))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		out, err := client.ListQueues(ctx, &sqs.ListQueuesInput{QueueNamePrefix: aws.String(prefix)})
		require.NoError(t, err)
		for _, url := range out.QueueUrls {
			_, err := client.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(url)})
			require.NoError(t, err)
		}
	})
	return q
}

func setup(t testing.TB, q queue.Queue, cfg Config) *testBundle {
	t.Helper()
	db := openStore(t)
	ctx := context.Background()
	acc := access.New(db)
	_, _, err := acc.CreateTenant(ctx, domain.Tenant{ID: tenant, Workers: 4, MaxClusters: 10, MaxNodes: 1000}, "")
	require.NoError(t, err)
	if q == nil {
		q = openQueue(t)
	}
	counts := store.NewCounting(db)
	rec := &recorder{inner: Simulation{}}
	if cfg.Backoff == 0 {
		cfg.Backoff = 5 * time.Millisecond
	}
	if cfg.Visibility == 0 {
		cfg.Visibility = 2 * time.Second
	}
	if cfg.TaskLease == 0 {
		cfg.TaskLease = time.Second
	}
	if cfg.DeadlineGrace == 0 {
		cfg.DeadlineGrace = 50 * time.Millisecond
	}
	return &testBundle{ctx: ctx, db: db, counts: counts, q: q, eng: New(counts, q, rec, cfg), rec: rec, acc: acc}
}

// services is a small three-tier catalog: db, then app needing db at
// runtime, then lb using app.
func services() map[string]*domain.Service {
	shell := func(actions ...domain.Action) map[domain.Action]domain.ServiceAction {
		m := map[domain.Action]domain.ServiceAction{}
		for _, a := range actions {
			m[a] = domain.ServiceAction{Type: "shell", Timeout: domain.Duration(5 * time.Second)}
		}
		return m
	}
	all := []domain.Action{domain.ActionInstall, domain.ActionConfigure, domain.ActionStart, domain.ActionStop, domain.ActionRemove}
	return map[string]*domain.Service{
		"db":  {Meta: domain.Meta{Name: "db"}, Actions: shell(all...)},
		"app": {Meta: domain.Meta{Name: "app"}, Dependencies: domain.ServiceDependencies{Runtime: domain.DependencySet{Requires: []string{"db"}}}, Actions: shell(all...)},
		"lb":  {Meta: domain.Meta{Name: "lb"}, Dependencies: domain.ServiceDependencies{Runtime: domain.DependencySet{Uses: []string{"app"}}}, Actions: shell(all...)},
	}
}

func layout(cluster string, n int) []domain.Node {
	nodes := make([]domain.Node, n)
	for i := range nodes {
		svcs := []string{"app"}
		switch i {
		case 0:
			svcs = []string{"lb"}
		case 1:
			svcs = []string{"db"}
		}
		nodes[i] = domain.Node{ID: fmt.Sprintf("%s-%d", cluster, 1000+i), Num: 1000 + i,
			NodeLayout: domain.NodeLayout{HardwareType: "small", ImageType: "debian", Services: svcs}}
	}
	return nodes
}

// declaredReferences is what the cluster service derives from the macros of
// a typical three-tier catalog: app's scripts name db's host, lb's name the
// app hosts, db names nobody.
func declaredReferences() map[string][]string {
	return map[string][]string{"db": {}, "app": {"db"}, "lb": {"app"}}
}

// createSubmission plans a create of n nodes and returns what the cluster
// service will submit for it. The planner is not told which services refer
// to which (a nil map: every service to every one), the most cautious plan:
// no service task starts before every node is confirmed.
func createSubmission(t testing.TB, cluster string, n int, params func(planner.Task) map[string]string) Submission {
	t.Helper()
	return createSubmissionWithReferences(t, cluster, n, params, nil)
}

// createSubmissionWithReferences is createSubmission with the configuration
// references the planner is told about.
func createSubmissionWithReferences(t testing.TB, cluster string, n int, params func(planner.Task) map[string]string, refs map[string][]string) Submission {
	t.Helper()
	nodes := layout(cluster, n)
	plan, err := planner.Build(planner.Request{Operation: domain.OpCreate, New: nodes, Services: services(), ConfigReferences: refs})
	require.NoError(t, err)
	ids := make([]string, n)
	for i, nd := range nodes {
		ids[i] = nd.ID
	}
	return Submission{
		Tenant:        tenant,
		Cluster:       domain.Cluster{ID: cluster, Name: cluster, Owner: "ann", Status: domain.ClusterPending, CreatedAt: time.Now()},
		Create:        true,
		ClusterStatus: domain.ClusterPending,
		NewNodes:      nodes,
		Operation:     domain.OpCreate,
		RequestedBy:   "ann",
		Plan:          plan,
		TakeClusters:  1,
		TakeNodes:     n,
		OnSuccess:     Effect{ClusterStatus: domain.ClusterActive, NodeStatus: domain.NodeActive, Nodes: ids},
		OnFailure:     Effect{ClusterStatus: domain.ClusterFailed},
		OnRollback:    Effect{ClusterStatus: domain.ClusterTerminated, ReleaseClusters: 1, ReleaseNodes: n, NodeStatus: domain.NodeDeleted, Nodes: ids},
		Params:        params,
	}
}

// failAppStart returns task params under which every app/start fails its
// first n attempts (n of the task: its MaxAttempts fails exactly the first
// run, so a retry succeeds; more than any run has fails for good).
func failAppStart(n func(planner.Task) int) func(planner.Task) map[string]string {
	return func(pt planner.Task) map[string]string {
		if pt.Service == "app" && pt.Action == domain.ActionStart {
			return map[string]string{SimFailAttempts: strconv.Itoa(n(pt))}
		}
		return nil
	}
}

// Arguments for failAppStart.
var (
	alwaysFails   = func(planner.Task) int { return 99 }
	failsFirstRun = func(pt planner.Task) int { return pt.MaxAttempts }
)

// run starts n workers and a janitor ticking every period until stop.
func (b *testBundle) run(t testing.TB, workers int, period time.Duration) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(b.ctx)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); b.eng.RunWorkers(ctx, tenant, workers) }()
	go func() { defer wg.Done(); janitorEvery(ctx, b.eng, period, nil) }()
	return func() { cancel(); wg.Wait() }
}

// janitorEvery runs eng's janitor every period until ctx ends, calling
// onPass (when set) before each pass.
func janitorEvery(ctx context.Context, eng *Engine, period time.Duration, onPass func()) {
	tick := time.NewTicker(period)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if onPass != nil {
			onPass()
		}
		_, _ = eng.RunJanitor(ctx)
	}
}

// waitJob waits until the job ends and returns its final state.
func (b *testBundle) waitJob(t testing.TB, cluster, jobID string, within time.Duration) jobRecord {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		lj, err := b.eng.loadJob(b.ctx, tenant, cluster, jobID)
		require.NoError(t, err)
		if lj.job.Status.Terminal() {
			return lj.job
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s still %s after %s (%s)", jobID, lj.job.Status, within, lj.job.StatusMessage)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// failures describes the job's failed and canceled tasks, for messages.
func (b *testBundle) failures(t testing.TB, jobID string) string {
	t.Helper()
	var out string
	err := b.eng.eachTask(b.ctx, tenant, jobID, func(_ store.Item, task domain.Task) (bool, error) {
		if task.Status == domain.TaskFailed || task.Status == domain.TaskCanceled {
			msg := ""
			if n := len(task.Attempts); n > 0 {
				msg = task.Attempts[n-1].Error
			}
			out += fmt.Sprintf("\n  %s %s attempt %d: %s", task.ID, task.Status, task.Attempt, msg)
		}
		return true, nil
	})
	require.NoError(t, err)
	return out
}

// waitJobQuietly is waitJob reading through the raw store, so that polling
// does not show in the counts a benchmark takes.
func (b *testBundle) waitJobQuietly(t testing.TB, cluster, jobID string, within time.Duration) jobRecord {
	t.Helper()
	reader := New(b.db, nil, nil, Config{})
	deadline := time.Now().Add(within)
	for {
		lj, err := reader.loadJob(b.ctx, tenant, cluster, jobID)
		require.NoError(t, err)
		if lj.job.Status.Terminal() {
			return lj.job
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s still %s after %s", jobID, lj.job.Status, within)
		}
		time.Sleep(2 * time.Millisecond)
	}
}
