package engine

import (
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/planner"
)

// addServiceSubmission adds svc to every app node of the cluster, as the
// cluster service's add-services does: the nodes' layouts are written with
// the job (UpdatedNodes).
func (b *testBundle) addServiceSubmission(t *testing.T, cluster, svc string) Submission {
	t.Helper()
	nodes, err := b.eng.Nodes(b.ctx, tenant, cluster)
	require.NoError(t, err)
	var live, next, updated []domain.Node
	for _, n := range nodes {
		if n.Status == domain.NodeDeleted {
			continue
		}
		live = append(live, n)
		if slices.Contains(n.Services, "app") {
			n.Services = append(slices.Clone(n.Services), svc)
			updated = append(updated, n)
		}
		next = append(next, n)
	}
	plan, err := planner.Build(planner.Request{Operation: domain.OpAddServices, Old: live, New: next, Services: services()})
	require.NoError(t, err)
	c, err := b.eng.Cluster(b.ctx, tenant, cluster)
	require.NoError(t, err)
	return Submission{Tenant: tenant, Cluster: c, UpdatedNodes: updated, Operation: domain.OpAddServices, RequestedBy: "ann", Plan: plan,
		OnSuccess: Effect{ClusterStatus: domain.ClusterActive},
		OnFailure: Effect{ClusterStatus: domain.ClusterInconsistent, Message: "add-services failed"}}
}

// shrinkSubmission retires the cluster's newest app node.
func (b *testBundle) shrinkSubmission(t *testing.T, cluster string) (Submission, string) {
	t.Helper()
	nodes, err := b.eng.Nodes(b.ctx, tenant, cluster)
	require.NoError(t, err)
	var live, kept []domain.Node
	victim := ""
	for _, n := range nodes {
		if n.Status != domain.NodeDeleted {
			live = append(live, n)
			if slices.Contains(n.Services, "app") {
				victim = n.ID
			}
		}
	}
	for _, n := range live {
		if n.ID != victim {
			kept = append(kept, n)
		}
	}
	plan, err := planner.Build(planner.Request{Operation: domain.OpShrink, Old: live, New: kept, Services: services()})
	require.NoError(t, err)
	c, err := b.eng.Cluster(b.ctx, tenant, cluster)
	require.NoError(t, err)
	return Submission{Tenant: tenant, Cluster: c, RetiringNodes: []string{victim}, Operation: domain.OpShrink, RequestedBy: "ann", Plan: plan,
		OnSuccess: Effect{ClusterStatus: domain.ClusterActive, ReleaseNodes: 1, NodeCountDelta: -1, NodeStatus: domain.NodeDeleted, Nodes: []string{victim}},
		OnFailure: Effect{ClusterStatus: domain.ClusterInconsistent, Message: "shrink failed"}}, victim
}

// nodesByID reads the cluster's nodes by id.
func (b *testBundle) nodesByID(t *testing.T, cluster string) map[string]domain.Node {
	t.Helper()
	nodes, err := b.eng.Nodes(b.ctx, tenant, cluster)
	require.NoError(t, err)
	out := map[string]domain.Node{}
	for _, n := range nodes {
		out[n.ID] = n
	}
	return out
}

// TestAVetoedAddServicesPutsTheLayoutsBack: a vetoed add-services leaves
// the nodes' layouts as they were (before the fix, the service stayed in
// the layouts of an ACTIVE cluster, never installed); its retry writes
// them again and installs the service.
func TestAVetoedAddServicesPutsTheLayoutsBack(t *testing.T) {
	t.Parallel()
	vetoedAddServices(t, false)
}

// TestAVetoedStagedAddServicesPutsTheLayoutsBack: the same when step 2 is
// staged (a large submission): the staged ops write the layouts again on
// the retry.
func TestAVetoedStagedAddServicesPutsTheLayoutsBack(t *testing.T) {
	t.Parallel()
	vetoedAddServices(t, true)
}

func vetoedAddServices(t *testing.T, staged bool) {
	eachBackend(t, func(t *testing.T) {
		b := setup(t, nil, Config{})
		if staged {
			b.eng.inlineBatches = 0
		}
		hook := &gate{}
		b.eng.SetHooks(hook)
		stop := b.run(t, 3, 50*time.Millisecond)
		defer stop()

		final := b.submitAndWait(t, createSubmission(t, "c1", 3, nil))
		require.Equal(t, domain.JobSucceeded, final.Status, b.failures(t, final.ID))
		before := b.nodesByID(t, "c1")

		hook.set(true)
		sub := b.addServiceSubmission(t, "c1", "lb")
		require.NotEmpty(t, sub.UpdatedNodes)
		vetoed := b.submitAndWait(t, sub)
		require.Equal(t, domain.JobFailed, vetoed.Status)
		require.True(t, vetoed.Withdrawn)
		require.Equal(t, before, b.nodesByID(t, "c1"), "the veto put the layouts back")
		c, err := b.eng.Cluster(b.ctx, tenant, "c1")
		require.NoError(t, err)
		require.Equal(t, domain.ClusterActive, c.Status)
		checkInvariants(t, b)

		hook.set(false)
		_, err = b.eng.Retry(b.ctx, tenant, "c1", vetoed.ID, "ann")
		require.NoError(t, err)
		retried := b.waitJob(t, "c1", vetoed.ID, 60*time.Second)
		require.Equal(t, domain.JobSucceeded, retried.Status, "%s%s", retried.StatusMessage, b.failures(t, retried.ID))
		after := b.nodesByID(t, "c1")
		for _, n := range sub.UpdatedNodes {
			require.Contains(t, after[n.ID].Services, "lb", "the retry wrote node %s's layout again", n.ID)
		}
		checkInvariants(t, b)
	})
}

// TestAVetoedShrinkAndDeletePutTheirVictimsBack: a vetoed shrink or delete
// leaves its victims as they were, not DELETING (before the fix they
// stayed DELETING on an ACTIVE cluster); a retry retires them again and
// deletes them.
func TestAVetoedShrinkAndDeletePutTheirVictimsBack(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T) {
		b := setup(t, nil, Config{})
		hook := &gate{}
		b.eng.SetHooks(hook)
		stop := b.run(t, 3, 50*time.Millisecond)
		defer stop()

		final := b.submitAndWait(t, createSubmission(t, "c1", 4, nil))
		require.Equal(t, domain.JobSucceeded, final.Status, b.failures(t, final.ID))
		before := b.nodesByID(t, "c1")

		hook.set(true)
		shrink, victim := b.shrinkSubmission(t, "c1")
		vetoed := b.submitAndWait(t, shrink)
		require.Equal(t, domain.JobFailed, vetoed.Status)
		require.Equal(t, before, b.nodesByID(t, "c1"), "the vetoed shrink left its victim as it was")
		del := b.submitAndWait(t, b.deleteSubmission(t, "c1"))
		require.Equal(t, domain.JobFailed, del.Status)
		require.Equal(t, before, b.nodesByID(t, "c1"), "the vetoed delete left every node as it was")
		c, err := b.eng.Cluster(b.ctx, tenant, "c1")
		require.NoError(t, err)
		require.Equal(t, domain.ClusterActive, c.Status)
		checkInvariants(t, b)

		// Both withdrawals left the nodes as they were: the shrink's
		// retry retires its victim again and deletes it.
		hook.set(false)
		_, err = b.eng.Retry(b.ctx, tenant, "c1", vetoed.ID, "ann")
		require.NoError(t, err)
		retried := b.waitJob(t, "c1", vetoed.ID, 60*time.Second)
		require.Equal(t, domain.JobSucceeded, retried.Status, "%s%s", retried.StatusMessage, b.failures(t, retried.ID))
		require.Equal(t, domain.NodeDeleted, b.nodesByID(t, "c1")[victim].Status)
		checkInvariants(t, b)

		// The delete's victims include the node the shrink deleted since:
		// its retry no longer fits the cluster and is refused, changing
		// nothing.
		_, err = b.eng.Retry(b.ctx, tenant, "c1", del.ID, "ann")
		require.ErrorIs(t, err, ErrJobState)
		lj, err := b.eng.loadJob(b.ctx, tenant, "c1", del.ID)
		require.NoError(t, err)
		require.Equal(t, domain.JobFailed, lj.job.Status, "the refused retry changed nothing")
		require.Equal(t, domain.NodeDeleted, b.nodesByID(t, "c1")[victim].Status)

		// A delete vetoed now retries into a deleted cluster.
		hook.set(true)
		del = b.submitAndWait(t, b.deleteSubmission(t, "c1"))
		require.Equal(t, domain.JobFailed, del.Status)
		for id, n := range b.nodesByID(t, "c1") {
			require.NotEqual(t, domain.NodeDeleting, n.Status, "node %s", id)
		}
		hook.set(false)
		_, err = b.eng.Retry(b.ctx, tenant, "c1", del.ID, "ann")
		require.NoError(t, err)
		retried = b.waitJob(t, "c1", del.ID, 60*time.Second)
		require.Equal(t, domain.JobSucceeded, retried.Status, "%s%s", retried.StatusMessage, b.failures(t, retried.ID))
		for id, n := range b.nodesByID(t, "c1") {
			require.Equal(t, domain.NodeDeleted, n.Status, "node %s", id)
		}
		require.Equal(t, domain.TenantUsage{}, b.usage(t))
		checkInvariants(t, b)
	})
}

// TestAnUndoneSubmissionPutsTheLayoutsBack: the janitor's undo of a job
// that waited for its pre-start hooks in vain (no worker asked them) puts
// the layouts its add-services wrote back, as a veto does.
func TestAnUndoneSubmissionPutsTheLayoutsBack(t *testing.T) {
	t.Parallel()
	var clock atomic.Int64
	clock.Store(time.Now().UnixNano())
	b := setup(t, nil, Config{Clock: func() time.Time { return time.Unix(0, clock.Load()) }})
	stop := b.run(t, 3, 50*time.Millisecond)
	final := b.submitAndWait(t, createSubmission(t, "c1", 3, nil))
	stop()
	require.Equal(t, domain.JobSucceeded, final.Status, b.failures(t, final.ID))
	before := b.nodesByID(t, "c1")

	b.eng.SetHooks(&gate{}) // asked by a worker, and none runs
	sub := b.addServiceSubmission(t, "c1", "lb")
	job, err := b.eng.Submit(b.ctx, sub)
	require.NoError(t, err)
	require.NotEqual(t, before, b.nodesByID(t, "c1"), "the pending job wrote its layouts")

	clock.Add(int64(b.eng.cfg.SubmitTimeout + time.Minute))
	r, err := b.eng.RunJanitor(b.ctx)
	require.NoError(t, err)
	require.Equal(t, 1, r.Undone)
	lj, err := b.eng.loadJob(b.ctx, tenant, "c1", job.ID)
	require.NoError(t, err)
	require.Equal(t, domain.JobFailed, lj.job.Status)
	require.Equal(t, before, b.nodesByID(t, "c1"), "the undo put the layouts back")
	checkInvariants(t, b)
}
