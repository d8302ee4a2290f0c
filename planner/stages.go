package planner

import (
	"slices"
	"time"

	"github.com/heddle-io/heddle/internal/domain"
)

// Stage is one step of the stage view: work tasks (IDs, in plan order) that
// Coopr would have run together, at most one per node.
type Stage []string

// Stages computes the stage view the way Coopr planned jobs: repeatedly take
// the tasks whose dependencies are all done (the sources), keep at most one
// task per node (the others wait for the next stage), and peel them off. Joins
// are not work and belong to no stage: one is passed through as soon as it
// becomes a source, so the tasks behind it can join the very next stage. heddle
// does not run stages; the view is for progress display and for comparing
// strict-stage execution (StageMakespan) with the critical path.
func (p *Plan) Stages() ([]Stage, error) {
	ix, err := p.index()
	if err != nil {
		return nil, err
	}
	return p.ids(p.stages(ix)), nil
}

// ids names the tasks of each stage.
func (p *Plan) ids(stages [][]int32) []Stage {
	out := make([]Stage, len(stages))
	for i, st := range stages {
		out[i] = make(Stage, len(st))
		for k, t := range st {
			out[i][k] = p.Tasks[t].ID
		}
	}
	return out
}

// stages is Stages on an index, each stage as task positions.
func (p *Plan) stages(ix indexed) [][]int32 {
	pending := make([]int, len(p.Tasks))
	var ready []int32
	for i := range p.Tasks {
		pending[i] = len(ix.depsOf(i))
		if pending[i] == 0 {
			ready = append(ready, int32(i))
		}
	}
	release := func(t int32, into []int32) []int32 {
		for _, u := range ix.dependentsOf(t) {
			pending[u]--
			if pending[u] == 0 {
				into = append(into, u)
			}
		}
		return into
	}
	// Nodes by number, and the stage that last took a task of each, so a
	// stage needs no set of its own (at 10,000 nodes, clearing and filling
	// a map per stage was most of this).
	nodeOf := make([]int32, len(p.Tasks))
	nodeNums := map[string]int32{}
	for i := range p.Tasks {
		id := p.Tasks[i].NodeID
		if id == "" {
			nodeOf[i] = -1
			continue
		}
		n, ok := nodeNums[id]
		if !ok {
			n = int32(len(nodeNums))
			nodeNums[id] = n
		}
		nodeOf[i] = n
	}
	busyIn := make([]int32, len(nodeNums)) // stage number + 1
	var stages [][]int32
	for len(ready) > 0 {
		// Pass joins through first: their dependents are sources now too.
		for k := 0; k < len(ready); k++ {
			if t := ready[k]; p.Tasks[t].IsJoin() {
				ready = release(t, ready)
			}
		}
		var next, taken []int32
		stage := int32(len(stages)) + 1
		slices.Sort(ready) // plan order, so a stage reads like the plan
		for _, t := range ready {
			n := nodeOf[t]
			switch {
			case p.Tasks[t].IsJoin():
			case n >= 0 && busyIn[n] == stage:
				next = append(next, t) // one task per node per stage
			default:
				if n >= 0 {
					busyIn[n] = stage
				}
				taken = append(taken, t)
			}
		}
		if len(taken) > 0 {
			stages = append(stages, slices.Clone(taken))
		}
		for _, t := range taken {
			next = release(t, next)
		}
		ready = next
	}
	return stages
}

// Estimator guesses how long a work task takes. Joins take no time whatever it
// says.
type Estimator func(t *Task) time.Duration

// ActionEstimates is an Estimator that looks the task's action up in a table,
// falling back to fallback for actions it does not list.
func ActionEstimates(byAction map[domain.Action]time.Duration, fallback time.Duration) Estimator {
	return func(t *Task) time.Duration {
		if d, ok := byAction[t.Action]; ok {
			return d
		}
		return fallback
	}
}

func (p *Plan) duration(est Estimator, i int) time.Duration {
	if p.Tasks[i].IsJoin() {
		return 0
	}
	return est(&p.Tasks[i])
}

// StageMakespan is how long strict stages would take: each stage lasts as
// long as its slowest task and the next starts only when it is over.
func (p *Plan) StageMakespan(stages []Stage, est Estimator) time.Duration {
	pos := make(map[string]int, len(p.Tasks))
	for i := range p.Tasks {
		pos[p.Tasks[i].ID] = i
	}
	var total time.Duration
	for _, st := range stages {
		var longest time.Duration
		for _, id := range st {
			if d := p.duration(est, pos[id]); d > longest {
				longest = d
			}
		}
		total += longest
	}
	return total
}

// CriticalPath is the longest chain of dependent tasks: the least time the
// plan can take with unlimited workers.
type CriticalPath struct {
	Length time.Duration `json:"length"`
	// Tasks lists the work tasks along it, first to last.
	Tasks []string `json:"tasks"`
}

// CriticalPath computes the longest path through the plan, weighting each work
// task by est. Ties go to the path through the earlier task, so the answer is
// deterministic.
func (p *Plan) CriticalPath(est Estimator) (CriticalPath, error) {
	ix, err := p.index()
	if err != nil {
		return CriticalPath{}, err
	}
	return p.criticalPath(ix, est), nil
}

// criticalPath is CriticalPath on an index.
func (p *Plan) criticalPath(ix indexed, est Estimator) CriticalPath {
	finish := make([]time.Duration, len(p.Tasks))
	via := make([]int32, len(p.Tasks))
	end := -1
	for i := range p.Tasks { // plan order is topological
		via[i] = -1
		var start time.Duration
		for _, d := range ix.depsOf(i) {
			if finish[d] > start || (finish[d] == start && via[i] < 0) {
				start, via[i] = finish[d], d
			}
		}
		finish[i] = start + p.duration(est, i)
		if end < 0 || finish[i] > finish[end] {
			end = i
		}
	}
	if end < 0 {
		return CriticalPath{}
	}
	var path []string
	for t := int32(end); t >= 0; t = via[t] {
		if !p.Tasks[t].IsJoin() {
			path = append(path, p.Tasks[t].ID)
		}
	}
	for i, j := 0, len(path)-1; i < j; i, j = i+1, j-1 {
		path[i], path[j] = path[j], path[i]
	}
	return CriticalPath{Length: finish[end], Tasks: path}
}

// stageMakespan is StageMakespan on stages as task positions.
func (p *Plan) stageMakespan(stages [][]int32, est Estimator) time.Duration {
	var total time.Duration
	for _, st := range stages {
		var longest time.Duration
		for _, t := range st {
			if d := p.duration(est, int(t)); d > longest {
				longest = d
			}
		}
		total += longest
	}
	return total
}
