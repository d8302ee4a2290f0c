package planner

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/domain"
)

// withStates records run states on a node, as finished jobs leave them.
func withStates(n domain.Node, states map[string]domain.RunState) domain.Node {
	n.ServiceStates = map[string]domain.ServiceState{}
	for s, st := range states {
		n.ServiceStates[s] = domain.ServiceState{State: st, Action: domain.ActionStart}
	}
	return n
}

// demoShape is the demo catalog's shape: lb uses web, web requires kv at
// runtime.
func demoShape() map[string]*domain.Service {
	return catalog(
		svc("kv", "icxt", nil, nil),
		svc("web", "icxt", nil, []string{"kv"}),
		usesAtRuntime(svc("lb", "icxt", nil, nil), "web"),
	)
}

func TestRunStatesMakeActionsNeedless(t *testing.T) {
	t.Parallel()
	services := demoShape()
	running := domain.RunRunning
	nodes := []domain.Node{
		withStates(mkNode("n1", 1, "kv", "web"), map[string]domain.RunState{"kv": running, "web": running}),
		withStates(mkNode("n2", 2, "lb"), map[string]domain.RunState{"lb": domain.RunStopped}),
		withStates(mkNode("n3", 3, "web"), map[string]domain.RunState{"web": domain.RunStopped}),
	}
	tests := []struct {
		name     string
		op       domain.Operation
		selected []string
		want     []string
		skipped  []string
	}{
		{"start starts only what is not running", domain.OpStartServices, []string{"lb"},
			[]string{"n3/web/start", "n2/lb/start"},
			[]string{"kv start skipped on 1 node (n1): already running", "web start skipped on 1 node (n1): already running"}},
		{"stop stops only what runs", domain.OpStopServices, []string{"kv"},
			[]string{"n1/web/stop", "n1/kv/stop"},
			[]string{"lb stop skipped on 1 node (n2): not running (stopped)", "web stop skipped on 1 node (n3): not running (stopped)"}},
		{"restart leaves stopped dependents stopped", domain.OpRestartServices, []string{"kv"},
			[]string{"n1/web/stop", "n1/kv/stop", "n1/kv/start", "n1/web/start"},
			[]string{
				"lb start skipped on 1 node (n2): not running (stopped): a restart of what it depends on leaves it so",
				"lb stop skipped on 1 node (n2): not running (stopped): a restart of what it depends on leaves it so",
				"web start skipped on 1 node (n3): not running (stopped): a restart of what it depends on leaves it so",
				"web stop skipped on 1 node (n3): not running (stopped): a restart of what it depends on leaves it so",
			}},
		{"a restart of a stopped selection starts it", domain.OpRestartServices, []string{"lb"},
			[]string{"n2/lb/start"},
			[]string{"lb stop skipped on 1 node (n2): not running (stopped)"}},
		{"a restart of everything restarts what runs and starts nothing", domain.OpRestartServices, nil,
			[]string{"n1/web/stop", "n1/kv/stop", "n1/kv/start", "n1/web/start"},
			[]string{
				"lb start skipped on 1 node (n2): not running (stopped): a restart of what it depends on leaves it so",
				"lb stop skipped on 1 node (n2): not running (stopped): a restart of what it depends on leaves it so",
				"web start skipped on 1 node (n3): not running (stopped): a restart of what it depends on leaves it so",
				"web stop skipped on 1 node (n3): not running (stopped): a restart of what it depends on leaves it so",
			}},
		{"start of what all runs is empty", domain.OpStartServices, []string{"kv"},
			nil,
			[]string{"kv start skipped on 1 node (n1): already running"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			req := Request{Operation: tc.op, Old: nodes, Services: services, Selected: tc.selected}
			plan, err := Build(req)
			require.NoError(t, err)
			checkPlan(t, req, plan)
			require.Equal(t, tc.want, ids(plan))
			var got []string
			for _, s := range plan.Skipped {
				got = append(got, s.String())
			}
			require.Equal(t, tc.skipped, got)
			pv, err := NewPreview(plan, nil)
			require.NoError(t, err)
			require.Equal(t, plan.Skipped, pv.Skipped)
			if len(tc.skipped) > 0 {
				require.Contains(t, pv.String(), "skipped: "+tc.skipped[0])
			}
		})
	}
}

func TestUnknownAndFailedStatesKeepTheirActions(t *testing.T) {
	t.Parallel()
	services := catalog(svc("kv", "icxt", nil, nil))
	failed := mkNode("n2", 2, "kv")
	failed.ServiceStates = map[string]domain.ServiceState{"kv": {State: domain.RunFailed, Action: domain.ActionStart}}
	nodes := []domain.Node{mkNode("n1", 1, "kv"), failed}
	for _, op := range []domain.Operation{domain.OpStartServices, domain.OpStopServices} {
		plan, err := Build(Request{Operation: op, Old: nodes, Services: services})
		require.NoError(t, err)
		require.Equal(t, []string{"n1/kv/" + string(op), "n2/kv/" + string(op)}, ids(plan))
		require.Empty(t, plan.Skipped)
	}
}

func TestSkipsNameABoundedNumberOfNodes(t *testing.T) {
	t.Parallel()
	services := catalog(svc("kv", "icxt", nil, nil))
	var nodes []domain.Node
	for i := range 50 {
		nodes = append(nodes, withStates(mkNode(fmt.Sprintf("n%d", i), 1000+i, "kv"), map[string]domain.RunState{"kv": domain.RunRunning}))
	}
	plan, err := Build(Request{Operation: domain.OpStartServices, Old: nodes, Services: services})
	require.NoError(t, err)
	require.Empty(t, plan.Tasks)
	require.Len(t, plan.Skipped, 1)
	require.Equal(t, 50, plan.Skipped[0].Nodes)
	require.Len(t, plan.Skipped[0].NodeIDs, MaxSkipNodeIDs)
}

func TestServiceStateAfterAnAction(t *testing.T) {
	t.Parallel()
	var st domain.ServiceState
	steps := []struct {
		action domain.Action
		ok     bool
		want   domain.RunState
	}{
		{domain.ActionInstall, true, domain.RunInstalled},
		{domain.ActionConfigure, true, domain.RunConfigured},
		{domain.ActionStart, true, domain.RunRunning},
		{domain.ActionConfigure, true, domain.RunRunning}, // a reconfigure without restart leaves it running
		{domain.ActionStop, true, domain.RunStopped},
		{domain.ActionInitialize, true, domain.RunStopped},
		{domain.ActionStart, false, domain.RunFailed},
		{domain.ActionConfigure, true, domain.RunFailed}, // a failed service may run: configuring it says nothing
		{domain.ActionStop, true, domain.RunStopped},
		{domain.ActionRemove, true, ""},
		{domain.ActionInstall, true, domain.RunInstalled},
		{domain.ActionConfigure, true, domain.RunConfigured},
	}
	for _, s := range steps {
		next, ok := st.After(s.action, s.ok, "j1", "boom", st.At)
		require.Equal(t, s.want != "", ok, "after %s", s.action)
		require.Equal(t, s.want, next.State, "after %s (ok=%v)", s.action, s.ok)
		st = next
	}
	// A service in an unknown state (a node from before states were
	// recorded) may be running: a configure must not make it look stopped.
	_, known := domain.ServiceState{}.After(domain.ActionConfigure, true, "j1", "", st.At)
	require.False(t, known)
	long := domain.ServiceState{}
	long, _ = long.After(domain.ActionStart, false, "j1", strings.Repeat("é", domain.MaxStateMessage), st.At)
	require.True(t, utf8.ValidString(long.Message), "a cut message stays valid UTF-8")
}

// A layout change that reconfigures with restart must not start what
// someone stopped: the services it reconfigures were not named.
func TestARestartingExpandLeavesStoppedServicesStopped(t *testing.T) {
	t.Parallel()
	services := demoShape()
	old := []domain.Node{
		withStates(mkNode("n1", 1, "kv"), map[string]domain.RunState{"kv": domain.RunRunning}),
		withStates(mkNode("n2", 2, "lb"), map[string]domain.RunState{"lb": domain.RunStopped}),
		withStates(mkNode("n3", 3, "web"), map[string]domain.RunState{"web": domain.RunRunning}),
	}
	req := Request{Operation: domain.OpExpand, Old: old, New: append(slices.Clone(old), mkNode("n4", 4, "web")),
		Services: services, Restart: true, ConfigReferences: map[string][]string{"lb": {"web"}}}
	plan, err := Build(req)
	require.NoError(t, err)
	checkPlan(t, req, plan)
	require.Contains(t, ids(plan), "n2/lb/configure", "lb learns of the new web node")
	require.NotContains(t, ids(plan), "n2/lb/start", "the stopped lb stays stopped")
}

// TestUnmadeNodesAreOnlyDeleted is the delete of a cluster left
// INCONSISTENT by an expand whose new node found no host: that node is
// PLANNED without an address, so nothing was ever installed there. Its
// services are not stopped or removed (those tasks could only fail, "no
// access_v4 address yet", and only a forced delete got out); its delete,
// a no-op for a node a provider never made, stays.
func TestUnmadeNodesAreOnlyDeleted(t *testing.T) {
	t.Parallel()
	services := demoShape()
	made := mkNode("n1", 1, "kv", "web")
	made.Status, made.Addresses = domain.NodeActive, map[string]string{"access_v4": "192.0.2.1"}
	unmade := mkNode("n2", 2, "web")
	unmade.Status = domain.NodePlanned
	// A node the failed job did make (it has an address) is taken down as usual.
	madePlanned := mkNode("n3", 3, "lb")
	madePlanned.Status, madePlanned.Addresses = domain.NodePlanned, map[string]string{"access_v4": "192.0.2.3"}
	for _, op := range []domain.Operation{domain.OpDelete, domain.OpShrink} {
		req := Request{Operation: op, Old: []domain.Node{made, unmade, madePlanned}, Services: services}
		if op == domain.OpShrink {
			req.New = []domain.Node{made, madePlanned}
		}
		plan, err := Build(req)
		require.NoError(t, err)
		checkPlan(t, req, plan)
		var onUnmade []string
		for _, id := range ids(plan) {
			if strings.HasPrefix(id, "n2/") {
				onUnmade = append(onUnmade, id)
			}
		}
		require.Equal(t, []string{"n2/delete"}, onUnmade, "%s", op)
		if op == domain.OpDelete {
			require.Contains(t, ids(plan), "n1/web/stop")
			require.Contains(t, ids(plan), "n3/lb/stop")
		}
		var got []string
		for _, s := range plan.Skipped {
			got = append(got, s.String())
		}
		require.Contains(t, got, "web stop skipped on 1 node (n2): the node was never made (its create failed before it had an address)")
		require.Len(t, got, 1, "web defines no remove action: nothing to skip")
	}
}
