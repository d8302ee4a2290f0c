package cluster

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/domain"
)

func TestTaskViewOrderPutsFailedAndRunningFirst(t *testing.T) {
	t.Parallel()
	tasks := []domain.Task{
		{ID: "a", Status: domain.TaskSucceeded},
		{ID: "b", Status: domain.TaskBlocked},
		{ID: "c", Status: domain.TaskRunning},
		{ID: "d", Status: domain.TaskFailed, Rollback: true},
		{ID: "e", Status: domain.TaskFailed},
		{ID: "f", Status: domain.TaskReady},
		{ID: "g", Status: domain.TaskCanceled},
	}
	sortForView(tasks)
	var ids []string
	for _, tk := range tasks {
		ids = append(ids, tk.ID)
	}
	require.Equal(t, []string{"e", "d", "c", "a", "b", "f", "g"}, ids)
}

func TestListedTasksLeaveOutOutputAndDependencies(t *testing.T) {
	t.Parallel()
	full := domain.Task{ID: "n/join", DependsOn: []string{"x", "y"}, Dependents: []string{"z"},
		Attempts: []domain.TaskAttempt{{Attempt: 1, Error: "exit 2", Stdout: "out", Stderr: "err"}}}
	got := listed(full)
	require.Empty(t, got.DependsOn)
	require.Empty(t, got.Dependents)
	require.Equal(t, "exit 2", got.Attempts[0].Error)
	require.Empty(t, got.Attempts[0].Stdout+got.Attempts[0].Stderr)
	require.Equal(t, "out", full.Attempts[0].Stdout, "the task itself keeps its output")
}

func TestViewSummarizesNodes(t *testing.T) {
	t.Parallel()
	var live []domain.Node
	for i := range 250 {
		svc := []string{"web"}
		if i == 0 {
			svc = []string{"lb"}
		}
		status := domain.NodeActive
		if i%50 == 1 {
			status = domain.NodeFailed
		}
		live = append(live, domain.Node{ID: "n", Num: 1000 + i, Status: status, NodeLayout: domain.NodeLayout{HardwareType: "s", ImageType: "d", Services: svc}})
	}
	var v View
	v.summarize(live)
	require.Len(t, v.Nodes, FirstNodes)
	require.Equal(t, 150, v.NodesOmitted)
	require.Equal(t, map[domain.NodeStatus]int{domain.NodeActive: 245, domain.NodeFailed: 5}, v.NodeStatus)
	require.Equal(t, []LayoutGroup{
		{NodeLayout: domain.NodeLayout{HardwareType: "s", ImageType: "d", Services: []string{"lb"}}, Count: 1},
		{NodeLayout: domain.NodeLayout{HardwareType: "s", ImageType: "d", Services: []string{"web"}}, Count: 249},
	}, v.Layout)
}
