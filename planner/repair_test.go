package planner

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/domain"
)

// A replacement deletes the lost web server without touching it (nothing
// is there to stop), sets the new one up in dependency order, and
// reconfigures and restarts the load balancer, whose config lists the web
// servers; the database, which reads nothing of the layout, is left alone.
func TestRepairReplacesALostNodeAndReconfiguresWhatReadsTheLayout(t *testing.T) {
	t.Parallel()
	old := webNodes(2)
	fresh := mkNode("web-1004", 1004, "base", "nginx", "php-fpm")
	req := Request{Operation: domain.OpRepair, Old: old, New: append(without(old, "web-1003"), fresh),
		Services: webServices(), ConfigReferences: webReferences(), Restart: true}
	plan, err := Build(req)
	require.NoError(t, err)
	checkPlan(t, req, plan)
	got := ids(plan)
	require.Contains(t, got, "web-1003/delete")
	for _, a := range []string{"stop", "remove"} {
		require.NotContains(t, got, "web-1003/nginx/"+a, "a lost node's services are not stopped")
	}
	for _, id := range []string{"web-1004/create", "web-1004/nginx/install", "web-1004/nginx/configure", "web-1004/nginx/start",
		"lb-1000/haproxy/configure", "lb-1000/haproxy/stop", "lb-1000/haproxy/start"} {
		require.Contains(t, got, id)
	}
	require.Contains(t, deps(t, plan, "web-1004/nginx/start"), "web-1004/php-fpm/start", "nginx needs php-fpm at runtime")
	require.Contains(t, deps(t, plan, "web-1003/delete"), "web-1004/nginx/start", "the lost node goes once its replacement runs")
	for _, id := range got {
		require.NotContains(t, id, "db-1001/", "the database reads nothing the repair changes")
		require.NotContains(t, id, "web-1002/nginx/stop", "the other web server reads nothing the repair changes")
	}
	require.NotNil(t, plan.Rollback)
	undo := ids(plan.Rollback)
	require.Contains(t, undo, "rollback:web-1004/delete", "the new node is discarded")
	require.Contains(t, undo, "rollback:lb-1000/haproxy/configure", "what reads the layout is reconfigured against the nodes kept")
	for _, id := range undo {
		require.NotContains(t, id, "web-1003", "nothing brings the lost node back")
		require.NotContains(t, id, "web-1004/nginx/stop", "the new node's services are discarded with it")
	}
}

// A repair in place reconfigures and restarts what was named on the nodes
// given, like a reconfigure.
func TestRepairInPlaceRestartsWhatDrifted(t *testing.T) {
	t.Parallel()
	old := webNodes(2)
	req := Request{Operation: domain.OpRepair, Old: []domain.Node{old[2]}, Services: webServices(),
		ConfigReferences: webReferences(), Restart: true, Selected: []string{"nginx"}}
	plan, err := Build(req)
	require.NoError(t, err)
	require.Subset(t, ids(plan), []string{"web-1002/nginx/configure", "web-1002/nginx/stop", "web-1002/nginx/start"})
}

func TestRepairRefusesWhatIsNoRepair(t *testing.T) {
	t.Parallel()
	old := webNodes(2)
	fresh := mkNode("web-1004", 1004, "base", "nginx", "php-fpm")
	for name, req := range map[string]Request{
		"only adds":          {Operation: domain.OpRepair, Old: old, New: append(webNodes(2), fresh)},
		"only deletes":       {Operation: domain.OpRepair, Old: old, New: without(old, "web-1003")},
		"changes a kept one": {Operation: domain.OpRepair, Old: old, New: append(stripServices(without(old, "web-1003"), "redis"), fresh)},
		"selects and adds":   {Operation: domain.OpRepair, Old: old, New: append(without(old, "web-1003"), fresh), Selected: []string{"nginx"}},
	} {
		req.Services = webServices()
		_, err := Build(req)
		require.ErrorIs(t, err, ErrInvalidRequest, name)
	}
}

// A service that runs where heddle stopped it is stopped on that node
// alone, although the record says it is stopped; nothing else runs there.
func TestRepairStopsWhatRunsWhereHeddleStoppedIt(t *testing.T) {
	t.Parallel()
	old := webNodes(2)
	stopped := old[2]
	stopped.ServiceStates = map[string]domain.ServiceState{"nginx": {State: domain.RunStopped}}
	plan, err := Build(Request{Operation: domain.OpRepair, Old: []domain.Node{stopped}, Services: webServices(),
		ConfigReferences: webReferences(), StopOn: map[string][]string{"web-1002": {"nginx"}}})
	require.NoError(t, err)
	require.Equal(t, []string{"web-1002/bootstrap", "web-1002/nginx/stop"}, ids(plan))

	// Beside a restart of what is down elsewhere, it is still only stopped.
	plan, err = Build(Request{Operation: domain.OpRepair, Old: []domain.Node{stopped, old[3]}, Services: webServices(),
		ConfigReferences: webReferences(), Restart: true, Selected: []string{"nginx"}, StopOn: map[string][]string{"web-1002": {"nginx"}}})
	require.NoError(t, err)
	got := ids(plan)
	require.Contains(t, got, "web-1002/nginx/stop")
	require.NotContains(t, got, "web-1002/nginx/start")
	require.Subset(t, got, []string{"web-1003/nginx/configure", "web-1003/nginx/stop", "web-1003/nginx/start"})

	for name, stopOn := range map[string]map[string][]string{
		"a node not given":    {"web-1003": {"nginx"}},
		"a service not there": {"web-1002": {"mysql"}},
	} {
		_, err := Build(Request{Operation: domain.OpRepair, Old: []domain.Node{stopped}, Services: webServices(), StopOn: stopOn})
		require.ErrorIs(t, err, ErrInvalidRequest, name)
	}
	_, err = Build(Request{Operation: domain.OpStopServices, Old: old, Services: webServices(), StopOn: map[string][]string{"web-1002": {"nginx"}}})
	require.ErrorIs(t, err, ErrInvalidRequest)
}
