package planner

import (
	"github.com/heddle-io/heddle/internal/domain"
)

// ActionJoin is the action of a join task: it does no work and succeeds as
// soon as it is ready. It is not a domain action because no service or
// provider ever carries it out.
const ActionJoin domain.Action = "join"

// TaskKind tells work from joins.
type TaskKind string

const (
	// KindWork is an action on a node, carried out by a provider (node-level
	// actions) or an automator (service actions).
	KindWork TaskKind = "work"
	// KindJoin is a zero-work task that only gathers dependencies; see the
	// package documentation.
	KindJoin TaskKind = "join"
)

// Task is one step of a plan.
//
// IDs are derived from what the task does, so the same request always gives
// the same IDs: "<node>/<action>" for node-level actions,
// "<node>/<service>/<action>" for service actions, and "join:..." for joins
// (node IDs and service names cannot contain ':'); a rollback plan's IDs
// start with RollbackPrefix.
type Task struct {
	ID      string        `json:"id"`
	Kind    TaskKind      `json:"kind"`
	NodeID  string        `json:"nodeId,omitempty"`
	Service string        `json:"service,omitempty"`
	Action  domain.Action `json:"action"`
	// Timeout bounds one attempt; zero for joins.
	Timeout domain.Duration `json:"timeout,omitempty"`
	// MaxAttempts is the first attempt plus the retries the action allows.
	MaxAttempts int `json:"maxAttempts"`
	// DependsOn lists the tasks that must succeed before this one may start,
	// in plan order.
	DependsOn []string `json:"dependsOn,omitempty"`
}

// RollbackPrefix starts every task ID of a rollback plan, so that a job can
// keep its forward and rollback tasks side by side (':' appears in no node ID
// or service name, and forward IDs never start with it).
const RollbackPrefix = "rollback:"

// prefixIDs puts prefix in front of every task ID and dependency.
func (p *Plan) prefixIDs(prefix string) {
	for i := range p.Tasks {
		t := &p.Tasks[i]
		t.ID = prefix + t.ID
		for k := range t.DependsOn {
			t.DependsOn[k] = prefix + t.DependsOn[k]
		}
	}
}

// IsJoin reports whether t is a join.
func (t *Task) IsJoin() bool { return t.Kind == KindJoin }

// Plan is the planner's answer: tasks in a topological order (every task comes
// after all of its dependencies), the layout change they carry out, and, for
// create and expand, the plan that undoes them.
type Plan struct {
	Operation domain.Operation `json:"operation"`
	Diff      LayoutDiff       `json:"diff"`
	Tasks     []Task           `json:"tasks"`
	// Skipped lists the actions the operation would have run but that the
	// nodes' recorded run states make needless (a start of what already
	// runs, a stop of what does not), grouped by service, action and reason.
	Skipped []Skip `json:"skipped,omitempty"`
	// Rollback deletes what a create or expand creates, and reconfigures the
	// nodes the expand reconfigured back to the old layout. The engine persists
	// it with the job so a failure never needs planning to recover.
	Rollback *Plan `json:"rollback,omitempty"`
}

// Dependents maps each task ID to the tasks that depend on it, in plan order:
// what the engine counts down when a task completes.
func (p *Plan) Dependents() map[string][]string {
	out := make(map[string][]string, len(p.Tasks))
	for _, t := range p.Tasks {
		for _, d := range t.DependsOn {
			out[d] = append(out[d], t.ID)
		}
	}
	return out
}

// Counts returns the number of work tasks, joins and dependency edges.
func (p *Plan) Counts() (work, joins, edges int) {
	for i := range p.Tasks {
		if p.Tasks[i].IsJoin() {
			joins++
		} else {
			work++
		}
		edges += len(p.Tasks[i].DependsOn)
	}
	return work, joins, edges
}

// indexed is a plan's tasks as numbers, for the graph algorithms that work on
// plans (which may have come back from JSON, so nothing internal is kept).
type indexed struct {
	deps       [][]int32
	dependents [][]int32
}

func (p *Plan) index() (indexed, error) {
	pos := make(map[string]int32, len(p.Tasks))
	for i, t := range p.Tasks {
		if _, dup := pos[t.ID]; dup {
			return indexed{}, &PlanError{Task: t.ID, Reason: "is listed twice"}
		}
		pos[t.ID] = int32(i)
	}
	ix := indexed{deps: make([][]int32, len(p.Tasks)), dependents: make([][]int32, len(p.Tasks))}
	for i, t := range p.Tasks {
		for _, d := range t.DependsOn {
			j, ok := pos[d]
			if !ok {
				return indexed{}, &PlanError{Task: t.ID, Reason: "depends on " + d + ", which is not in the plan"}
			}
			if j >= int32(i) {
				return indexed{}, &PlanError{Task: t.ID, Reason: "depends on " + d + ", which does not come before it"}
			}
			ix.deps[i] = append(ix.deps[i], j)
			ix.dependents[j] = append(ix.dependents[j], int32(i))
		}
	}
	return ix, nil
}

// PlanError reports a plan that is not in topological order or names a
// dependency it does not contain (only possible for a plan built or edited
// outside this package).
type PlanError struct {
	Task   string
	Reason string
}

func (e *PlanError) Error() string { return "planner: task " + e.Task + " " + e.Reason }
