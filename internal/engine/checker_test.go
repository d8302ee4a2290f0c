package engine

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/store"
)

// checkInvariants verifies, after a run, what the engine promises whatever
// happened during it: every job ended; no cluster is locked by a job that
// ended; the tenant's quota counters equal what its clusters hold; no task
// ran before all of its dependencies had succeeded; no attempt ran twice;
// every task of a succeeded job succeeded; no ended job still holds a
// reservation.
func checkInvariants(t *testing.T, b *testBundle) {
	t.Helper()
	ctx := b.ctx
	clusters, err := b.db.Query(ctx, store.TenantPK(tenant, "CLUSTERS"), store.Query{Limit: store.MaxPageSize})
	require.NoError(t, err)
	usedClusters, usedNodes := 0, 0
	succeededAt := map[string]int64{} // job/task -> end seq of its successful run
	for _, r := range b.rec.runs {
		if r.ok {
			succeededAt[r.job+"/"+r.task] = r.end
		}
	}
	attempts := map[string]int{}
	for _, r := range b.rec.runs {
		if r.poll {
			continue // a parked attempt's poll: the same run, looked at again
		}
		key := fmt.Sprintf("%s/%s#%d", r.job, r.task, r.attempt)
		attempts[key]++
		require.Equal(t, 1, attempts[key], "attempt %s ran more than once", key)
	}
	for _, cit := range clusters.Items {
		var c domain.Cluster
		require.NoError(t, decodeInto(cit, &c))
		if c.Status != domain.ClusterTerminated {
			usedClusters++
			usedNodes += c.NodeCount
			// The figure the quota counts is the nodes that exist: a node
			// left in the layout uncounted would be given back twice.
			nodes, err := b.eng.Nodes(ctx, tenant, c.ID)
			require.NoError(t, err)
			live := 0
			for _, n := range nodes {
				if n.Status != domain.NodeDeleted {
					live++
				}
			}
			require.Equal(t, c.NodeCount, live, "cluster %s counts %d nodes and has %d", c.ID, c.NodeCount, live)
			// Its name is reserved for it, and only for it.
			it, err := b.db.Get(ctx, nameKey(tenant, c.Name))
			require.NoError(t, err, "cluster %s holds no reservation of its name %s", c.ID, c.Name)
			require.Equal(t, c.ID, it.Status, "the name %s is reserved for another cluster", c.Name)
		} else if it, err := b.db.Get(ctx, nameKey(tenant, c.Name)); err == nil {
			require.NotEqual(t, c.ID, it.Status, "TERMINATED cluster %s still holds its name %s", c.ID, c.Name)
		}
		require.Empty(t, c.ActiveJobID, "cluster %s still locked", c.ID)
		requireSummaryIsARecount(t, b, c.ID)
		jobs, err := b.db.Query(ctx, store.TenantPK(tenant, "JOBS#"+c.ID), store.Query{Limit: store.MaxPageSize})
		require.NoError(t, err)
		for _, jit := range jobs.Items {
			require.True(t, domain.JobStatus(jit.Status).Terminal(), "job %s is %s", jit.SK, jit.Status)
			// An ended job holds nothing: its end gave its holds back
			// (invariant 14), and no cluster is locked, so no later job
			// took the same ones again.
			var jr jobRecord
			require.NoError(t, decodeInto(jit, &jr))
			for _, k := range jr.Holds {
				_, err := b.db.Get(ctx, k)
				require.ErrorIs(t, err, store.ErrNotFound, "job %s ended still holding %s", jit.SK, k)
			}
			require.Nil(t, jit.Index, "an ended job leaves the janitor's index")
			tasks := map[string]domain.Task{}
			require.NoError(t, b.eng.eachTask(ctx, tenant, jit.SK, func(_ store.Item, task domain.Task) (bool, error) {
				tasks[task.ID] = task
				return true, nil
			}))
			for _, task := range tasks {
				if jit.Status == string(domain.JobSucceeded) && !task.Rollback {
					require.Equal(t, domain.TaskSucceeded, task.Status, "task %s of a succeeded job", task.ID)
				}
				require.NotEqual(t, domain.TaskRunning, task.Status, "task %s still running", task.ID)
			}
			for _, r := range b.rec.runs {
				if r.job != jit.SK {
					continue
				}
				for _, dep := range tasks[r.task].DependsOn {
					if tasks[dep].Join {
						continue // joins run no executor; their own deps are checked through them below
					}
					end, ok := succeededAt[r.job+"/"+dep]
					require.True(t, ok, "%s ran but its dependency %s never succeeded", r.task, dep)
					require.Less(t, end, r.start, "%s started before its dependency %s ended", r.task, dep)
				}
			}
			// One node runs one task at a time (its queue group, and the
			// continuations a worker runs while holding the group).
			var onNode []execution
			for _, r := range b.rec.runs {
				if r.job == jit.SK && tasks[r.task].NodeID != "" {
					onNode = append(onNode, r)
				}
			}
			for i, r := range onNode {
				for _, o := range onNode[i+1:] {
					if tasks[r.task].NodeID == tasks[o.task].NodeID {
						require.True(t, r.end < o.start || o.end < r.start, "%s and %s ran at once on node %s", r.task, o.task, tasks[r.task].NodeID)
					}
				}
			}
			for _, task := range tasks {
				if task.Join && task.Status == domain.TaskSucceeded {
					for _, dep := range task.DependsOn {
						require.Equal(t, domain.TaskSucceeded, tasks[dep].Status, "join %s succeeded before %s", task.ID, dep)
					}
				}
			}
		}
	}
	ten, err := b.acc.GetTenant(ctx, tenant)
	require.NoError(t, err)
	require.Equal(t, domain.TenantUsage{Clusters: usedClusters, Nodes: usedNodes}, ten.Usage, "quota counters equal what exists")
}
