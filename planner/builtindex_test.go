package planner

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/domain"
)

// TestBuiltIndexOnlyServesTheUntouchedPlan checks that the index Build keeps
// with a plan (Plan.built) is used only while the tasks are still the ones it
// was built with: after any edit, Stages, CriticalPath and NewPreview answer
// exactly as they do for the same tasks read back from JSON, which carry no
// index.
func TestBuiltIndexOnlyServesTheUntouchedPlan(t *testing.T) {
	t.Parallel()
	req := Request{Operation: domain.OpCreate, New: webNodes(3), Services: webServices(), ConfigReferences: webReferences()}
	index := func(p *Plan, id string) int {
		i := slices.IndexFunc(p.Tasks, func(t Task) bool { return t.ID == id })
		require.GreaterOrEqual(t, i, 0, "no task %s", id)
		return i
	}
	cases := []struct {
		name   string
		mutate func(p *Plan)
	}{
		{"untouched", func(*Plan) {}},
		{"dependency dropped", func(p *Plan) {
			task := &p.Tasks[index(p, "lb-1000/haproxy/start")]
			task.DependsOn = slices.DeleteFunc(slices.Clone(task.DependsOn), func(d string) bool { return d == "web-1003/nginx/start" })
		}},
		{"dependency renamed in place", func(p *Plan) {
			task := &p.Tasks[index(p, "web-1003/nginx/start")]
			task.DependsOn[0] = p.Tasks[0].ID
		}},
		{"dependency on a later task", func(p *Plan) {
			task := &p.Tasks[index(p, "web-1003/nginx/install")]
			task.DependsOn = append(slices.Clone(task.DependsOn), "web-1003/nginx/start")
		}},
		{"dependency on a missing task", func(p *Plan) {
			task := &p.Tasks[index(p, "web-1003/nginx/start")]
			task.DependsOn = append(slices.Clone(task.DependsOn), "web-9999/nginx/start")
		}},
		{"task renamed", func(p *Plan) { p.Tasks[1].ID = "renamed" }},
		{"task listed twice", func(p *Plan) { p.Tasks[2].ID = p.Tasks[1].ID }},
		{"task removed", func(p *Plan) {
			id := "db-1001/mysql/initialize"
			p.Tasks = slices.DeleteFunc(slices.Clone(p.Tasks), func(t Task) bool { return t.ID == id })
			for i := range p.Tasks {
				deps := slices.DeleteFunc(slices.Clone(p.Tasks[i].DependsOn), func(d string) bool { return d == id })
				if len(deps) == 0 {
					deps = nil // as JSON reads it back
				}
				p.Tasks[i].DependsOn = deps
			}
		}},
		{"tasks reversed", func(p *Plan) { slices.Reverse(p.Tasks) }},
		{"node moved", func(p *Plan) { p.Tasks[index(p, "web-1003/nginx/start")].NodeID = "web-1002" }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			plan, err := Build(req)
			require.NoError(t, err)
			require.NotNil(t, plan.built, "Build keeps the index it made")
			edited := *plan // a copy carries the index along, as callers' copies do
			edited.Tasks = slices.Clone(plan.Tasks)
			tc.mutate(&edited)

			data, err := json.Marshal(&edited)
			require.NoError(t, err)
			var read Plan
			require.NoError(t, json.Unmarshal(data, &read))
			require.Nil(t, read.built)

			wantStages, wantErr := read.Stages()
			gotStages, gotErr := edited.Stages()
			require.Equal(t, wantErr, gotErr)
			require.Equal(t, wantStages, gotStages)
			wantPath, wantErr := read.CriticalPath(estimates)
			gotPath, gotErr := edited.CriticalPath(estimates)
			require.Equal(t, wantErr, gotErr)
			require.Equal(t, wantPath, gotPath)
			wantPreview, wantErr := NewPreview(&read, estimates)
			gotPreview, gotErr := NewPreview(&edited, estimates)
			require.Equal(t, wantErr, gotErr)
			require.Equal(t, wantPreview, gotPreview)
		})
	}
}
