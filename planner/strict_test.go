package planner

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/domain"
)

func TestStrictStagesPutsABarrierBetweenStages(t *testing.T) {
	t.Parallel()
	plan, err := Build(Request{Operation: domain.OpCreate, New: hadoopNodes(200), Services: hadoopServices(), ConfigReferences: hadoopReferences()})
	require.NoError(t, err)
	stages, err := plan.Stages()
	require.NoError(t, err)
	limits := Limits{MaxDependsOn: 8, MaxDependents: 8}
	strict, err := plan.StrictStages(limits)
	require.NoError(t, err)

	// The same work, the same stage view.
	work := func(p *Plan) []string {
		var ids []string
		for _, t := range p.Tasks {
			if !t.IsJoin() {
				ids = append(ids, t.ID)
			}
		}
		return ids
	}
	require.ElementsMatch(t, work(plan), work(strict))
	strictStages, err := strict.Stages()
	require.NoError(t, err)
	require.Equal(t, stages, strictStages)

	// Bounded fan-in and fan-out.
	for id, deps := range strict.Dependents() {
		require.LessOrEqual(t, len(deps), limits.MaxDependents, "dependents of %s", id)
	}
	for _, task := range strict.Tasks {
		require.LessOrEqual(t, len(task.DependsOn), limits.MaxDependsOn, "dependencies of %s", task.ID)
	}

	// Every task of stage i+1 waits, through joins, on every task of stage i.
	index := map[string]Task{}
	for _, task := range strict.Tasks {
		index[task.ID] = task
	}
	var ancestors func(id string, seen map[string]bool)
	ancestors = func(id string, seen map[string]bool) {
		for _, d := range index[id].DependsOn {
			if !seen[d] {
				seen[d] = true
				ancestors(d, seen)
			}
		}
	}
	for i := 1; i < len(stages); i++ {
		for _, id := range stages[i] {
			seen := map[string]bool{}
			ancestors(id, seen)
			for _, before := range stages[i-1] {
				require.True(t, seen[before], "%s (stage %d) does not wait for %s (stage %d)", id, i, before, i-1)
			}
		}
	}
}
