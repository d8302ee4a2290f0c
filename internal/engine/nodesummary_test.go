package engine

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/domain"
)

// requireSummaryIsARecount checks that the node summary of cluster, when a
// reader would trust it, equals a count of the nodes as they are; it
// returns whether it was trusted.
func requireSummaryIsARecount(t *testing.T, b *testBundle, cluster string) bool {
	t.Helper()
	_, c, err := b.eng.loadCluster(b.ctx, tenant, cluster)
	require.NoError(t, err)
	if c.LatestJobID == "" {
		return false
	}
	job, err := b.eng.Job(b.ctx, tenant, cluster, c.LatestJobID)
	require.NoError(t, err)
	sum, ok, err := b.eng.NodeSummaryFor(b.ctx, tenant, cluster, job)
	require.NoError(t, err)
	if !ok {
		return false
	}
	recount, err := b.eng.countNodes(b.ctx, tenant, cluster)
	require.NoError(t, err)
	recount.Job, recount.Phase = sum.Job, sum.Phase
	require.Equal(t, recount, sum, "the node summary of %s, as of job %s %s, is a recount", cluster, sum.Job, sum.Phase)
	return true
}

// TestNodeSummaryHoldsAtEachEdge: the summary a job's start writes counts
// the planned nodes, the one its end writes the active ones, and both equal
// a recount, on every backend.
func TestNodeSummaryHoldsAtEachEdge(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T) {
		b := setup(t, nil, Config{})
		job, err := b.eng.Submit(b.ctx, createSubmission(t, "c1", 6, nil))
		require.NoError(t, err)
		require.True(t, requireSummaryIsARecount(t, b, "c1"), "the start wrote a summary for the running job")
		sum, _, err := b.eng.NodeSummaryFor(b.ctx, tenant, "c1", job)
		require.NoError(t, err)
		require.Equal(t, map[domain.NodeStatus]int{domain.NodePlanned: 6}, sum.Status)
		require.Len(t, sum.First, 6)

		stop := b.run(t, 4, 50*time.Millisecond)
		final := b.waitJob(t, "c1", job.ID, 30*time.Second)
		stop()
		require.Equal(t, domain.JobSucceeded, final.Status, "%s%s", final.StatusMessage, b.failures(t, final.ID))
		require.True(t, requireSummaryIsARecount(t, b, "c1"), "the end wrote a summary for the ended job")
		sum, ok, err := b.eng.NodeSummaryFor(b.ctx, tenant, "c1", final.Job)
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, SummaryEnded, sum.Phase)
		require.Equal(t, map[domain.NodeStatus]int{domain.NodeActive: 6}, sum.Status)
		checkInvariants(t, b)
	})
}

// TestNodeSummaryAfterAFinisherDiesMidway kills a job's end after it wrote
// the nodes' new statuses and before the job became terminal: no summary
// is trusted meanwhile (readers recount), and the end done again (as the
// janitor would) writes one equal to a recount.
func TestNodeSummaryAfterAFinisherDiesMidway(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T) {
		b := setup(t, nil, Config{})
		job, err := b.eng.Submit(b.ctx, createSubmission(t, "c1", 6, nil))
		require.NoError(t, err)
		require.True(t, requireSummaryIsARecount(t, b, "c1"))

		dying := &failingBatches{Store: b.db}
		dying.left.Store(2) // the summary's retirement and the node writes pass; the job's end does not
		finisher := New(dying, b.q, b.rec, b.eng.cfg)
		err = finisher.finish(b.ctx, tenant, "c1", job.ID, domain.JobRunning, endSucceeded, "")
		require.Error(t, err, "the finisher died before the job's end")
		nodes, err := b.eng.Nodes(b.ctx, tenant, "c1")
		require.NoError(t, err)
		require.Equal(t, map[domain.NodeStatus]int{domain.NodeActive: 6}, SummarizeNodes(nodes).Status, "the node writes landed")
		lj, err := b.eng.loadJob(b.ctx, tenant, "c1", job.ID)
		require.NoError(t, err)
		require.Equal(t, domain.JobRunning, lj.job.Status)
		require.False(t, requireSummaryIsARecount(t, b, "c1"), "no summary is trusted while the end is half done")

		require.NoError(t, b.eng.finish(b.ctx, tenant, "c1", job.ID, domain.JobRunning, endSucceeded, ""))
		require.True(t, requireSummaryIsARecount(t, b, "c1"), "the end done again writes the summary")
	})
}
