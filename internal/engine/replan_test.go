package engine

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/domain"
)

// planLater turns a create submission into what the cluster service
// submits for a large create: inputs and a node count, no plan, and a
// replanner that gives the whole submission back from those inputs.
func planLater(t *testing.T, cluster string, n int) (Submission, Replanner) {
	t.Helper()
	sub := createSubmission(t, cluster, n, nil)
	inputs := []byte(`{"size":` + strconv.Itoa(n) + `}`)
	replanner := func(_ context.Context, ten string, job domain.Job, in []byte) (Submission, error) {
		require.Equal(t, tenant, ten)
		require.Equal(t, cluster, job.ClusterID)
		require.JSONEq(t, string(inputs), string(in), "the inputs come back as they were submitted")
		return createSubmission(t, cluster, n, nil), nil
	}
	sub.Replan, sub.PlannedNodes = inputs, len(sub.NewNodes)
	sub.PlannedTasks, _, _ = sub.Plan.Counts()
	sub.NewNodes, sub.Plan = nil, nil
	sub.OnSuccess.Nodes, sub.OnRollback.Nodes = nil, nil
	return sub, replanner
}

// TestReplannedSubmissionRunsToTheEnd: a submission planned later answers
// PENDING after step 1, is planned and written in the background, and runs
// like any job, on every backend.
func TestReplannedSubmissionRunsToTheEnd(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T) {
		b := setup(t, nil, Config{})
		sub, replanner := planLater(t, "c1", 40)
		b.eng.SetReplanner(replanner)
		job, err := b.eng.Submit(b.ctx, sub)
		require.NoError(t, err)
		require.Equal(t, domain.JobPending, job.Status, "answered after step 1")
		require.Equal(t, sub.PlannedTasks, job.TaskTotal, "the answer counts the planned tasks")
		stop := b.run(t, 4, 50*time.Millisecond)
		final := b.waitJob(t, "c1", job.ID, 60*time.Second)
		stop()
		require.Equal(t, domain.JobSucceeded, final.Status, "%s%s", final.StatusMessage, b.failures(t, final.ID))
		require.Equal(t, final.TaskTotal, final.TaskDone)
		_, c, err := b.eng.loadCluster(b.ctx, tenant, "c1")
		require.NoError(t, err)
		require.Equal(t, domain.ClusterActive, c.Status)
		require.Equal(t, 40, c.NodeCount)
		nodes, err := b.eng.Nodes(b.ctx, tenant, "c1")
		require.NoError(t, err)
		require.Equal(t, map[domain.NodeStatus]int{domain.NodeActive: 40}, SummarizeNodes(nodes).Status, "the job's end marked the replanned nodes")
		checkInvariants(t, b)
	})
}

// TestJanitorPlansASubmissionWhoseRequestDied: the process that answered
// dies before its background writer gets anywhere (its store refuses every
// write after step 1); the janitor plans, writes and starts the job.
func TestJanitorPlansASubmissionWhoseRequestDied(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, Config{})
	sub, replanner := planLater(t, "c1", 30)
	b.eng.SetReplanner(replanner)
	dying := &failingBatches{Store: b.db}
	dying.left.Store(1) // step 1 passes; the background writer fails
	submitter := New(dying, b.q, b.rec, b.eng.cfg)
	submitter.SetReplanner(replanner)
	job, err := submitter.Submit(b.ctx, sub)
	require.NoError(t, err)
	require.Equal(t, domain.JobPending, job.Status)
	require.Eventually(t, func() bool { return dying.left.Load() < 0 }, 10*time.Second, 5*time.Millisecond, "the background writer tried and failed")
	lj, err := b.eng.loadJob(b.ctx, tenant, "c1", job.ID)
	require.NoError(t, err)
	require.Equal(t, domain.JobPending, lj.job.Status)

	r, err := b.eng.RunJanitor(b.ctx)
	require.NoError(t, err)
	require.Zero(t, r.Undone)
	stop := b.run(t, 4, 50*time.Millisecond)
	final := b.waitJob(t, "c1", job.ID, 60*time.Second)
	stop()
	require.Equal(t, domain.JobSucceeded, final.Status, "%s%s", final.StatusMessage, b.failures(t, final.ID))
	checkInvariants(t, b)
}

// TestReplanGivingAnotherLayoutWritesNothing: a replanner that comes back
// with another node count than the request planned (the quota and the
// answer counted those) writes no node and no task.
func TestReplanGivingAnotherLayoutWritesNothing(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, Config{})
	sub, _ := planLater(t, "c1", 10)
	b.eng.SetReplanner(func(context.Context, string, domain.Job, []byte) (Submission, error) {
		return createSubmission(t, "c1", 11, nil), nil
	})
	job, err := b.eng.Submit(b.ctx, sub)
	require.NoError(t, err)
	err = b.eng.ContinueSubmission(b.ctx, tenant, "c1", job.ID)
	require.ErrorContains(t, err, "gave 11 new nodes where the request planned 10")
	nodes, err := b.eng.Nodes(b.ctx, tenant, "c1")
	require.NoError(t, err)
	require.Empty(t, nodes)
	lj, err := b.eng.loadJob(b.ctx, tenant, "c1", job.ID)
	require.NoError(t, err)
	require.Equal(t, domain.JobPending, lj.job.Status)
}
