package engine

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/planner"
)

// machines is an executor over machines that go away: once a node's delete
// task succeeds, every later action on that node fails as SSH to a deleted
// machine does ("connection refused"). The delete of the node named
// failing fails, after the deletes of all its other nodes have run, so
// the job fails with the others' machines gone.
type machines struct {
	inner   Executor
	mu      sync.Mutex
	gone    map[string]bool
	failing string
	others  int // deletes the failing one waits for
}

func (m *machines) Execute(ctx context.Context, a Attempt) Result {
	node := a.Task.NodeID
	m.mu.Lock()
	gone, failing := m.gone[node], m.failing != "" && node == m.failing && a.Task.Action == domain.ActionDelete
	m.mu.Unlock()
	if gone {
		return Result{Err: errors.New("ssh: connect to host: connection refused")}
	}
	if failing {
		// Wait (within the test's patience) for the other deletes to have
		// run, so the job's failure meets their machines gone.
		for range 600 {
			m.mu.Lock()
			n := len(m.gone)
			m.mu.Unlock()
			if n >= m.others || ctx.Err() != nil {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		return Result{Err: errors.New("provider: the delete of the instance failed")}
	}
	res := m.inner.Execute(ctx, a)
	if res.Err == nil && res.PollAfter == 0 && a.Task.Action == domain.ActionDelete && ctx.Err() == nil {
		m.mu.Lock()
		m.gone[node] = true
		m.mu.Unlock()
	}
	return res
}

// setFailing names the node whose delete fails (none with "").
func (m *machines) setFailing(node string, others int) {
	m.mu.Lock()
	m.failing, m.others = node, others
	m.mu.Unlock()
}

// deleteFailsMidway creates a 4-node cluster and deletes it with the
// delete of its last node failing after the other three machines were
// deleted. It returns the failed job.
func deleteFailsMidway(t *testing.T) (*testBundle, jobRecord) {
	t.Helper()
	b := setup(t, nil, Config{})
	m := &machines{inner: Simulation{}, gone: map[string]bool{}}
	b.rec.inner = m
	stop := b.run(t, 4, 50*time.Millisecond)
	t.Cleanup(stop)

	created := b.submitAndWait(t, createSubmission(t, "c1", 4, nil))
	require.Equal(t, domain.JobSucceeded, created.Status, b.failures(t, created.ID))
	require.Equal(t, domain.TenantUsage{Clusters: 1, Nodes: 4}, b.usage(t))

	m.setFailing("c1-1003", 3)
	failed := b.submitAndWait(t, b.deleteSubmission(t, "c1"))
	require.Equal(t, domain.JobFailed, failed.Status)
	m.setFailing("", 0)

	nodes, err := b.eng.Nodes(b.ctx, tenant, "c1")
	require.NoError(t, err)
	status := map[string]domain.NodeStatus{}
	for _, n := range nodes {
		status[n.ID] = n.Status
	}
	require.Equal(t, map[string]domain.NodeStatus{
		"c1-1000": domain.NodeDeleted, "c1-1001": domain.NodeDeleted, "c1-1002": domain.NodeDeleted,
		"c1-1003": domain.NodeDeleting, // retiring, its machine still there
	}, status, "a node whose machine was deleted is DELETED, though its job failed")
	c, err := b.eng.Cluster(b.ctx, tenant, "c1")
	require.NoError(t, err)
	require.Equal(t, domain.ClusterInconsistent, c.Status)
	require.Equal(t, 1, c.NodeCount)
	require.Equal(t, domain.TenantUsage{Clusters: 1, Nodes: 1}, b.usage(t), "the failed job's end gave back the deleted nodes")
	checkInvariants(t, b)
	return b, failed
}

// TestAFailedDeleteLeavesWhatAPlainDeleteRepairs: a delete that fails
// after some machines were deleted leaves a cluster that a plain delete
// (or a retry of the job) ends, with the counters exact. Before the fix
// the deleted nodes stayed live in the records until a job succeeded, so
// the next delete planned stop and remove on machines that were gone and
// failed: only a forced delete got out.
func TestAFailedDeleteLeavesWhatAPlainDeleteRepairs(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T) {
		t.Run("plain delete", func(t *testing.T) {
			b, _ := deleteFailsMidway(t)
			sub := b.deleteSubmission(t, "c1")
			require.Equal(t, []string{"c1-1003"}, sub.RetiringNodes, "the next delete plans for the live node only")
			final := b.submitAndWait(t, sub)
			require.Equal(t, domain.JobSucceeded, final.Status, "%s%s", final.StatusMessage, b.failures(t, final.ID))
			require.Equal(t, domain.TenantUsage{}, b.usage(t))
			checkInvariants(t, b)
		})
		t.Run("retry", func(t *testing.T) {
			b, failed := deleteFailsMidway(t)
			_, err := b.eng.Retry(b.ctx, tenant, "c1", failed.ID, "ann")
			require.NoError(t, err)
			final := b.waitJob(t, "c1", failed.ID, 60*time.Second)
			require.Equal(t, domain.JobSucceeded, final.Status, "%s%s", final.StatusMessage, b.failures(t, final.ID))
			require.Equal(t, domain.TenantUsage{}, b.usage(t), "the retry's end gave back only the node the failure had not")
			checkInvariants(t, b)
		})
	})
}

// TestAFailedShrinkGivesBackTheNodesItDeleted: a shrink of two nodes
// whose second delete fails leaves the first DELETED and counted out,
// the second live; a retry ends it with the counters exact.
func TestAFailedShrinkGivesBackTheNodesItDeleted(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, Config{})
	m := &machines{inner: Simulation{}, gone: map[string]bool{}}
	b.rec.inner = m
	stop := b.run(t, 4, 50*time.Millisecond)
	defer stop()

	created := b.submitAndWait(t, createSubmission(t, "c1", 5, nil))
	require.Equal(t, domain.JobSucceeded, created.Status, b.failures(t, created.ID))

	nodes, err := b.eng.Nodes(b.ctx, tenant, "c1")
	require.NoError(t, err)
	victims := []string{"c1-1003", "c1-1004"}
	var keep []domain.Node
	for _, n := range nodes {
		if n.ID != victims[0] && n.ID != victims[1] {
			keep = append(keep, n)
		}
	}
	plan, err := planner.Build(planner.Request{Operation: domain.OpShrink, Old: nodes, New: keep, Services: services()})
	require.NoError(t, err)
	c, err := b.eng.Cluster(b.ctx, tenant, "c1")
	require.NoError(t, err)
	m.setFailing("c1-1004", 1)
	failed := b.submitAndWait(t, Submission{Tenant: tenant, Cluster: c, RetiringNodes: victims,
		Operation: domain.OpShrink, RequestedBy: "ann", Plan: plan,
		OnSuccess: Effect{ClusterStatus: domain.ClusterActive, ReleaseNodes: 2, NodeCountDelta: -2, NodeStatus: domain.NodeDeleted, Nodes: victims},
		OnFailure: Effect{ClusterStatus: domain.ClusterInconsistent, Message: "shrink failed"}})
	require.Equal(t, domain.JobFailed, failed.Status)
	m.setFailing("", 0)
	require.Equal(t, domain.TenantUsage{Clusters: 1, Nodes: 4}, b.usage(t))
	checkInvariants(t, b)

	_, err = b.eng.Retry(b.ctx, tenant, "c1", failed.ID, "ann")
	require.NoError(t, err)
	final := b.waitJob(t, "c1", failed.ID, 60*time.Second)
	require.Equal(t, domain.JobSucceeded, final.Status, "%s%s", final.StatusMessage, b.failures(t, final.ID))
	require.Equal(t, domain.TenantUsage{Clusters: 1, Nodes: 3}, b.usage(t))
	c, err = b.eng.Cluster(b.ctx, tenant, "c1")
	require.NoError(t, err)
	require.Equal(t, 3, c.NodeCount)
	checkInvariants(t, b)
}
