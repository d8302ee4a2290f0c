package engine

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/events"
)

func clusterEvents(t *testing.T, b *testBundle, cluster string) []string {
	t.Helper()
	list, next, err := events.New(b.db).List(b.ctx, tenant, cluster, "", 1000, "")
	require.NoError(t, err)
	require.Empty(t, next)
	out := make([]string, len(list))
	for i, ev := range list {
		out[i] = string(ev.Type) + " " + ev.Previous + ">" + ev.Status
	}
	return out
}

// Every job and cluster status change has its event, in order, and a
// change that did not happen (a refused pause, a lost race) has none.
func TestEventsRecordEveryChangeOnceAndNoRefusedOne(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, Config{})
	job, err := b.eng.Submit(b.ctx, createSubmission(t, "c1", 3, nil))
	require.NoError(t, err)
	require.NoError(t, b.eng.Pause(b.ctx, tenant, "c1", job.ID))
	require.ErrorIs(t, b.eng.Pause(b.ctx, tenant, "c1", job.ID), ErrJobState, "a paused job cannot be paused again")
	require.NoError(t, b.eng.Resume(b.ctx, tenant, "c1", job.ID))
	stop := b.run(t, 4, 50*time.Millisecond)
	defer stop()
	final := b.waitJob(t, "c1", job.ID, time.Minute)
	require.Equal(t, domain.JobSucceeded, final.Status)
	require.Equal(t, []string{
		"job.status >PENDING", "cluster.status >PENDING", "job.status PENDING>RUNNING",
		"job.status RUNNING>PAUSED", "job.status PAUSED>RUNNING",
		"job.status RUNNING>SUCCEEDED", "cluster.status PENDING>ACTIVE",
	}, clusterEvents(t, b, "c1"))
}

// A job that fails carries FAILING and the rollback in its events.
func TestEventsFollowAFailureAndItsRollback(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, Config{})
	job, err := b.eng.Submit(b.ctx, createSubmission(t, "c1", 4, failAppStart(alwaysFails)))
	require.NoError(t, err)
	stop := b.run(t, 4, 50*time.Millisecond)
	defer stop()
	final := b.waitJobQuietly(t, "c1", job.ID, time.Minute)
	require.Equal(t, domain.JobFailed, final.Status)
	got := clusterEvents(t, b, "c1")
	require.Equal(t, []string{
		"job.status >PENDING", "cluster.status >PENDING", "job.status PENDING>RUNNING",
		"job.status RUNNING>FAILING", "job.status FAILING>ROLLING_BACK",
		"job.status ROLLING_BACK>FAILED", "cluster.status PENDING>TERMINATED",
	}, got)
}
