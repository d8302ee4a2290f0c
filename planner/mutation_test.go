package planner

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/domain"
)

// recorder is a testing.TB whose failures are caught, so a test can check
// that checkPlan rejects a broken plan.
type recorder struct {
	testing.TB
	failed bool
	msg    string
}

type stopCheck struct{}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.failed = true
	r.msg = fmt.Sprintf(format, args...)
}
func (r *recorder) FailNow() { panic(stopCheck{}) }

func rejects(t *testing.T, req Request, plan *Plan) (bool, string) {
	r := &recorder{TB: t}
	func() {
		defer func() {
			if v := recover(); v != nil {
				if _, ok := v.(stopCheck); !ok {
					panic(v)
				}
			}
		}()
		checkPlan(r, req, plan)
	}()
	return r.failed, r.msg
}

// TestCheckerRejectsBrokenPlans makes sure the property checks can fail: each
// mutation breaks a rule, and checkPlan must notice.
func TestCheckerRejectsBrokenPlans(t *testing.T) {
	t.Parallel()
	req := Request{Operation: domain.OpCreate, New: webNodes(3), Services: webServices(), ConfigReferences: webReferences()}
	find := func(p *Plan, id string) *Task {
		for i := range p.Tasks {
			if p.Tasks[i].ID == id {
				return &p.Tasks[i]
			}
		}
		t.Fatalf("no task %s", id)
		return nil
	}
	cases := []struct {
		name   string
		mutate func(p *Plan)
	}{
		{"cross-node dependency dropped", func(p *Plan) {
			task := find(p, "lb-1000/haproxy/start")
			task.DependsOn = slices.DeleteFunc(task.DependsOn, func(d string) bool { return d == "web-1003/nginx/start" })
		}},
		{"chain link dropped", func(p *Plan) {
			task := find(p, "web-1002/nginx/configure")
			task.DependsOn = slices.DeleteFunc(task.DependsOn, func(d string) bool { return d == "web-1002/base/configure" })
		}},
		{"edge no rule asks for", func(p *Plan) {
			task := find(p, "web-1003/nginx/start")
			task.DependsOn = append(task.DependsOn, "web-1002/nginx/install")
		}},
		{"task missing", func(p *Plan) {
			p.Tasks = slices.DeleteFunc(p.Tasks, func(t Task) bool { return t.ID == "db-1001/mysql/initialize" })
			for i := range p.Tasks {
				p.Tasks[i].DependsOn = slices.DeleteFunc(p.Tasks[i].DependsOn, func(d string) bool { return d == "db-1001/mysql/initialize" })
			}
		}},
		{"out of order", func(p *Plan) { p.Tasks[0], p.Tasks[len(p.Tasks)-1] = p.Tasks[len(p.Tasks)-1], p.Tasks[0] }},
		{"rollback missing", func(p *Plan) { p.Rollback = nil }},
		{"rollback forgets a node", func(p *Plan) {
			p.Rollback.Tasks = slices.DeleteFunc(p.Rollback.Tasks, func(t Task) bool { return t.NodeID == "web-1004" })
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			plan, err := Build(req)
			require.NoError(t, err)
			ok, msg := rejects(t, req, plan)
			require.False(t, ok, "the intact plan must pass: %s", msg)
			tc.mutate(plan)
			ok, _ = rejects(t, req, plan)
			require.True(t, ok, "checkPlan accepted a broken plan")
		})
	}
}
