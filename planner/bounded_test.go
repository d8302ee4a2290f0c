package planner

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestBoundedPreviewCutsListsAndCountsWhatItCut(t *testing.T) {
	t.Parallel()
	pv := &Preview{Summary: Summary{WorkTasks: 300}, Stages: []Stage{make(Stage, 250), make(Stage, 50)}, StageSizes: []int{250, 50},
		Rollback: &Preview{Tasks: make([]Task, 120)}}
	for i := range 300 {
		pv.Tasks = append(pv.Tasks, Task{ID: fmt.Sprint(i)})
	}
	for i := range 150 {
		pv.Diff.AddedNodes = append(pv.Diff.AddedNodes, NodeSummary{ID: fmt.Sprint(i)})
	}
	got := pv.Bounded(100)
	require.Len(t, got.Tasks, 100)
	require.Len(t, got.Diff.AddedNodes, 100)
	require.Len(t, got.Stages[0], 50)
	require.Len(t, got.Stages[1], 50)
	require.Equal(t, &Omitted{Tasks: 200, AddedNodes: 50, StageTasks: 200}, got.Omitted)
	require.Equal(t, []int{250, 50}, got.StageSizes, "the stage sizes stay whole")
	require.Equal(t, 300, got.Summary.WorkTasks)
	require.Equal(t, &Omitted{Tasks: 20}, got.Rollback.Omitted)
	require.Len(t, pv.Tasks, 300, "the preview itself is unchanged")

	small := &Preview{Tasks: make([]Task, 3)}
	require.Nil(t, small.Bounded(100).Omitted)
}
