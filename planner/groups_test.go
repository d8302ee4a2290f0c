package planner

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/domain"
)

// smallPlan is two nodes created behind one join, kv installed on one and web
// on the other, and web started once both are installed.
func smallPlan() *Plan {
	return &Plan{Tasks: []Task{
		{ID: "n1/create", Kind: KindWork, NodeID: "n1", Action: domain.ActionCreate},
		{ID: "n2/create", Kind: KindWork, NodeID: "n2", Action: domain.ActionCreate},
		{ID: "join:created", Kind: KindJoin, Action: ActionJoin, DependsOn: []string{"n1/create", "n2/create"}},
		{ID: "n1/kv/install", Kind: KindWork, NodeID: "n1", Service: "kv", Action: domain.ActionInstall, DependsOn: []string{"join:created"}},
		{ID: "n2/web/install", Kind: KindWork, NodeID: "n2", Service: "web", Action: domain.ActionInstall, DependsOn: []string{"join:created"}},
		{ID: "n2/web/start", Kind: KindWork, NodeID: "n2", Service: "web", Action: domain.ActionStart, DependsOn: []string{"n1/kv/install", "n2/web/install"}},
	}}
}

func TestGroupGraphGroupsByStageServiceActionAndFoldsJoins(t *testing.T) {
	t.Parallel()
	slowWeb := func(t *Task) time.Duration {
		if t.ID == "n2/web/install" {
			return 5 * time.Second
		}
		return time.Second
	}
	status := map[string]domain.TaskStatus{"n1/create": domain.TaskSucceeded, "n2/create": domain.TaskFailed}
	g, err := smallPlan().GroupGraph(slowWeb, func(id string) domain.TaskStatus {
		if st, ok := status[id]; ok {
			return st
		}
		return domain.TaskBlocked
	})
	require.NoError(t, err)
	require.Equal(t, 3, g.Stages)
	require.Equal(t, []TaskGroup{
		{ID: 0, Stage: 1, Action: domain.ActionCreate, Tasks: 2, Longest: domain.Duration(time.Second), Critical: true,
			Status: map[domain.TaskStatus]int{domain.TaskSucceeded: 1, domain.TaskFailed: 1}},
		{ID: 1, Stage: 2, Service: "kv", Action: domain.ActionInstall, Tasks: 1, Longest: domain.Duration(time.Second),
			Status: map[domain.TaskStatus]int{domain.TaskBlocked: 1}},
		{ID: 2, Stage: 2, Service: "web", Action: domain.ActionInstall, Tasks: 1, Longest: domain.Duration(5 * time.Second), Critical: true,
			Status: map[domain.TaskStatus]int{domain.TaskBlocked: 1}},
		{ID: 3, Stage: 3, Service: "web", Action: domain.ActionStart, Tasks: 1, Longest: domain.Duration(time.Second), Critical: true,
			Status: map[domain.TaskStatus]int{domain.TaskBlocked: 1}},
	}, g.Groups)
	require.Equal(t, []GroupEdge{
		{From: 0, To: 1}, // through the join
		{From: 0, To: 2, Critical: true},
		{From: 1, To: 3},
		{From: 2, To: 3, Critical: true},
	}, g.Edges)
	require.Equal(t, GraphPath{Length: domain.Duration(7 * time.Second), Tasks: []string{"n1/create", "n2/web/install", "n2/web/start"}}, g.Path)

	// Without weights the path is the longest chain; the first of equals.
	g, err = smallPlan().GroupGraph(nil, nil)
	require.NoError(t, err)
	require.Equal(t, []string{"n1/create", "n1/kv/install", "n2/web/start"}, g.Path.Tasks)
	require.Nil(t, g.Groups[0].Status, "a plan's groups have no statuses")
	require.True(t, g.Groups[1].Critical)
	require.False(t, g.Groups[2].Critical)
}

func TestGroupGraphIsBounded(t *testing.T) {
	t.Parallel()
	plan := &Plan{}
	for i := range MaxGraphGroups + 5 {
		plan.Tasks = append(plan.Tasks, Task{ID: fmt.Sprintf("n/s%04d/install", i), Kind: KindWork, NodeID: fmt.Sprintf("n%d", i),
			Service: fmt.Sprintf("s%04d", i), Action: domain.ActionInstall})
	}
	plan.Tasks = append(plan.Tasks, Task{ID: "last", Kind: KindWork, NodeID: "z", Service: "zz", Action: domain.ActionStart,
		DependsOn: []string{plan.Tasks[0].ID, plan.Tasks[MaxGraphGroups+4].ID}})
	g, err := plan.GroupGraph(nil, nil)
	require.NoError(t, err)
	require.Len(t, g.Groups, MaxGraphGroups)
	require.Equal(t, 6, g.OmittedGroups)
	require.Empty(t, g.Edges, "edges to cut groups go too")
	require.Equal(t, 2, g.OmittedEdges)
}

// A 1,000-node create of six services is a few dozen groups and a small
// answer, and the preview carries it whole when its lists are cut.
func TestGroupGraphOfALargePlanIsSmall(t *testing.T) {
	t.Parallel()
	plan, err := Build(benchCreate())
	require.NoError(t, err)
	pv, err := NewPreview(plan, estimates)
	require.NoError(t, err)
	g := pv.Bounded(100).Graph
	require.NotNil(t, g)
	require.Equal(t, pv.Summary.Stages, g.Stages)
	tasks := 0
	for _, grp := range g.Groups {
		tasks += grp.Tasks
	}
	require.Equal(t, pv.Summary.WorkTasks, tasks, "every work task is in one group")
	require.Less(t, len(g.Groups), 200)
	require.Equal(t, pv.CriticalPath.Tasks, g.Path.Tasks, "the same critical path as the preview's")
	data, err := json.Marshal(g)
	require.NoError(t, err)
	require.Less(t, len(data), 64<<10, "a 1,000-node graph answers in under 64 KB")
	t.Logf("%d work tasks: %d groups, %d edges, %d bytes", tasks, len(g.Groups), len(g.Edges), len(data))
}

// FuzzGroupGraphOfArbitraryPlans feeds plans as JSON might hold them: a
// malformed one is refused with a *PlanError; for the rest every work task
// is in exactly one group, edges join two groups forward in stage order,
// the critical path runs through work tasks each in a critical group, and
// its edges join critical groups.
func FuzzGroupGraphOfArbitraryPlans(f *testing.F) {
	f.Add([]byte(`{"tasks":[{"id":"a","kind":"work","nodeId":"n","action":"install"},{"id":"j","kind":"join","action":"join","dependsOn":["a"]},{"id":"b","kind":"work","nodeId":"n","action":"start","dependsOn":["j"]}]}`))
	f.Add([]byte(`{"tasks":[{"id":"a","dependsOn":["b"]},{"id":"b"}]}`))
	f.Add([]byte(`{"tasks":[{"id":"x","nodeId":"n","service":"s"},{"id":"y","nodeId":"n","service":"s"},{"id":"z","nodeId":"m","dependsOn":["x","y"]}]}`))
	f.Add([]byte(`{"tasks":[{"id":"j","kind":"join"},{"id":"k","kind":"join","dependsOn":["j"]},{"id":"w","dependsOn":["k"]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var plan Plan
		if json.Unmarshal(data, &plan) != nil {
			return
		}
		g, err := plan.GroupGraph(nil, func(string) domain.TaskStatus { return domain.TaskReady })
		if err != nil {
			var pe *PlanError
			require.ErrorAs(t, err, &pe)
			return
		}
		work := map[string]bool{}
		for _, task := range plan.Tasks {
			if !task.IsJoin() {
				work[task.ID] = true
			}
		}
		total := 0
		for i, grp := range g.Groups {
			require.Equal(t, i, grp.ID)
			require.Positive(t, grp.Tasks)
			require.Equal(t, grp.Tasks, grp.Status[domain.TaskReady])
			total += grp.Tasks
		}
		if g.OmittedGroups == 0 {
			require.Equal(t, len(work), total, "every work task in one group")
		}
		for _, e := range g.Edges {
			require.Less(t, g.Groups[e.From].Stage, g.Groups[e.To].Stage, "edges go forward")
			if e.Critical {
				require.True(t, g.Groups[e.From].Critical && g.Groups[e.To].Critical)
			}
		}
		for _, id := range g.Path.Tasks {
			require.True(t, work[id], "%s on the path is not a work task", id)
		}
		require.Equal(t, len(work) > 0, len(g.Path.Tasks) > 0)
	})
}
