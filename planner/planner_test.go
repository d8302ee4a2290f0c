package planner

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/domain"
)

// deps returns the DependsOn of the task with the given ID.
func deps(t *testing.T, p *Plan, id string) []string {
	t.Helper()
	for _, task := range p.Tasks {
		if task.ID == id {
			return task.DependsOn
		}
	}
	t.Fatalf("no task %s in the plan", id)
	return nil
}

func ids(p *Plan) []string {
	var out []string
	for _, t := range p.Tasks {
		out = append(out, t.ID)
	}
	return out
}

func TestUndefinedActionsAreWalkedThrough(t *testing.T) {
	t.Parallel()
	// app needs lib at runtime, lib needs db; lib starts nothing of its own
	// and installs nothing either.
	services := catalog(
		svc("db", "icxt", nil, nil),
		svc("lib", "c", []string{"db"}, []string{"db"}),
		svc("app", "icxt", []string{"lib"}, []string{"lib"}),
	)
	req := Request{
		Operation:        domain.OpCreate,
		New:              []domain.Node{mkNode("a", 1, "app"), mkNode("b", 2, "db"), mkNode("c", 3, "lib")},
		Services:         services,
		ConfigReferences: map[string][]string{},
	}
	plan, err := Build(req)
	require.NoError(t, err)
	checkPlan(t, req, plan)
	require.Contains(t, deps(t, plan, "a/app/install"), "b/db/install")
	require.Contains(t, deps(t, plan, "a/app/start"), "b/db/start")
	require.NotContains(t, ids(plan), "c/lib/install")
	require.Contains(t, ids(plan), "c/lib/configure")

	stop, err := Build(Request{Operation: domain.OpStopServices, Old: req.New, Services: services, Selected: []string{"db"}})
	require.NoError(t, err)
	require.Equal(t, []string{"a/app/stop", "b/db/stop"}, ids(stop), "stopping db stops app first, through lib")
	require.Equal(t, []string{"a/app/stop"}, deps(t, stop, "b/db/stop"))
}

func TestProvidedNamesStandForTheirProviders(t *testing.T) {
	t.Parallel()
	services := catalog(
		svc("mysql", "icxt", nil, nil, "sql-db"),
		svc("postgres", "icxt", nil, nil, "sql-db"),
		svc("app", "icxt", nil, []string{"sql-db"}),
	)
	nodes := []domain.Node{mkNode("a", 1, "app"), mkNode("m", 2, "mysql"), mkNode("p", 3, "postgres")}
	plan, err := Build(Request{Operation: domain.OpStartServices, Old: nodes, Services: services, Selected: []string{"app"}})
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"m/mysql/start", "p/postgres/start"}, deps(t, plan, "a/app/start"))
}

func TestStartPullsInRuntimeNeedsAndStopPullsInDependents(t *testing.T) {
	t.Parallel()
	services := catalog(
		svc("zk", "icxt", nil, nil),
		svc("master", "icxt", nil, []string{"zk"}),
		svc("worker", "icxt", nil, []string{"master"}),
		svc("unrelated", "icxt", nil, nil),
	)
	nodes := []domain.Node{mkNode("n1", 1, "zk", "master", "unrelated"), mkNode("n2", 2, "worker")}
	tests := []struct {
		op       domain.Operation
		selected string
		want     []string
	}{
		{domain.OpStartServices, "master", []string{"n1/zk/start", "n1/master/start"}},
		{domain.OpStopServices, "master", []string{"n2/worker/stop", "n1/master/stop"}},
		{domain.OpRestartServices, "master", []string{"n2/worker/stop", "n1/master/stop", "n1/master/start", "n2/worker/start"}},
		{domain.OpStartServices, "unrelated", []string{"n1/unrelated/start"}},
	}
	for _, tc := range tests {
		t.Run(string(tc.op)+"-"+tc.selected, func(t *testing.T) {
			t.Parallel()
			req := Request{Operation: tc.op, Old: nodes, Services: services, Selected: []string{tc.selected}}
			plan, err := Build(req)
			require.NoError(t, err)
			checkPlan(t, req, plan)
			require.Equal(t, tc.want, ids(plan))
		})
	}
}

func TestDependencyCycleIsNamed(t *testing.T) {
	t.Parallel()
	services := catalog(
		svc("a", "x", nil, []string{"b"}),
		svc("b", "x", nil, []string{"c-provided"}),
		svc("c", "x", nil, []string{"a"}, "c-provided"),
		svc("d", "x", nil, []string{"a"}),
	)
	req := Request{Operation: domain.OpCreate, New: []domain.Node{mkNode("n", 1, "a", "b", "c", "d")}, Services: services}
	_, err := Build(req)
	var cycle *CycleError
	require.ErrorAs(t, err, &cycle)
	require.Equal(t, "runtime", cycle.Phase)
	require.Equal(t, []string{"a", "b", "c", "a"}, cycle.Cycle)
	require.Contains(t, err.Error(), "a -> b -> c -> a")
	checkCycleError(t, req, err)

	// The same services are fine when the cycle is not on the cluster.
	req.New = []domain.Node{mkNode("n", 1, "a", "b", "d")}
	_, err = Build(req)
	require.NoError(t, err)
}

func TestInvalidRequests(t *testing.T) {
	t.Parallel()
	services := webServices()
	three := webNodes(3)
	changedHW := webNodes(3)
	changedHW[0].HardwareType = "small"
	tests := []struct {
		name string
		req  Request
		want string
	}{
		{"create onto existing nodes", Request{Operation: domain.OpCreate, Old: three, New: three}, "create needs an empty Old"},
		{"delete keeping nodes", Request{Operation: domain.OpDelete, Old: three, New: three}, "empty New"},
		{"expand without new nodes", Request{Operation: domain.OpExpand, Old: three, New: three}, "expand only adds nodes"},
		{"expand that changes services", Request{Operation: domain.OpExpand, Old: webNodes(3), New: webNodes(4, "memcached")}, "existing nodes unchanged"},
		{"shrink to nothing", Request{Operation: domain.OpShrink, Old: three, New: nil}, "delete the cluster instead"},
		{"shrink that adds", Request{Operation: domain.OpShrink, Old: three, New: webNodes(4)}, "shrink only removes nodes"},
		{"add-services that removes", Request{Operation: domain.OpAddServices, Old: webNodes(3, "memcached"), New: three}, "add-services only adds"},
		{"remove-services that adds", Request{Operation: domain.OpRemoveServices, Old: three, New: webNodes(3, "memcached")}, "remove-services only removes"},
		{"sync that adds nodes", Request{Operation: domain.OpSyncTemplate, Old: three, New: webNodes(4)}, "same nodes"},
		{"restart that changes layout", Request{Operation: domain.OpRestartServices, Old: three, New: webNodes(4)}, "does not change the layout"},
		{"unknown selected service", Request{Operation: domain.OpStartServices, Old: three, Selected: []string{"memcached"}}, `"memcached" is not on the cluster`},
		{"selection on a layout operation", Request{Operation: domain.OpExpand, Old: three, New: webNodes(4), Selected: []string{"nginx"}}, "Selected applies to"},
		{"restart on stop", Request{Operation: domain.OpStopServices, Old: three, Restart: true}, "Restart applies to"},
		{"force on expand", Request{Operation: domain.OpExpand, Old: three, New: webNodes(4), Force: true}, "Force applies to delete and shrink"},
		{"batch size elsewhere", Request{Operation: domain.OpRestartServices, Old: three, BatchSize: 2}, "BatchSize"},
		{"negative batch size", Request{Operation: domain.OpRollingRestart, Old: three, BatchSize: -1}, "BatchSize"},
		{"unknown operation", Request{Operation: "explode", Old: three}, `unknown operation "explode"`},
		{"rollback asked for", Request{Operation: domain.OpRollback, Old: three}, "come with the create or expand"},
		{"hardware change", Request{Operation: domain.OpSyncTemplate, Old: three, New: changedHW}, "cannot be rebuilt in place"},
		{"bad node ID", Request{Operation: domain.OpCreate, New: []domain.Node{mkNode("a/b", 1, "base")}}, `node ID "a/b"`},
		{"duplicate node", Request{Operation: domain.OpCreate, New: []domain.Node{mkNode("a", 1, "base"), mkNode("a", 2, "base")}}, "listed twice"},
		{"duplicate service", Request{Operation: domain.OpCreate, New: []domain.Node{{ID: "a", NodeLayout: domain.NodeLayout{Services: []string{"base", "base"}}}}}, `service "base" twice`},
		{"service not in catalog", Request{Operation: domain.OpCreate, New: []domain.Node{mkNode("a", 1, "kafka")}}, `"kafka" is on a node but not in Services`},
		{"reconfigure without nodes", Request{Operation: domain.OpReconfigure}, "needs the cluster's nodes"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			req := tc.req
			req.Services = services
			_, err := Build(req)
			require.ErrorIs(t, err, ErrInvalidRequest)
			require.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestTimeoutsAndAttempts(t *testing.T) {
	t.Parallel()
	plan, err := Build(Request{Operation: domain.OpCreate, New: webNodes(1), Services: webServices(), ConfigReferences: webReferences()})
	require.NoError(t, err)
	byID := map[string]Task{}
	for _, task := range plan.Tasks {
		byID[task.ID] = task
	}
	tests := []struct {
		id       string
		timeout  time.Duration
		attempts int
	}{
		{"db-1001/mysql/install", 30 * time.Minute, 3}, // the service's own timeout and 2 retries
		{"db-1001/mysql/start", domain.DefaultActionTimeout.Std(), domain.DefaultRetries + 1},
		{"db-1001/create", CreateTimeout.Std(), domain.DefaultRetries + 1},
		{"db-1001/confirm", ConfirmTimeout.Std(), domain.DefaultRetries + 1},
		{"db-1001/bootstrap", BootstrapTimeout.Std(), domain.DefaultRetries + 1},
	}
	for _, tc := range tests {
		require.Equal(t, tc.timeout, byID[tc.id].Timeout.Std(), tc.id)
		require.Equal(t, tc.attempts, byID[tc.id].MaxAttempts, tc.id)
	}
	require.Equal(t, DeleteTimeout, plan.Rollback.Tasks[0].Timeout)
}

func TestRollingRestartBatches(t *testing.T) {
	t.Parallel()
	nodes := webNodes(5)
	for _, size := range []int{0, 1, 2, 3, 5, 9} {
		req := Request{Operation: domain.OpRollingRestart, Old: nodes, Services: webServices(), Selected: []string{"nginx"}, BatchSize: size}
		plan, err := Build(req)
		require.NoError(t, err)
		checkPlan(t, req, plan)
		stages, err := plan.Stages()
		require.NoError(t, err)
		batches := (5 + max(size, 1) - 1) / max(size, 1)
		require.Len(t, stages, 2*batches, "batch size %d: a stop and a start stage per batch", size)
		for _, st := range stages {
			require.LessOrEqual(t, len(st), max(size, 1))
		}
	}
}

func TestLargeGroupsGoThroughJoins(t *testing.T) {
	t.Parallel()
	services := catalog(
		svc("base", "ic", nil, nil),
		svc("dep", "icxt", []string{"base"}, nil),
		svc("app", "icxt", []string{"dep"}, []string{"dep"}),
	)
	const n = 300
	nodes := make([]domain.Node, n)
	for i := range nodes {
		nodes[i] = mkNode(fmt.Sprintf("n%03d", i), 1000+i, "base", "dep", "app")
	}
	limits := Limits{MaxDependsOn: 8, MaxDependents: 8}
	req := Request{Operation: domain.OpCreate, New: nodes, Services: services, ConfigReferences: map[string][]string{}, Limits: limits}
	plan, err := Build(req)
	require.NoError(t, err)
	work, joins, edges := plan.Counts()
	require.Equal(t, n*(3+2+3+3), work) // node actions, base, dep and app (install, configure, start)
	require.Positive(t, joins)
	// Without joins the install and start edges alone would be 2*n*n.
	require.Less(t, edges, 4*(work+joins), "edges must grow linearly with the tasks")
	dependents := plan.Dependents()
	for _, task := range plan.Tasks {
		require.LessOrEqual(t, len(task.DependsOn), limits.MaxDependsOn, task.ID)
		require.LessOrEqual(t, len(dependents[task.ID]), limits.MaxDependents, task.ID)
	}
	reach := newReachability(t, plan)
	require.True(t, reach.before("n299/dep/install", "n000/app/install"))
	require.True(t, reach.before("n000/dep/start", "n299/app/start"))
	require.False(t, reach.before("n299/dep/install", "n000/dep/install"))
}

func TestStagesAreCooprStyle(t *testing.T) {
	t.Parallel()
	// Hand-made plan: a and b on node n1 are both sources, but a node runs one
	// task per stage; the join passes c's dependency straight through.
	plan := &Plan{Tasks: []Task{
		{ID: "a", Kind: KindWork, NodeID: "n1", Action: domain.ActionInstall},
		{ID: "b", Kind: KindWork, NodeID: "n1", Action: domain.ActionInstall},
		{ID: "x", Kind: KindWork, NodeID: "n2", Action: domain.ActionInstall},
		{ID: "j", Kind: KindJoin, Action: ActionJoin, DependsOn: []string{"x"}},
		{ID: "c", Kind: KindWork, NodeID: "n3", Action: domain.ActionStart, DependsOn: []string{"j"}},
		{ID: "d", Kind: KindWork, NodeID: "n1", Action: domain.ActionStart, DependsOn: []string{"a", "c"}},
	}}
	stages, err := plan.Stages()
	require.NoError(t, err)
	require.Equal(t, []Stage{{"a", "x"}, {"b", "c"}, {"d"}}, stages)

	est := ActionEstimates(map[domain.Action]time.Duration{domain.ActionInstall: 10 * time.Second, domain.ActionStart: time.Second}, 0)
	require.Equal(t, 21*time.Second, plan.StageMakespan(stages, est))
	cp, err := plan.CriticalPath(est)
	require.NoError(t, err)
	require.Equal(t, 12*time.Second, cp.Length)
	require.Equal(t, []string{"x", "c", "d"}, cp.Tasks)
}

func TestPlansFromOutsideAreChecked(t *testing.T) {
	t.Parallel()
	unknown := &Plan{Tasks: []Task{{ID: "a", DependsOn: []string{"ghost"}}}}
	_, err := unknown.Stages()
	var pe *PlanError
	require.ErrorAs(t, err, &pe)
	require.Contains(t, err.Error(), "ghost")

	backwards := &Plan{Tasks: []Task{{ID: "a", DependsOn: []string{"b"}}, {ID: "b"}}}
	_, err = backwards.CriticalPath(estimates)
	require.ErrorAs(t, err, &pe)
	require.Contains(t, err.Error(), "does not come before it")
}

func TestPreviewMarshalsAndRenders(t *testing.T) {
	t.Parallel()
	plan, err := Build(Request{Operation: domain.OpExpand, Old: webNodes(2), New: webNodes(3), Services: webServices(), ConfigReferences: webReferences()})
	require.NoError(t, err)
	pv, err := NewPreview(plan, estimates)
	require.NoError(t, err)

	raw, err := json.Marshal(pv)
	require.NoError(t, err)
	var back Preview
	require.NoError(t, json.Unmarshal(raw, &back))
	require.Equal(t, *pv, back)
	var generic map[string]any
	require.NoError(t, json.Unmarshal(raw, &generic))
	require.Equal(t, "expand", generic["operation"])
	require.Equal(t, "web-1004", generic["diff"].(map[string]any)["addedNodes"].([]any)[0].(map[string]any)["id"])
	require.NotNil(t, generic["rollback"])

	text := pv.String()
	require.Contains(t, text, "plan: expand\n")
	require.Contains(t, text, "+ node     web-1004")
	require.Contains(t, text, "TASK")
	require.Contains(t, text, "rollback: rollback\n")
	require.Regexp(t, `(?m)^lb-1000/haproxy/configure +lb-1000 +haproxy +configure +10m0s +4 +web-1004/confirm$`, text)

	bare, err := NewPreview(plan, nil)
	require.NoError(t, err)
	require.Nil(t, bare.CriticalPath)
	require.NotContains(t, bare.String(), "critical path")
}

func TestEmptyPlans(t *testing.T) {
	t.Parallel()
	// base defines no start: starting it is nothing to do, and that is a plan.
	plan, err := Build(Request{Operation: domain.OpStartServices, Old: webNodes(1), Services: webServices(), Selected: []string{"base"}})
	require.NoError(t, err)
	require.Empty(t, plan.Tasks)
	stages, err := plan.Stages()
	require.NoError(t, err)
	require.Empty(t, stages)
	cp, err := plan.CriticalPath(estimates)
	require.NoError(t, err)
	require.Zero(t, cp.Length)
	require.True(t, plan.Diff.IsEmpty())
}

func TestBuildErrorsAreTyped(t *testing.T) {
	t.Parallel()
	_, err := Build(Request{Operation: domain.OpCreate})
	require.True(t, errors.Is(err, ErrInvalidRequest))
}

// TestDeleteOfAClusterWithNoNodesLeft: a cluster whose nodes are all
// DELETED already (a delete aborted after its last node's delete task)
// is still ACTIVE or INCONSISTENT, and its documented way out, a plain
// delete, must plan: nothing to run, so the job ends it at once. Before,
// the planner refused the request and the delete answered 500 (the
// operations model, seed 12583033194065566653).
func TestDeleteOfAClusterWithNoNodesLeft(t *testing.T) {
	t.Parallel()
	plan, err := Build(Request{Operation: domain.OpDelete})
	require.NoError(t, err)
	require.Empty(t, plan.Tasks)
	require.Nil(t, plan.Rollback)
}
