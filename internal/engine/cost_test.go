package engine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/queue"
	"github.com/heddle-io/heddle/internal/queue/memqueue"
	"github.com/heddle-io/heddle/internal/store"
	"github.com/heddle-io/heddle/planner"
)

// The cost model of the serverless deployment (issue 8, item 7).
//
//	go test -run '^$' -bench CostModel -benchtime 1x ./internal/engine/
//	scripts/cost-model.sh
//
// It runs a 100-node create and then its delete through the engine on the
// embedded store and the in-process queue, with the worker Lambda's SQS
// event source mapping played by a driver (receive a batch of up to 10,
// one HandleBatch per batch = one invocation, delete what was not
// reported), and counts what each call would cost in AWS: DynamoDB
// capacity units (store.Counting for the requests, billingStore below for
// item sizes and indexes, as dynamostore would make the calls), SQS
// requests (countingQueue below, as sqsqueue would make them) and Lambda
// invocations and GB-seconds (costExec below). Simulated time runs
// costScale times faster than the modeled time; billed durations come from
// the modeled durations, never from the wall clock.
//
// Two scenarios: synchronous (the worker Lambda waits on every 30 s action)
// and detached (the shell automator's Start/Check: the action is started,
// watched in place for QuickWait, then the attempt is parked and polled
// every PollInterval through the queue, each poll a short invocation).

// Published on-demand prices, us-east-1, read 2026-04 (the reference notes
// in ../shared/reference/aws-serverless.md give no prices). Free tiers are
// left out: every figure is what a tenant costs once they are used up.
const (
	// aws.amazon.com/dynamodb/pricing/on-demand/ (since the November 2024 cut)
	priceDynamoWRU = 0.625 / 1e6 // USD per write request unit
	priceDynamoRRU = 0.125 / 1e6 // USD per read request unit
	// aws.amazon.com/sqs/pricing/: FIFO, first 100 billion requests a
	// month; every 64 KB chunk of a request is one request.
	priceSQSFIFO = 0.50 / 1e6
	// aws.amazon.com/lambda/pricing/: Arm, first 7.5 billion GB-s a month.
	priceLambdaGBs = 0.0000133334
	priceLambdaReq = 0.20 / 1e6
	// aws.amazon.com/eventbridge/pricing/: Scheduler, after 14 million free
	// invocations a month.
	priceScheduler = 1.00 / 1e6
	// aws.amazon.com/api-gateway/pricing/: HTTP APIs, first 300 million.
	priceHTTPAPI = 1.00 / 1e6
)

// Model assumptions (stated in the printed report too).
const (
	costScale = 1000 // modeled time / simulated time

	costNodes       = 100
	costConcurrency = 10 // the tenant's worker count: the mapping's MaximumConcurrency

	modelAction = 30 * time.Second // every service action runs 30 s (long scripts)
	// modelShortAction is the short scripts' scenario: every service
	// action runs 200 ms (an echo, a config file written, a service
	// restarted).
	modelShortAction = 200 * time.Millisecond
	// Node-level actions, at EC2's times: RunInstances (and the key pair
	// import) answers in about a second; an instance runs 60-90 s after the
	// launch and answers SSH 10-20 s later (modelBoot and modelSSH are the
	// middles); a terminated one is gone about 30 s after TerminateInstances.
	// Bootstrap (the automator's prerequisites) runs on an open session.
	modelCreateCall   = time.Second
	modelBoot         = 75 * time.Second
	modelSSH          = 15 * time.Second
	modelTerminate    = 500 * time.Millisecond
	modelShutdown     = 30 * time.Second
	modelBootstrap    = time.Second      // one short session: mkdir and a sudo check
	modelProviderPoll = 5 * time.Second  // the EC2 provider's PollInterval
	modelBootEstimate = 50 * time.Second // and its BootEstimate
	// modelProviderCheck is one parked confirm or delete poll: the node's
	// instance read from the cluster's shared DescribeInstances listing
	// (one call per worker per 2.5 s for all due polls, so a small share)
	// and, once it runs, one short SSH login.
	modelProviderCheck = 100 * time.Millisecond
	// modelStepOverhead is the handler's own time per executor call (a task
	// started, continued or polled) and per delivery that reaches no
	// executor: the DynamoDB and SQS round trips of reading, claiming and
	// recording it.
	modelStepOverhead = 30 * time.Millisecond
	// Detached runs (shell automator defaults): Start uploads and starts the
	// script (modelDetachStart), watches it in place for QuickWait, then
	// hands it to the engine; each Check is one short SSH session.
	modelDetachStart = 300 * time.Millisecond
	modelPollCheck   = 150 * time.Millisecond

	workerMemoryGB = 0.5 // template.yaml WorkerMemorySize 512
	workerTimeout  = 900 * time.Second
	stopMargin     = 3 * time.Second // functions/worker: stops taking messages then

	// The engine's AWS defaults (Config.withDefaults) heartbeat a running
	// attempt every min(TaskLease/3, Visibility/2) = 30 s: a 30 s
	// synchronous action gets one (the ticker starts before the action and
	// fires just before it ends). Heartbeats are counted from this model,
	// not from the scaled run, where a ticker racing a 30 ms sleep would
	// make the count a coin toss.
	modelHeartbeatEvery = 30 * time.Second

	// The janitor Lambda: rate(1 minute), 256 MB (template.yaml); ~200 ms a
	// pass on an idle tenant.
	janitorPerMonth  = 43200
	janitorMemoryGB  = 0.25
	janitorDuration  = 200 * time.Millisecond
	sweepQueryPages  = 2 // functions/janitor sweep: ListTenants + the tenant's provider list, one page each
	idlePollReceives = 518400
	// idlePollReceives: the event source mapping of a FIFO queue long-polls
	// with (at least) 4 pollers x one 20 s ReceiveMessage each = 4 x 3 per
	// minute x 43,200 minutes. AWS bills these receives to the queue owner.

	apiMemoryGB = 0.25 // ApiMemorySize 256
	apiDuration = 100 * time.Millisecond
)

// The shell automator's QuickWait and PollInterval as the worker Lambda
// runs them (assemble.LambdaQuickWait, 1 s in place while the engine's
// estimate says the run is likely to end within it; the shell's 5 s
// PollInterval as the polls' longest step) and the engine's FirstPoll,
// unless HEDDLE_COST_QUICK_WAIT, HEDDLE_COST_POLL_EVERY or
// HEDDLE_COST_FIRST_POLL say otherwise, to price other settings
// (HEDDLE_COST_QUICK_WAIT=0 HEDDLE_COST_FIRST_POLL=-1s prices the
// schedule before issue 35: every run handed off at once, polled every
// 5 s).
var (
	modelQuickWait = costEnvDuration("HEDDLE_COST_QUICK_WAIT", time.Second)
	modelPollEvery = costEnvDuration("HEDDLE_COST_POLL_EVERY", 5*time.Second)
	modelFirstPoll = costEnvSigned("HEDDLE_COST_FIRST_POLL", time.Second)
)

// costEnvSigned is costEnvDuration that also takes a negative duration.
func costEnvSigned(name string, def time.Duration) time.Duration {
	if v := os.Getenv(name); v != "" {
		if d, err := time.ParseDuration(v); err == nil {
			return d
		}
	}
	return def
}

func costEnvDuration(name string, def time.Duration) time.Duration {
	if v := os.Getenv(name); v != "" {
		if d, err := time.ParseDuration(v); err == nil && d >= 0 {
			return d
		}
	}
	return def
}

// scaled is the simulated length of a modeled duration.
func scaled(d time.Duration) time.Duration { return d / costScale }

// scaledSigned is scaled keeping a negative (off) setting negative.
func scaledSigned(d time.Duration) time.Duration {
	if d < 0 {
		return -1
	}
	return scaled(d)
}

// BenchmarkCostModel100Nodes prints the control-plane cost of a 100-node
// create and delete, synchronous and detached, and the idle cost of a tenant
// a month, against the targets.
func BenchmarkCostModel100Nodes(b *testing.B) {
	for b.Loop() {
		syncRun := runCostScenario(b, false, modelAction)
		detached := runCostScenario(b, true, modelAction)
		short := runCostScenario(b, true, modelShortAction)
		idle := idleCost(b)
		printCostReport(os.Stdout, []*costRun{syncRun, detached, short}, idle)
	}
}

// TestCostModel is the same, behind HEDDLE_COST_MODEL=1 (a plain go test
// skips it at once); add -v to see the report:
//
//	HEDDLE_COST_MODEL=1 go test -v -run TestCostModel ./internal/engine/
func TestCostModel(t *testing.T) {
	if os.Getenv("HEDDLE_COST_MODEL") == "" {
		t.Skip("set HEDDLE_COST_MODEL=1 (or run scripts/cost-model.sh) to run the cost model")
	}
	syncRun := runCostScenario(t, false, modelAction)
	detached := runCostScenario(t, true, modelAction)
	short := runCostScenario(t, true, modelShortAction)
	idle := idleCost(t)
	printCostReport(os.Stdout, []*costRun{syncRun, detached, short}, idle)
}

// costRun is what one scenario (create then delete) counted.
type costRun struct {
	name       string
	detached   bool
	action     time.Duration // every service action's length
	workTasks  int
	store      store.Counts
	bill       billCounts
	queue      queueCounts
	esmDeletes int64 // DeleteMessageBatch calls of the event source mapping
	exec       execCounts
	inv        invocationTotals
	janitor    int64 // janitor passes during the jobs
	makespan   time.Duration
	byAction   map[string]int

	timedOutInvocations int64
}

// runCostScenario runs the create and the delete of costNodes nodes.
func runCostScenario(tb testing.TB, detached bool, action time.Duration) *costRun {
	tb.Helper()
	ctx := context.Background()
	mq := memqueue.New(memqueue.Options{})
	require.NoError(tb, mq.CreateTenantQueue(ctx, tenant))
	cq := &countingQueue{inner: mq}
	bundle := setup(tb, cq, Config{})
	raw := bundle.db
	bill := &billingStore{inner: raw}
	counting := store.NewCounting(bill)
	exec := &costExec{detached: detached, action: action}
	// The engine's AWS defaults, scaled; TaskLease and Visibility are long
	// enough that no heartbeat fires in the scaled run (see
	// modelHeartbeatEvery).
	cfg := Config{
		Backoff:       scaled(2 * time.Second),
		MaxBackoff:    scaled(5 * time.Minute),
		ResendAfter:   scaled(2 * time.Minute),
		SubmitTimeout: scaled(10 * time.Minute), // a 100-node submission takes longer than 120 ms on a busy machine
		StuckAfter:    scaled(time.Hour),
		Visibility:    scaled(60 * time.Minute),
		TaskLease:     scaled(10 * time.Minute), // not 90 s: its heartbeat (every TaskLease/3) must not race a 90 s boot waited in place

		DeadlineGrace: scaled(30 * time.Second),
		FirstPoll:     scaledSigned(modelFirstPoll),
	}
	eng := New(counting, cq, exec, cfg)
	run := &costRun{name: "synchronous", detached: detached, action: action, byAction: map[string]int{}}
	if detached {
		run.name = fmt.Sprintf("detached, %s scripts", action)
	}

	// Actions of 2 minutes run on an open session (shell: at most
	// DetachAfter, 2 minutes); longer ones run detached.
	timeout := 2 * time.Minute
	if detached {
		timeout = 10 * time.Minute
	}
	svcs := costServices(timeout)
	nodes := layout("c1", costNodes)
	ids := make([]string, len(nodes))
	for i, n := range nodes {
		ids[i] = n.ID
	}
	createPlan, err := planner.Build(planner.Request{Operation: domain.OpCreate, New: nodes, Services: svcs})
	require.NoError(tb, err)
	deletePlan, err := planner.Build(planner.Request{Operation: domain.OpDelete, Old: nodes, Services: svcs})
	require.NoError(tb, err)
	// Timeouts run on the simulated clock too: a worker invocation's
	// deadline is scaled, and the engine compares it with them.
	scaleTimeouts(createPlan)
	scaleTimeouts(deletePlan)
	// Node-level actions have the planner's fixed timeouts (10-15 minutes):
	// in the synchronous scenario they are waited on like any other.
	for _, p := range []*planner.Plan{createPlan, deletePlan} {
		for _, t := range p.Tasks {
			if t.Kind == planner.KindWork {
				run.byAction[string(t.Action)]++
				run.workTasks++
			}
		}
	}

	// The event source mapping and the janitor.
	runCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	esm := &esmDriver{eng: eng, q: cq, exec: exec}
	for range costConcurrency {
		wg.Add(1)
		go func() { defer wg.Done(); esm.poll(runCtx) }()
	}
	var passes atomic.Int64
	wg.Add(1)
	go func() {
		defer wg.Done()
		janitorEvery(runCtx, eng, scaled(time.Minute), func() { passes.Add(1) })
	}()

	start := time.Now()
	create := Submission{
		Tenant:        tenant,
		Cluster:       domain.Cluster{ID: "c1", Name: "c1", Owner: "ann", Status: domain.ClusterPending, CreatedAt: time.Now()},
		Create:        true,
		ClusterStatus: domain.ClusterPending,
		NewNodes:      nodes,
		Operation:     domain.OpCreate,
		RequestedBy:   "ann",
		Plan:          createPlan,
		TakeClusters:  1,
		TakeNodes:     len(nodes),
		OnSuccess:     Effect{ClusterStatus: domain.ClusterActive, NodeStatus: domain.NodeActive, Nodes: ids},
		OnFailure:     Effect{ClusterStatus: domain.ClusterFailed},
		OnRollback:    Effect{ClusterStatus: domain.ClusterTerminated, ReleaseClusters: 1, ReleaseNodes: len(nodes), NodeStatus: domain.NodeDeleted, Nodes: ids},
	}
	job, err := eng.Submit(ctx, create)
	require.NoError(tb, err)
	final := waitCostJob(tb, raw, "c1", job.ID)
	require.Equal(tb, domain.JobSucceeded, final.Status, final.StatusMessage)

	_, c, err := eng.loadCluster(ctx, tenant, "c1")
	require.NoError(tb, err)
	job, err = eng.Submit(ctx, Submission{Tenant: tenant, Cluster: c, ClusterStatus: domain.ClusterDeleting,
		Operation: domain.OpDelete, RequestedBy: "ann", Plan: deletePlan,
		OnSuccess: Effect{ClusterStatus: domain.ClusterTerminated, ReleaseClusters: 1, ReleaseNodes: len(ids), NodeStatus: domain.NodeDeleted, Nodes: ids},
		OnFailure: Effect{ClusterStatus: domain.ClusterFailed}})
	require.NoError(tb, err)
	final = waitCostJob(tb, raw, "c1", job.ID)
	require.Equal(tb, domain.JobSucceeded, final.Status, final.StatusMessage)
	run.makespan = time.Since(start) * costScale
	stop()
	wg.Wait()

	run.store = counting.Counts()
	run.bill = bill.counts()
	run.queue = cq.counts()
	run.esmDeletes = esm.deletes.Load()
	run.exec = exec.counts()
	run.inv = esm.totals()
	run.janitor = passes.Load()
	run.timedOutInvocations = esm.timedOut.Load()
	return run
}

// scaleTimeouts puts a plan's task timeouts (and its rollback's) on the
// simulated clock.
func scaleTimeouts(p *planner.Plan) {
	for i := range p.Tasks {
		// A bound, not a duration: at least 10 s of simulated time, or a
		// confirm's 18 polls (each a real round trip through the engine)
		// would outlast its scaled 600 ms on a busy machine. No action here
		// runs anywhere near it.
		if p.Tasks[i].Timeout > 0 {
			p.Tasks[i].Timeout = domain.Duration(max(scaled(p.Tasks[i].Timeout.Std()), 10*time.Second))
		}
	}
	if p.Rollback != nil {
		scaleTimeouts(p.Rollback)
	}
}

// costServices is services() with every action's timeout set.
func costServices(timeout time.Duration) map[string]*domain.Service {
	svcs := services()
	for _, s := range svcs {
		for a, sa := range s.Actions {
			sa.Timeout = domain.Duration(timeout)
			s.Actions[a] = sa
		}
	}
	return svcs
}

// waitCostJob waits for the job through the raw store (not counted).
func waitCostJob(tb testing.TB, raw store.Store, cluster, jobID string) jobRecord {
	tb.Helper()
	reader := New(raw, nil, nil, Config{})
	deadline := time.Now().Add(5 * time.Minute)
	for {
		lj, err := reader.loadJob(context.Background(), tenant, cluster, jobID)
		require.NoError(tb, err)
		if lj.job.Status.Terminal() {
			return lj.job
		}
		if time.Now().After(deadline) {
			tb.Fatalf("job %s still %s after 5 minutes", jobID, lj.job.Status)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// idleRun is what one idle janitor pass costs.
type idleRun struct {
	store store.Counts
	bill  billCounts
}

// idleCost runs one janitor pass on a tenant with nothing to do.
func idleCost(tb testing.TB) idleRun {
	tb.Helper()
	bundle := setup(tb, nil, Config{})
	bill := &billingStore{inner: bundle.db}
	counting := store.NewCounting(bill)
	eng := New(counting, bundle.q, nil, Config{})
	r, err := eng.RunJanitor(context.Background())
	require.NoError(tb, err)
	require.Equal(tb, JanitorReport{}, r)
	return idleRun{store: counting.Counts(), bill: bill.counts()}
}

// --- the worker Lambda -----------------------------------------------------

// invocation accumulates what the executor did within one worker invocation
// (the driver puts it in the context HandleBatch passes down), per lane:
// HandleBatch runs a batch's message groups (its nodes) at once, so an
// invocation lasts as long as its longest lane.
type invocation struct {
	mu    sync.Mutex
	wait  map[string]time.Duration // modeled time spent waiting on executors, by lane
	calls map[string]int
	tasks map[string]bool // tasks the executor was called for
}

type invocationKey struct{}

// laneOf is the lane of a node's task: its message group without the
// re-send suffix (keys.go group).
func laneOf(cluster, node, task string) string {
	if node == "" {
		return cluster + "#" + task
	}
	return cluster + "#" + node
}

func (inv *invocation) add(t domain.Task, wait time.Duration) {
	if inv == nil {
		return
	}
	inv.mu.Lock()
	defer inv.mu.Unlock()
	if inv.tasks == nil {
		inv.tasks, inv.wait, inv.calls = map[string]bool{}, map[string]time.Duration{}, map[string]int{}
	}
	lane := laneOf(t.ClusterID, t.NodeID, t.ID)
	inv.wait[lane] += wait
	inv.calls[lane]++
	inv.tasks[t.ID] = true
}

// costExec stands in for the provider and the shell automator: every
// service action takes action, waited on (synchronous) or started, watched
// in place for QuickWait unless the engine expects it to take longer
// (Attempt.Expect, as the shell does), and then parked: the engine
// schedules its polls (estimate.go), the executor asking for PollInterval
// at most (detached). A detached run's poll state is when it started on
// the simulated clock; a check finds it over once action has passed in
// modeled time.
type costExec struct {
	detached bool
	action   time.Duration
	calls    atomic.Int64 // every Execute
	starts   atomic.Int64
	polls    atomic.Int64
	hbs      atomic.Int64 // modeled heartbeats
	waited   atomic.Int64 // modeled nanoseconds waited on executors
}

type execCounts struct {
	calls, starts, polls, heartbeats int64
	waited                           time.Duration
}

func (x *costExec) counts() execCounts {
	return execCounts{calls: x.calls.Load(), starts: x.starts.Load(), polls: x.polls.Load(), heartbeats: x.hbs.Load(), waited: time.Duration(x.waited.Load())}
}

func (x *costExec) Execute(ctx context.Context, a Attempt) Result {
	inv, _ := ctx.Value(invocationKey{}).(*invocation)
	x.calls.Add(1)
	wait := func(modeled time.Duration) (time.Duration, bool) {
		start := time.Now()
		t := time.NewTimer(scaled(modeled))
		defer t.Stop()
		select {
		case <-ctx.Done():
			return time.Since(start) * costScale, false
		case <-t.C:
			return modeled, true
		}
	}
	record := func(w time.Duration) {
		x.waited.Add(int64(w))
		inv.add(a.Task, w)
	}
	switch a.Task.Action {
	case domain.ActionCreate, domain.ActionBootstrap:
		// Synchronous in both scenarios: Create returns once EC2 accepted the
		// launch, bootstrap runs on one session.
		x.starts.Add(1)
		d := modelCreateCall
		if a.Task.Action == domain.ActionBootstrap {
			d = modelBootstrap
		}
		w, ok := wait(d)
		record(w)
		if !ok {
			return Result{Err: ctx.Err(), ExitCode: -1}
		}
		return Result{Stdout: "ok\n"}
	case domain.ActionConfirm, domain.ActionDelete:
		return x.providerCheck(ctx, a, wait, record)
	}
	if !x.detached {
		x.starts.Add(1)
		w, ok := wait(x.action)
		record(w)
		if !ok {
			return Result{Err: ctx.Err(), ExitCode: -1}
		}
		x.hbs.Add(int64(w / modelHeartbeatEvery))
		return Result{Stdout: "ok\n"}
	}
	if a.Poll == "" {
		x.starts.Add(1)
		w, ok := wait(modelDetachStart)
		record(w)
		if !ok {
			return Result{Err: ctx.Err(), ExitCode: -1}
		}
		began := time.Now()
		// The shell's in-place wait: QuickWait, or nothing when the engine
		// expects the run to outlast it; it ends with the run. The
		// estimate the engine learned here is of the scaled run, whose
		// own overheads (store and queue calls on this machine) are not
		// scaled: a few real milliseconds would read as seconds. So once
		// the engine knows anything, the model takes what it would have
		// learned on AWS: the start's upload and the run.
		expect := time.Duration(0)
		if a.Expect > 0 {
			expect = modelDetachStart + x.action
		}
		if quick := modelQuickWait; quick > 0 && expect <= quick {
			w, ok := wait(min(quick, x.action))
			record(w)
			if !ok {
				return Result{Err: ctx.Err(), ExitCode: -1}
			}
			if x.action <= quick {
				return Result{Stdout: "ok\n"}
			}
		}
		return Result{PollAfter: scaled(modelPollEvery), PollState: strconv.FormatInt(began.UnixNano(), 10)}
	}
	x.polls.Add(1)
	w, ok := wait(modelPollCheck)
	record(w)
	if !ok {
		return Result{Err: ctx.Err(), ExitCode: -1}
	}
	ns, err := strconv.ParseInt(a.Poll, 10, 64)
	if err != nil {
		return Result{Err: fmt.Errorf("bad poll state %q", a.Poll), ExitCode: -1}
	}
	if time.Since(time.Unix(0, ns)) >= scaled(x.action) {
		return Result{Stdout: "ok\n"}
	}
	return Result{PollAfter: scaled(modelPollEvery), PollState: a.Poll}
}

// providerCheck models a confirm (boot, then SSH) or a delete (terminate,
// then shutdown): synchronous, the worker waits the whole time in place,
// as provider actions did before they were parked; detached, each call is
// one check, parked every modelProviderPoll until the node is there (or
// gone).
func (x *costExec) providerCheck(ctx context.Context, a Attempt, wait func(time.Duration) (time.Duration, bool), record func(time.Duration)) Result {
	total, first := modelBoot+modelSSH, modelProviderCheck
	if a.Task.Action == domain.ActionDelete {
		total, first = modelShutdown, modelTerminate
	}
	if !x.detached {
		x.starts.Add(1)
		w, ok := wait(first + total)
		record(w)
		if !ok {
			return Result{Err: ctx.Err(), ExitCode: -1}
		}
		x.hbs.Add(int64(w / modelHeartbeatEvery))
		return Result{Stdout: "ok\n"}
	}
	d := modelProviderCheck
	if a.Poll == "" {
		x.starts.Add(1)
		d = first
	} else {
		x.polls.Add(1)
	}
	w, ok := wait(d)
	record(w)
	if !ok {
		return Result{Err: ctx.Err(), ExitCode: -1}
	}
	// The poll state is the modeled time since the create (or terminate).
	ms, _ := strconv.ParseInt(a.Poll, 10, 64)
	elapsed := time.Duration(ms) * time.Millisecond
	if elapsed >= total {
		return Result{Stdout: "ok\n"}
	}
	// The EC2 provider's schedule: a booting instance is first checked at
	// BootEstimate, then every PollInterval; a terminated one every two.
	again := modelProviderPoll
	if a.Task.Action == domain.ActionDelete {
		again = 2 * modelProviderPoll
	} else {
		again = max(again, modelBootEstimate-modelCreateCall-elapsed)
	}
	return Result{PollAfter: scaled(again), PollState: strconv.FormatInt((elapsed + again).Milliseconds(), 10)}
}

// esmDriver plays the Lambda event source mapping: each poller receives a
// batch of up to 10 and invokes the worker with it (HandleBatch, under the
// function's timeout less the worker's stop margin), then deletes every
// message the answer did not report.
type esmDriver struct {
	eng  *Engine
	q    *countingQueue
	exec *costExec

	mu       sync.Mutex
	tot      invocationTotals
	deletes  atomic.Int64
	timedOut atomic.Int64
}

type invocationTotals struct {
	invocations int64
	deliveries  int64
	billed      time.Duration // modeled, rounded up to the millisecond per invocation
	longest     time.Duration
	steps       int64 // overhead units: executor calls + deliveries reaching no executor
	sizes       map[int]int64
}

func (m *esmDriver) totals() invocationTotals {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.tot
}

func (m *esmDriver) poll(ctx context.Context) {
	for ctx.Err() == nil {
		batch := queue.MaxBatch
		if !m.exec.detached {
			// Ten boots waited in place (90 s each) do not fit one 15-minute
			// invocation: a synchronous worker must take one message at a
			// time (BatchSize 1), or the later ones in a batch time out.
			batch = 1
		}
		ds, err := m.q.Receive(ctx, tenant, batch, scaled(20*time.Second), scaled(15*time.Minute))
		if err != nil || len(ds) == 0 {
			continue
		}
		inv := &invocation{}
		ictx, cancel := context.WithTimeout(context.WithValue(ctx, invocationKey{}, inv), scaled(workerTimeout-stopMargin))
		keep := m.eng.HandleBatch(ictx, tenant, ds)
		cut := errors.Is(ictx.Err(), context.DeadlineExceeded)
		cancel()
		if ctx.Err() != nil {
			return // stopping: this one does not count
		}
		if cut {
			m.timedOut.Add(1)
		}
		if len(keep) < len(ds) {
			m.deletes.Add(1) // one DeleteMessageBatch for what was not reported
		}
		inv.mu.Lock()
		laneSteps := maps.Clone(inv.calls)
		if laneSteps == nil {
			laneSteps = map[string]int{}
		}
		for _, d := range ds {
			if ref, err := ParseTaskRef(tenant, d.TaskID); err != nil || !inv.tasks[ref.Task] {
				parts := strings.SplitN(d.Group, "#", 3)
				lane := d.Group
				if len(parts) >= 2 {
					lane = parts[0] + "#" + parts[1]
				}
				laneSteps[lane]++
			}
		}
		var steps int64
		var billed time.Duration
		for lane, n := range laneSteps {
			steps += int64(n)
			billed = max(billed, inv.wait[lane]+time.Duration(n)*modelStepOverhead)
		}
		inv.mu.Unlock()
		billed = min(billed.Round(time.Millisecond), workerTimeout)
		m.mu.Lock()
		m.tot.invocations++
		m.tot.deliveries += int64(len(ds))
		m.tot.billed += billed
		m.tot.longest = max(m.tot.longest, billed)
		m.tot.steps += steps
		if m.tot.sizes == nil {
			m.tot.sizes = map[int]int64{}
		}
		m.tot.sizes[len(ds)]++
		m.mu.Unlock()
	}
}

// --- SQS -----------------------------------------------------------------

// countingQueue counts queue calls as sqsqueue makes SQS requests of them:
// a Send is one SendMessageBatch (up to 10 messages, far below 64 KB), a
// Receive one ReceiveMessage, an Ack one DeleteMessage, an Extend one
// ChangeMessageVisibility, an ExtendBatch one ChangeMessageVisibilityBatch.
type countingQueue struct {
	inner queue.Queue

	sends, sent, receives, emptyReceives, received, acks, extends atomic.Int64
}

type queueCounts struct {
	sends, sent, receives, emptyReceives, received, acks, extends int64
}

func (q *countingQueue) counts() queueCounts {
	return queueCounts{sends: q.sends.Load(), sent: q.sent.Load(), receives: q.receives.Load(), emptyReceives: q.emptyReceives.Load(),
		received: q.received.Load(), acks: q.acks.Load(), extends: q.extends.Load()}
}

func (q *countingQueue) Send(ctx context.Context, tenant string, msgs ...queue.Message) error {
	if len(msgs) > 0 {
		q.sends.Add(1)
		q.sent.Add(int64(len(msgs)))
	}
	return q.inner.Send(ctx, tenant, msgs...)
}

func (q *countingQueue) Receive(ctx context.Context, tenant string, max int, wait, visibility time.Duration) ([]queue.Delivery, error) {
	ds, err := q.inner.Receive(ctx, tenant, max, wait, visibility)
	if err == nil || ctx.Err() == nil {
		if len(ds) == 0 {
			q.emptyReceives.Add(1)
		} else {
			q.receives.Add(1)
			q.received.Add(int64(len(ds)))
		}
	}
	return ds, err
}

func (q *countingQueue) Ack(ctx context.Context, tenant, receipt string) error {
	q.acks.Add(1)
	return q.inner.Ack(ctx, tenant, receipt)
}

func (q *countingQueue) Extend(ctx context.Context, tenant, receipt string, visibility time.Duration) error {
	q.extends.Add(1)
	return q.inner.Extend(ctx, tenant, receipt, visibility)
}

// DeadLetter is sqsqueue's: every tenant queue moves a message to its
// dead-letter queue after 5 receives (sqsqueue's default MaxReceiveCount),
// so the engine keeps the delivery records it keeps on AWS.
func (q *countingQueue) DeadLetter(tenant string) (string, int, error) {
	return "heddle-" + tenant + "_dlq.fifo", 5, nil
}

// ExtendBatch is one ChangeMessageVisibilityBatch (sqsqueue's ExtendBatch:
// up to 10 receipts, billed as one request): the worker's hold on its batch.
func (q *countingQueue) ExtendBatch(ctx context.Context, tenant string, receipts []string, visibility time.Duration) error {
	q.extends.Add(1)
	return queue.ExtendAll(ctx, q.inner, tenant, receipts, visibility)
}

// --- DynamoDB --------------------------------------------------------------

// billingStore sits under store.Counting and adds up the capacity units
// DynamoDB on-demand would bill for each call as dynamostore makes it:
//   - GetItem (strongly consistent): 1 RRU per 4 KB of the item, at least 1
//     (a missing item too);
//   - Query (strongly consistent): 1 RRU per 4 KB of the page, at least 1;
//     QueryIndex (the GSI, eventually consistent): half that;
//   - PutItem/UpdateItem/DeleteItem: 1 WRU per KB of the larger of the item
//     before and after, at least 1, also when the condition fails; a put
//     whose condition does not pin the version reads the item first;
//   - TransactWriteItems: 2 WRU per KB per item, checks included (checks
//     whose condition always holds are left out, as dynamostore does);
//   - the GSI (projection ALL): 1 WRU per KB of the projected item for every
//     write that puts, changes or removes an indexed item; 2 writes when the
//     index key moves.
//
// Sizes are store.ItemSize of the item read from the inner store
// just before the call (not billed).
type billingStore struct {
	inner store.Store

	mu sync.Mutex
	c  billCounts
}

type billCounts struct {
	rru, wru, gsiWRU        float64
	gsiWrites               int64 // index writes (a moved index key is two)
	txWRU                   float64
	preGets                 int64 // GetItem calls before a put whose version is not pinned
	taskWrites, taskWriteKB int64 // writes of task items and their WRU (for modeled heartbeats)
	deliveryRecordWrites    int64 // writes of delivery records (deadletter.go), deletes included
}

func (b *billingStore) counts() billCounts {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.c
}

func units(size, per int) float64 { return math.Max(1, math.Ceil(float64(size)/float64(per))) }

// current reads the item at k from the inner store (nil when absent).
func (b *billingStore) current(ctx context.Context, k store.Key) *store.Item {
	it, err := b.inner.Get(ctx, k)
	if err != nil {
		return nil
	}
	return &it
}

// after is the item op leaves (nil for a delete).
func after(op store.Op, before *store.Item) *store.Item {
	switch op.Kind {
	case store.OpPut:
		it := op.Item
		it.Version = 1
		if before != nil {
			it.Version = before.Version + 1
		}
		return &it
	case store.OpUpdate:
		it := store.Item{Key: op.Key}
		if before != nil {
			it = *before
			it.Counters = map[string]int64{}
			for k, v := range before.Counters {
				it.Counters[k] = v
			}
		}
		it.Version++
		ch := op.Changes
		if ch.Data != nil {
			it.Data = ch.Data
		}
		if ch.Status != nil {
			it.Status = *ch.Status
		}
		if it.Counters == nil {
			it.Counters = map[string]int64{}
		}
		for k, v := range ch.Add {
			it.Counters[k] += v
		}
		for k, v := range ch.Set {
			it.Counters[k] = v
		}
		if ch.ClearIndex {
			it.Index = nil
		}
		if ch.Index != nil {
			it.Index = ch.Index
		}
		return &it
	}
	return before // a check leaves it as it is
}

// gsiUnits is what the index write of a change from before to after costs,
// and how many index writes it takes.
func gsiUnits(before, after *store.Item) (float64, int64) {
	var bi, ai *store.IndexKey
	if before != nil {
		bi = before.Index
	}
	if after != nil {
		ai = after.Index
	}
	switch {
	case bi == nil && ai == nil:
		return 0, 0
	case bi == nil:
		return units(store.ItemSize(*after), 1024), 1
	case ai == nil:
		return units(store.ItemSize(*before), 1024), 1
	case *bi == *ai:
		return units(max(store.ItemSize(*before), store.ItemSize(*after)), 1024), 1
	}
	return units(store.ItemSize(*before), 1024) + units(store.ItemSize(*after), 1024), 2
}

func sizeOf(it *store.Item) int {
	if it == nil {
		return 0
	}
	return store.ItemSize(*it)
}

func isTaskKey(k store.Key) bool { return strings.Contains(k.PK, "TASKS#") }

func (b *billingStore) Get(ctx context.Context, k store.Key) (store.Item, error) {
	it, err := b.inner.Get(ctx, k)
	size := 0
	if err == nil {
		size = store.ItemSize(it)
	}
	b.mu.Lock()
	b.c.rru += units(size, 4096)
	b.mu.Unlock()
	return it, err
}

func (b *billingStore) Write(ctx context.Context, op store.Op) (store.Item, error) {
	before := b.current(ctx, op.Key)
	aft := after(op, before)
	it, err := b.inner.Write(ctx, op)
	wru := units(max(sizeOf(before), sizeOf(aft)), 1024)
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, pinned := knownPriorOf(op.Cond); op.Kind == store.OpPut && !pinned {
		b.c.preGets++
		b.c.rru += units(sizeOf(before), 4096)
	}
	b.c.wru += wru
	if isTaskKey(op.Key) {
		b.c.taskWrites++
		b.c.taskWriteKB += int64(wru)
	}
	if _, rest, ok := store.TenantOf(op.Key.PK); ok && strings.HasPrefix(rest, "DELIVERIES#") {
		b.c.deliveryRecordWrites++
	}
	if err == nil {
		u, n := gsiUnits(before, aft)
		b.c.gsiWRU += u
		b.c.gsiWrites += n
	}
	return it, err
}

func knownPriorOf(c store.Condition) (int64, bool) {
	switch {
	case c.MustNotExist:
		return 0, true
	case c.Version != 0:
		return c.Version, true
	}
	return 0, false
}

func (b *billingStore) Transact(ctx context.Context, ops []store.Op) error {
	befores := make([]*store.Item, len(ops))
	for i, op := range ops {
		befores[i] = b.current(ctx, op.Key)
	}
	err := b.inner.Transact(ctx, ops)
	b.mu.Lock()
	defer b.mu.Unlock()
	for i, op := range ops {
		if op.Kind == store.OpCheck && op.Cond.IsZero() {
			continue
		}
		aft := after(op, befores[i])
		wru := 2 * units(max(sizeOf(befores[i]), sizeOf(aft)), 1024)
		b.c.wru += wru
		b.c.txWRU += wru
		if isTaskKey(op.Key) && op.Kind != store.OpCheck {
			b.c.taskWrites++
			b.c.taskWriteKB += int64(wru / 2)
		}
		if _, pinned := knownPriorOf(op.Cond); op.Kind == store.OpPut && !pinned {
			b.c.preGets++
			b.c.rru += units(sizeOf(befores[i]), 4096)
		}
		if err == nil && op.Kind != store.OpCheck {
			u, n := gsiUnits(befores[i], aft)
			b.c.gsiWRU += u
			b.c.gsiWrites += n
		}
	}
	return err
}

func pageSizeOf(p store.Page) int {
	n := 0
	for _, it := range p.Items {
		n += store.ItemSize(it)
	}
	return n
}

func (b *billingStore) Query(ctx context.Context, pk string, q store.Query) (store.Page, error) {
	p, err := b.inner.Query(ctx, pk, q)
	b.mu.Lock()
	b.c.rru += units(pageSizeOf(p), 4096)
	b.mu.Unlock()
	return p, err
}

func (b *billingStore) QueryIndex(ctx context.Context, partition string, q store.IndexQuery) (store.Page, error) {
	p, err := b.inner.QueryIndex(ctx, partition, q)
	b.mu.Lock()
	b.c.rru += units(pageSizeOf(p), 4096) / 2
	b.mu.Unlock()
	return p, err
}

// --- the report ------------------------------------------------------------

type costLine struct {
	service, what string
	count         float64
	unit          string
	usd           float64
}

// scenarioCost prices one scenario.
func scenarioCost(r *costRun) (lines []costLine, total float64) {
	add := func(service, what string, count float64, unit string, price float64) {
		lines = append(lines, costLine{service, what, count, unit, count * price})
		total += count * price
	}
	// Heartbeats are modeled: each one an UpdateItem of the task (its
	// average size) and a ChangeMessageVisibility.
	hbWRU := 1.0
	if r.bill.taskWrites > 0 {
		hbWRU = math.Max(1, math.Round(float64(r.bill.taskWriteKB)/float64(r.bill.taskWrites)))
	}
	hb := float64(r.exec.heartbeats)
	add("DynamoDB", "write request units (table)", r.bill.wru, "WRU", priceDynamoWRU)
	add("DynamoDB", "write request units (GSI)", r.bill.gsiWRU, "WRU", priceDynamoWRU)
	add("DynamoDB", "heartbeat writes (modeled)", hb*hbWRU, "WRU", priceDynamoWRU)
	add("DynamoDB", "read request units", r.bill.rru, "RRU", priceDynamoRRU)
	sqs := float64(r.queue.sends + r.queue.receives + r.queue.acks + r.queue.extends + r.esmDeletes)
	add("SQS", "requests (send, receive, delete, visibility)", sqs, "req", priceSQSFIFO)
	add("SQS", "heartbeat visibility changes (modeled)", hb, "req", priceSQSFIFO)
	add("Lambda", "worker invocations", float64(r.inv.invocations), "req", priceLambdaReq)
	gbs := r.inv.billed.Seconds() * workerMemoryGB
	add("Lambda", "worker GB-seconds (512 MB)", gbs, "GB-s", priceLambdaGBs)
	add("Lambda", "api invocations (create, delete)", 2, "req", priceLambdaReq)
	add("Lambda", "api GB-seconds (256 MB, 100 ms)", 2*apiMemoryGB*apiDuration.Seconds(), "GB-s", priceLambdaGBs)
	add("API Gateway", "HTTP API requests", 2, "req", priceHTTPAPI)
	return lines, total
}

func idleMonthCost(idle idleRun) (lines []costLine, total float64) {
	add := func(service, what string, count float64, unit string, price float64) {
		lines = append(lines, costLine{service, what, count, unit, count * price})
		total += count * price
	}
	add("EventBridge", "Scheduler invocations (rate 1 minute)", janitorPerMonth, "inv", priceScheduler)
	add("Lambda", "janitor invocations", janitorPerMonth, "req", priceLambdaReq)
	add("Lambda", "janitor GB-seconds (256 MB, 200 ms)", janitorPerMonth*janitorMemoryGB*janitorDuration.Seconds(), "GB-s", priceLambdaGBs)
	perPass := idle.bill.rru + float64(sweepQueryPages)
	add("DynamoDB", fmt.Sprintf("janitor reads (%.1f RRU/pass: %d index pages + %d sweep pages)", perPass, idle.store.IndexPages, sweepQueryPages),
		janitorPerMonth*perPass, "RRU", priceDynamoRRU)
	add("SQS", "event source long polls (4 pollers x 20 s)", idlePollReceives, "req", priceSQSFIFO)
	return lines, total
}

func passMiss(v, target float64) string {
	if v <= target {
		return "PASS"
	}
	return "MISS"
}

func printCostReport(out *os.File, runs []*costRun, idle idleRun) {
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(out, "\nheddle control-plane cost model: %d-node create + delete, service actions %s (short scripts %s), EC2 boot %s + SSH %s, us-east-1 on-demand prices (no free tier)\n", costNodes, modelAction, modelShortAction, modelBoot, modelSSH)
	for _, r := range runs {
		lines, total := scenarioCost(r)
		fmt.Fprintf(out, "\n== %s: %d work tasks (%s); modeled makespan %s\n", r.name, r.workTasks, describeActions(r.byAction), r.makespan.Round(time.Second))
		fmt.Fprintf(out, "   store calls: %d gets, %d query pages, %d index pages, %d write ops (single or in %d transactions), %d checks, %d condition failures, %d reads before unpinned puts\n",
			r.store.Gets, r.store.QueryPages, r.store.IndexPages, r.store.Writes, r.store.Transactions, r.store.Checks, r.store.ConditionFailures, r.bill.preGets)
		fmt.Fprintf(out, "   queue calls: %d SendMessageBatch (%d messages), %d ReceiveMessage with messages (%d delivered), %d DeleteMessage, %d ChangeMessageVisibility, %d event-source DeleteMessageBatch\n",
			r.queue.sends, r.queue.sent, r.queue.receives, r.queue.received, r.queue.acks, r.queue.extends, r.esmDeletes)
		fmt.Fprintf(out, "   executor: %d starts, %d polls, %d modeled heartbeats; %s waited; worker invocations %d (batch sizes %s), longest %s, %d overhead steps x %s, %d cut by the timeout; %d janitor passes meanwhile\n",
			r.exec.starts, r.exec.polls, r.exec.heartbeats, r.exec.waited.Round(time.Second), r.inv.invocations, describeSizes(r.inv.sizes), r.inv.longest.Round(time.Millisecond),
			r.inv.steps, modelStepOverhead, r.timedOutInvocations, r.janitor)
		fmt.Fprintln(w, "service\tcharge\tcount\tunit\tUSD\t")
		for _, l := range lines {
			fmt.Fprintf(w, "%s\t%s\t%.1f\t%s\t%.5f\t\n", l.service, l.what, l.count, l.unit, l.usd)
		}
		fmt.Fprintf(w, "total\tper %d-node create + delete\t\t\t%.4f\t  %s (target <= $0.05)\n", costNodes, total, passMiss(total, 0.05))
		_ = w.Flush()
		printLevers(out, r, total)
	}
	lines, total := idleMonthCost(idle)
	fmt.Fprintf(out, "\n== idle tenant, per month (30 days)\n")
	fmt.Fprintln(w, "service\tcharge\tcount\tunit\tUSD\t")
	for _, l := range lines {
		fmt.Fprintf(w, "%s\t%s\t%.0f\t%s\t%.4f\t\n", l.service, l.what, l.count, l.unit, l.usd)
	}
	fmt.Fprintf(w, "total\tidle, one tenant, per month\t\t\t%.4f\t  %s (target <= $0.50)\n", total, passMiss(total, 0.50))
	_ = w.Flush()
	fmt.Fprintf(out, `
assumptions:
  - worker Lambda: arm64, 512 MB; one invocation per batch of up to 10 (the mapping's BatchSize; 1 when
    synchronous, where ten boots waited in place would outlast the 15-minute invocation), %d concurrent
    (the tenant's worker count); billed time = the batch's longest node (HandleBatch runs a batch's message groups at
    once): its modeled executor waits + %s per executor call and per delivery that reaches no executor (the
    handler's DynamoDB/SQS round trips), rounded to the ms; no cold starts (init) billed.
  - synchronous: each action is waited on for %s; one heartbeat per action (engine default every 30 s:
    one UpdateItem of the task + one ChangeMessageVisibility). detached: start = %s upload, then the run is
    watched in place for up to %s (the worker Lambda's QuickWait) unless the engine's estimate says it takes
    longer; a run still going is parked and a %s SSH check looks at it when the estimate says it is over
    (the first runs, with no estimate yet: after %s), then after %s doubling up to %s (the shell's PollInterval),
    each a delivery of the task's message (ReceiveMessage, invocation, ChangeMessageVisibility or DeleteMessage).
    The estimates are one process's here; on Lambda each warm environment learns its own, so a cold one pays
    the first runs' in-place wait and short first looks again (a few per environment and service action).
  - node-level actions at EC2's times: create %s (RunInstances accepted), bootstrap %s on one session (both
    synchronous in either scenario); confirm waits %s boot + %s to SSH, delete %s terminate + %s shutdown.
    synchronous: the worker waits them in place (provider actions before issue 15). detached: they are parked
    attempts, one %s check (shared DescribeInstances listing, one SSH login once running), the first at
    the launch, the next when the instance is %s old, then every %s (a shutting-down one every %s).
  - simulated time runs %dx faster than modeled time; counts come from the scaled run, costs from modeled time.
  - SQS: requests as sqsqueue makes them (Send = 1 SendMessageBatch, Ack = DeleteMessage, Extend =
    ChangeMessageVisibility) plus the mapping's receives that returned messages and its DeleteMessageBatch per
    invocation; its empty long polls are in the idle figure (4 pollers x 20 s = %d receives a month).
  - DynamoDB: capacity units from item sizes as dynamostore writes them (see billingStore); GSI projection ALL.
  - janitor: %d invocations a month (rate 1 minute) of %s at 256 MB; reads per pass counted from one idle
    RunJanitor plus the EC2 sweep's %d query pages (no EC2 provider, so no EC2 calls).
  - API: create and delete are one HTTP API request and one 100 ms, 256 MB api invocation each (the cluster
    service's own reads before Submit are not counted; status polling by the client is not counted).
  - not counted: free tiers, storage and backups (PITR), CloudWatch Logs, KMS, the per-deployment KMS key
    ($1/month) and dead-letter alarm, data transfer, the provider's own bills (EC2).
`, costConcurrency, modelStepOverhead, modelAction, modelDetachStart, modelQuickWait, modelPollCheck, modelFirstPoll, modelFirstPoll, modelPollEvery,
		modelCreateCall, modelBootstrap, modelBoot, modelSSH, modelTerminate, modelShutdown, modelProviderCheck, modelBootEstimate, modelProviderPoll, 2*modelProviderPoll, costScale, idlePollReceives, janitorPerMonth, janitorDuration, sweepQueryPages)
}

// printLevers prices a few changes from the same counts.
func printLevers(out *os.File, r *costRun, total float64) {
	avgTaskKB := 0.0
	if r.bill.taskWrites > 0 {
		avgTaskKB = float64(r.bill.taskWriteKB) / float64(r.bill.taskWrites)
	}
	fmt.Fprintf(out, "   task item writes: %d, %.2f WRU each on average; index writes %d (%.2f WRU each); delivery record writes %d (%d deliveries)\n",
		r.bill.taskWrites, avgTaskKB, r.bill.gsiWrites, r.bill.gsiWRU/math.Max(1, float64(r.bill.gsiWrites)),
		r.bill.deliveryRecordWrites, r.queue.received)
	keysOnly := (r.bill.gsiWRU - float64(r.bill.gsiWrites)) * priceDynamoWRU
	fmt.Fprintf(out, "   lever: GSI projection KEYS_ONLY (1 WRU per index write): -$%.4f -> $%.4f %s\n", keysOnly, total-keysOnly, passMiss(total-keysOnly, 0.05))
	if r.detached {
		fmt.Fprintf(out, "   the in-place waits and checks: %s of the worker's time over %d starts and %d polls (HEDDLE_COST_QUICK_WAIT=0 prices no in-place wait)\n",
			r.exec.waited.Round(time.Second), r.exec.starts, r.exec.polls)
	} else {
		fmt.Fprintf(out, "   floor: the waits alone (%s, boots included) cost %.1f GB x that = $%.4f of worker time, whatever else changes\n",
			r.exec.waited.Round(time.Second), workerMemoryGB, r.exec.waited.Seconds()*workerMemoryGB*priceLambdaGBs)
	}
}

func describeActions(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	return strings.Join(parts, ", ")
}

func describeSizes(m map[int]int64) string {
	keys := make([]int, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%dx%d", m[k], k)
	}
	return strings.Join(parts, " ")
}
