package engine

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/domain"
)

// TestJobListsApart runs jobs whose node lists and rollback roots live in
// list items (as a 10,000-node create's must: they would make the job item
// larger than DynamoDB's 400 KB): the job's end still marks its nodes, and
// a failed create still rolls back from its roots.
func TestJobListsApart(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T) {
		b := setup(t, nil, Config{})
		b.eng.inlineLists = 0
		ok, err := b.eng.Submit(b.ctx, createSubmission(t, "c1", 4, nil))
		require.NoError(t, err)
		failing, err := b.eng.Submit(b.ctx, createSubmission(t, "c2", 4, failAppStart(alwaysFails)))
		require.NoError(t, err)
		lj, err := b.eng.loadJob(b.ctx, tenant, "c1", ok.ID)
		require.NoError(t, err)
		require.True(t, lj.job.ListsApart)
		require.Empty(t, lj.job.OnSuccess.Nodes, "the record keeps no list")
		require.Empty(t, lj.job.RollbackRoots)

		stop := b.run(t, 4, 50*time.Millisecond)
		done := b.waitJob(t, "c1", ok.ID, 30*time.Second)
		rolled := b.waitJob(t, "c2", failing.ID, 60*time.Second)
		stop()
		require.Equal(t, domain.JobSucceeded, done.Status, "%s%s", done.StatusMessage, b.failures(t, done.ID))
		nodes, err := b.eng.Nodes(b.ctx, tenant, "c1")
		require.NoError(t, err)
		for _, n := range nodes {
			require.Equal(t, domain.NodeActive, n.Status, n.ID)
		}
		require.Equal(t, domain.JobFailed, rolled.Status)
		require.Contains(t, rolled.StatusMessage, "rolled back")
		nodes, err = b.eng.Nodes(b.ctx, tenant, "c2")
		require.NoError(t, err)
		for _, n := range nodes {
			require.Equal(t, domain.NodeDeleted, n.Status, n.ID)
		}
		checkInvariants(t, b)
	})
}
