package engine

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/planner"
)

// sameLayoutSubmission plans op on the cluster's nodes as they are stored
// now (with their recorded run states), as the cluster service does.
func (b *testBundle) sameLayoutSubmission(t *testing.T, cluster string, op domain.Operation, selected []string, params func(planner.Task) map[string]string) Submission {
	t.Helper()
	nodes, err := b.eng.Nodes(b.ctx, tenant, cluster)
	require.NoError(t, err)
	plan, err := planner.Build(planner.Request{Operation: op, Old: nodes, Services: services(), Selected: selected})
	require.NoError(t, err)
	c, err := b.eng.Cluster(b.ctx, tenant, cluster)
	require.NoError(t, err)
	return Submission{Tenant: tenant, Cluster: c, Operation: op, RequestedBy: "ann", Plan: plan, Params: params,
		OnSuccess: Effect{ClusterStatus: domain.ClusterActive},
		OnFailure: Effect{ClusterStatus: domain.ClusterInconsistent, Message: string(op) + " failed"}}
}

// states returns each node's run state of each of its services.
func (b *testBundle) states(t *testing.T, cluster string) map[string]domain.RunState {
	t.Helper()
	nodes, err := b.eng.Nodes(b.ctx, tenant, cluster)
	require.NoError(t, err)
	out := map[string]domain.RunState{}
	for _, n := range nodes {
		for _, s := range n.Services {
			out[n.ID+"/"+s] = n.ServiceStates[s].State
		}
	}
	return out
}

func TestRunStatesAreRecordedWhenTheJobEnds(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T) {
		b := setup(t, nil, Config{})
		stop := b.run(t, 3, 50*time.Millisecond)
		defer stop()
		submit := func(sub Submission) jobRecord {
			t.Helper()
			job, err := b.eng.Submit(b.ctx, sub)
			require.NoError(t, err)
			return b.waitJob(t, "c1", job.ID, 30*time.Second)
		}
		running, stopped := domain.RunRunning, domain.RunStopped
		lb, db, app := "c1-1000/lb", "c1-1001/db", "c1-1002/app"

		final := submit(createSubmission(t, "c1", 3, nil))
		require.Equal(t, domain.JobSucceeded, final.Status, b.failures(t, final.ID))
		require.Equal(t, map[string]domain.RunState{lb: running, db: running, app: running}, b.states(t, "c1"))

		final = submit(b.sameLayoutSubmission(t, "c1", domain.OpStopServices, []string{"lb"}, nil))
		require.Equal(t, domain.JobSucceeded, final.Status, b.failures(t, final.ID))
		require.Equal(t, map[string]domain.RunState{lb: stopped, db: running, app: running}, b.states(t, "c1"))

		// Starting lb starts only lb: what it needs already runs.
		sub := b.sameLayoutSubmission(t, "c1", domain.OpStartServices, []string{"lb"}, nil)
		require.Len(t, sub.Plan.Tasks, 1)
		final = submit(sub)
		require.Equal(t, domain.JobSucceeded, final.Status, b.failures(t, final.ID))
		require.Contains(t, final.StatusMessage, "app start skipped on 1 node (c1-1002): already running")
		require.Equal(t, map[string]domain.RunState{lb: running, db: running, app: running}, b.states(t, "c1"))

		// Nothing left to start: the job ends at once, saying why.
		sub = b.sameLayoutSubmission(t, "c1", domain.OpStartServices, nil, nil)
		require.Empty(t, sub.Plan.Tasks)
		job, err := b.eng.Submit(b.ctx, sub)
		require.NoError(t, err)
		require.Equal(t, domain.JobSucceeded, job.Status, "an empty job ends within its submission")
		require.Contains(t, job.StatusMessage, "already running")

		// A stop that fails for good leaves the service failed, with why.
		final = submit(b.sameLayoutSubmission(t, "c1", domain.OpStopServices, []string{"app"}, failAppStop))
		require.Equal(t, domain.JobFailed, final.Status)
		nodes, err := b.eng.Nodes(b.ctx, tenant, "c1")
		require.NoError(t, err)
		st := nodes[2].ServiceStates["app"]
		require.Equal(t, domain.RunFailed, st.State)
		require.Equal(t, domain.ActionStop, st.Action)
		require.NotEmpty(t, st.Message)
		require.Equal(t, final.ID, st.JobID)
		require.Equal(t, stopped, nodes[0].ServiceStates["lb"].State, "lb, which uses app, stopped first")
		require.Equal(t, running, nodes[1].ServiceStates["db"].State, "db's stop waited for app's and never ran: its state stays")
		checkInvariants(t, b)
	})
}

// failAppStop makes every app/stop fail for good.
func failAppStop(pt planner.Task) map[string]string {
	if pt.Service == "app" && pt.Action == domain.ActionStop {
		return map[string]string{SimFailAttempts: "99"}
	}
	return nil
}

func TestALateFinisherDoesNotOverwriteTheNodes(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, Config{})
	stop := b.run(t, 3, time.Hour)
	job, err := b.eng.Submit(b.ctx, createSubmission(t, "c1", 3, nil))
	require.NoError(t, err)
	final := b.waitJob(t, "c1", job.ID, 30*time.Second)
	stop()
	require.Equal(t, domain.JobSucceeded, final.Status)
	before, err := b.eng.Nodes(b.ctx, tenant, "c1")
	require.NoError(t, err)
	// A second finisher that read the job while it was RUNNING arrives
	// after the first ended it: it must write nothing.
	err = b.eng.recordNodes(b.ctx, tenant, "c1", job.ID, domain.JobRunning, domain.NodeDeleted, []string{"c1-1000"})
	require.ErrorIs(t, err, errJobMoved)
	after, err := b.eng.Nodes(b.ctx, tenant, "c1")
	require.NoError(t, err)
	require.Equal(t, before, after)
}

func TestOutcomesOlderThanTheRecordedStateArePassedOver(t *testing.T) {
	t.Parallel()
	t1 := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	t2 := t1.Add(time.Minute)
	// j1 started web, then failed; j2 stopped web; j1 is retried and ends:
	// its old start must not make web look running again.
	n := domain.Node{ID: "n1", NodeLayout: domain.NodeLayout{Services: []string{"web"}},
		ServiceStates: map[string]domain.ServiceState{"web": {State: domain.RunStopped, Action: domain.ActionStop, JobID: "j2", At: t2}}}
	changed := applyOutcomes(&n, "j1", []outcome{{service: "web", action: domain.ActionStart, ok: true, at: t1}})
	require.False(t, changed)
	require.Equal(t, domain.RunStopped, n.ServiceStates["web"].State)

	// A restart (stop, then start) of what runs leaves the record as it was.
	n.ServiceStates["web"] = domain.ServiceState{State: domain.RunRunning, Action: domain.ActionStart, JobID: "j0", At: t1}
	changed = applyOutcomes(&n, "j3", []outcome{
		{service: "web", action: domain.ActionStop, ok: true, at: t2},
		{service: "web", action: domain.ActionStart, ok: true, at: t2.Add(time.Second)},
	})
	require.False(t, changed, "nothing to write")
	require.Equal(t, "j0", n.ServiceStates["web"].JobID)
}
