package planner

import (
	"slices"

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

	// built is the index Build made with the tasks, so that a preview of a
	// plan just built does not rebuild it from the IDs (at 10,000 nodes a
	// map of 55,000 of them was most of a dry run's time). It is used only
	// while Tasks are still exactly what Build made (builtIndex.matches);
	// JSON leaves it out.
	built *builtIndex
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
// plans (which may have come back from JSON, so nothing internal is kept
// unless builtIndex vouches for it). Both directions are flat arrays with
// offsets (CSR): a handful of allocations whatever the plan's size.
type indexed struct {
	depStart, deps             []int32
	dependentStart, dependents []int32
}

// depsOf lists task i's dependencies, by position, in plan order.
func (ix *indexed) depsOf(i int) []int32 { return ix.deps[ix.depStart[i]:ix.depStart[i+1]] }

// dependentsOf lists the tasks that depend on task i, in plan order.
func (ix *indexed) dependentsOf(i int32) []int32 {
	return ix.dependents[ix.dependentStart[i]:ix.dependentStart[i+1]]
}

// builtIndex is what graph.finish knows about the plan it makes: every ID,
// back to back in one string, and each task's dependencies by position.
type builtIndex struct {
	ids      string
	end      []int32 // task i's ID ends at ids[end[i]]
	depStart []int32
	deps     []int32
}

// matches reports whether tasks are still the ones b was built with: the
// same IDs in the same order, each with the same dependencies. Strings cut
// from the same memory compare by pointer first, so on an unchanged plan
// this costs one comparison per task and edge, no hashing.
func (b *builtIndex) matches(tasks []Task) bool {
	if b == nil || len(b.end) != len(tasks) {
		return false
	}
	start := int32(0)
	for i := range tasks {
		t := &tasks[i]
		if t.ID != b.ids[start:b.end[i]] {
			return false
		}
		start = b.end[i]
		deps := b.deps[b.depStart[i]:b.depStart[i+1]]
		if len(deps) != len(t.DependsOn) {
			return false
		}
		for k, d := range deps {
			if t.DependsOn[k] != tasks[d].ID {
				return false
			}
		}
	}
	return true
}

func (p *Plan) index() (indexed, error) {
	if p.built.matches(p.Tasks) {
		return withDependents(p.built.depStart, p.built.deps), nil
	}
	pos := make(map[string]int32, len(p.Tasks))
	edges := 0
	for i, t := range p.Tasks {
		if _, dup := pos[t.ID]; dup {
			return indexed{}, &PlanError{Task: t.ID, Reason: "is listed twice"}
		}
		pos[t.ID] = int32(i)
		edges += len(t.DependsOn)
	}
	depStart := make([]int32, len(p.Tasks)+1)
	deps := make([]int32, 0, edges)
	for i, t := range p.Tasks {
		for _, d := range t.DependsOn {
			j, ok := pos[d]
			if !ok {
				return indexed{}, &PlanError{Task: t.ID, Reason: "depends on " + d + ", which is not in the plan"}
			}
			if j >= int32(i) {
				return indexed{}, &PlanError{Task: t.ID, Reason: "depends on " + d + ", which does not come before it"}
			}
			deps = append(deps, j)
		}
		depStart[i+1] = int32(len(deps))
	}
	return withDependents(depStart, deps), nil
}

// withDependents completes an index from its dependencies: each task's
// dependents in plan order.
func withDependents(depStart, deps []int32) indexed {
	n := len(depStart) - 1
	ix := indexed{depStart: depStart, deps: deps, dependentStart: make([]int32, n+1), dependents: make([]int32, len(deps))}
	for _, d := range deps {
		ix.dependentStart[d+1]++
	}
	for i := 1; i <= n; i++ {
		ix.dependentStart[i] += ix.dependentStart[i-1]
	}
	fill := slices.Clone(ix.dependentStart[:n])
	for i := 0; i < n; i++ {
		for _, d := range deps[depStart[i]:depStart[i+1]] {
			ix.dependents[fill[d]] = int32(i)
			fill[d]++
		}
	}
	return ix
}

// PlanError reports a plan that is not in topological order or names a
// dependency it does not contain (only possible for a plan built or edited
// outside this package).
type PlanError struct {
	Task   string
	Reason string
}

func (e *PlanError) Error() string { return "planner: task " + e.Task + " " + e.Reason }
