package cluster

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/planner"
)

// A job's graph weighs a task that ran by what it took (a running one by
// what it has taken so far) and one that has not by the estimate, so the
// critical path follows what happened; the rollback plan is a graph apart.
func TestJobGraphWeighsWhatTasksTook(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ran := func(from, to time.Duration) []domain.TaskAttempt {
		a := domain.TaskAttempt{Attempt: 1, StartedAt: t0.Add(from)}
		if to > 0 {
			a.EndedAt = t0.Add(to)
		}
		return []domain.TaskAttempt{a}
	}
	tasks := []domain.Task{
		// Stored by id, not in plan order.
		{ID: "n1/kv/install", NodeID: "n1", Service: "kv", Action: domain.ActionInstall, Status: domain.TaskSucceeded,
			DependsOn: []string{"n1/create"}, Attempts: ran(time.Second, 31*time.Second)},
		{ID: "n1/create", NodeID: "n1", Action: domain.ActionCreate, Status: domain.TaskSucceeded, Attempts: ran(0, time.Second)},
		{ID: "n2/create", NodeID: "n2", Action: domain.ActionCreate, Status: domain.TaskSucceeded, Attempts: ran(0, time.Second)},
		{ID: "n2/web/install", NodeID: "n2", Service: "web", Action: domain.ActionInstall, Status: domain.TaskRunning,
			DependsOn: []string{"n2/create"}, Attempts: ran(time.Second, 0)},
		{ID: "n2/web/start", NodeID: "n2", Service: "web", Action: domain.ActionStart, Status: domain.TaskBlocked,
			DependsOn: []string{"n1/kv/install", "n2/web/install"}},
		{ID: "rollback:n1/delete", NodeID: "n1", Action: domain.ActionDelete, Status: domain.TaskBlocked, Rollback: true},
		{ID: "rollback:n2/delete", NodeID: "n2", Action: domain.ActionDelete, Status: domain.TaskBlocked, Rollback: true},
	}
	est := planner.ActionEstimates(nil, 5*time.Second)

	// 11 s in, web's install has run 10 s, less than kv's 30: kv's chain.
	g, err := jobGraph(tasks, false, t0.Add(11*time.Second), est)
	require.NoError(t, err)
	require.Equal(t, []string{"n1/create", "n1/kv/install", "n2/web/start"}, g.Path.Tasks)
	require.Equal(t, domain.Duration(36*time.Second), g.Path.Length, "1 s + 30 s + the start's 5 s estimate")
	// 60 s in, web's install has run 59 s: its chain is the longer now.
	g, err = jobGraph(tasks, false, t0.Add(60*time.Second), est)
	require.NoError(t, err)
	require.Equal(t, []string{"n2/create", "n2/web/install", "n2/web/start"}, g.Path.Tasks)
	require.Len(t, g.Groups, 4)
	require.Equal(t, map[domain.TaskStatus]int{domain.TaskSucceeded: 2}, g.Groups[0].Status)

	g, err = jobGraph(tasks, true, t0, est)
	require.NoError(t, err)
	require.Len(t, g.Groups, 1)
	require.Equal(t, 2, g.Groups[0].Tasks)
	require.Equal(t, map[domain.TaskStatus]int{domain.TaskBlocked: 2}, g.Groups[0].Status)
	require.Empty(t, g.Edges)
}
