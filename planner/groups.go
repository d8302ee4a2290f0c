package planner

import (
	"cmp"
	"slices"
	"time"

	"github.com/heddle-io/heddle/internal/domain"
)

// A task graph of 10,000 nodes has some 55,000 tasks: no picture of it can
// show every task, and no answer should carry every edge. GroupGraph draws it
// small instead: the work tasks of one stage that run the same action of the
// same service are one group (so a 10,000-node create is a few dozen groups
// whatever its size), joins are folded into the edges they stand for, and the
// groups and edges the critical path runs through are marked.

// Bounds of a group graph. A plan has at most stages x services x actions
// groups, far below these for any catalog seen; past them the graph is cut
// (Omitted* count what was left out) so that an answer stays small.
const (
	MaxGraphGroups = 1000
	MaxGraphEdges  = 10000
	MaxGraphPath   = 1000
)

// GroupGraph is a plan's (or a job's) task graph summarised by stage,
// service and action, with its critical path.
type GroupGraph struct {
	// Groups are in stage order, then by service and action; a group's ID
	// is its index.
	Groups []TaskGroup `json:"groups"`
	Edges  []GroupEdge `json:"edges"`
	Stages int         `json:"stages"`
	Path   GraphPath   `json:"criticalPath"`
	// Omitted counts what the bounds above left out.
	OmittedGroups int `json:"omittedGroups,omitempty"`
	OmittedEdges  int `json:"omittedEdges,omitempty"`
	OmittedPath   int `json:"omittedPath,omitempty"`
}

// TaskGroup is the work tasks of one stage that run one action of one
// service (the service is empty for node actions such as create).
type TaskGroup struct {
	ID      int           `json:"id"`
	Stage   int           `json:"stage"` // from 1, as the stage view numbers them
	Service string        `json:"service,omitempty"`
	Action  domain.Action `json:"action"`
	Tasks   int           `json:"tasks"`
	// Longest is the longest of its tasks' weights (estimates for a plan,
	// what the task took or has taken so far for a job).
	Longest domain.Duration `json:"longest"`
	// Status counts its tasks by status (a job's graph only).
	Status   map[domain.TaskStatus]int `json:"status,omitempty"`
	Critical bool                      `json:"critical,omitempty"`
}

// GraphPath is the critical path of a group graph: its length under the
// graph's weights and its work tasks, first to last.
type GraphPath struct {
	Length domain.Duration `json:"length"`
	Tasks  []string        `json:"tasks"`
}

// GroupEdge says that some task of To waits for some task of From (directly
// or through joins).
type GroupEdge struct {
	From     int  `json:"from"`
	To       int  `json:"to"`
	Critical bool `json:"critical,omitempty"`
}

// GroupGraph summarises the plan. est weighs each work task for the critical
// path (nil: every work task weighs one second, so the path is the longest
// chain of tasks); status, when not nil, gives each task's status for the
// groups' counts.
func (p *Plan) GroupGraph(est Estimator, status func(id string) domain.TaskStatus) (*GroupGraph, error) {
	ix, err := p.index()
	if err != nil {
		return nil, err
	}
	return p.groupGraph(ix, p.stages(ix), est, status), nil
}

// unitEstimate weighs every work task the same.
func unitEstimate(*Task) time.Duration { return time.Second }

// groupGraph is GroupGraph on an index and its stages.
func (p *Plan) groupGraph(ix indexed, stages [][]int32, est Estimator, status func(string) domain.TaskStatus) *GroupGraph {
	if est == nil {
		est = unitEstimate
	}
	type key struct {
		stage   int
		service string
		action  domain.Action
	}
	// The groups, keyed and then sorted, and each work task's group.
	stageOf := make([]int, len(p.Tasks)) // 0: a join (in no stage)
	for s, st := range stages {
		for _, t := range st {
			stageOf[t] = s + 1
		}
	}
	index := map[key]int{}
	var keys []key
	groupOf := make([]int, len(p.Tasks))
	for i := range p.Tasks {
		groupOf[i] = -1
		if stageOf[i] == 0 {
			continue
		}
		k := key{stageOf[i], p.Tasks[i].Service, p.Tasks[i].Action}
		g, ok := index[k]
		if !ok {
			g = len(keys)
			index[k] = g
			keys = append(keys, k)
		}
		groupOf[i] = g
	}
	order := make([]int, len(keys))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		ka, kb := keys[a], keys[b]
		return cmp.Or(cmp.Compare(ka.stage, kb.stage), cmp.Compare(ka.service, kb.service), cmp.Compare(ka.action, kb.action))
	})
	rank := make([]int, len(keys)) // a key's place in the sorted groups
	for r, k := range order {
		rank[k] = r
	}
	out := &GroupGraph{Groups: make([]TaskGroup, len(keys)), Edges: []GroupEdge{}, Stages: len(stages)}
	for k, r := range rank {
		out.Groups[r] = TaskGroup{ID: r, Stage: keys[k].stage, Service: keys[k].service, Action: keys[k].action}
	}
	for i := range groupOf {
		if groupOf[i] >= 0 {
			groupOf[i] = rank[groupOf[i]]
		}
	}

	// Counts, weights and the critical path (plan order is topological).
	finish := make([]time.Duration, len(p.Tasks))
	via := make([]int32, len(p.Tasks))
	end := -1
	for i := range p.Tasks {
		var w time.Duration
		if g := groupOf[i]; g >= 0 {
			grp := &out.Groups[g]
			grp.Tasks++
			w = est(&p.Tasks[i])
			grp.Longest = max(grp.Longest, domain.Duration(w))
			if status != nil {
				if grp.Status == nil {
					grp.Status = map[domain.TaskStatus]int{}
				}
				grp.Status[status(p.Tasks[i].ID)]++
			}
		}
		via[i] = -1
		var start time.Duration
		for _, d := range ix.depsOf(i) {
			if finish[d] > start || (finish[d] == start && via[i] < 0) {
				start, via[i] = finish[d], d
			}
		}
		finish[i] = start + w
		if end < 0 || finish[i] > finish[end] {
			end = i
		}
	}
	var path []int32
	for t := int32(end); end >= 0 && t >= 0; t = via[t] {
		if groupOf[t] >= 0 {
			path = append(path, t)
		}
	}
	slices.Reverse(path)
	if end >= 0 {
		out.Path.Length = domain.Duration(finish[end])
	}
	out.Path.Tasks = []string{}
	critical := map[[2]int]bool{}
	for n, t := range path {
		out.Groups[groupOf[t]].Critical = true
		if n > 0 {
			critical[[2]int{groupOf[path[n-1]], groupOf[t]}] = true
		}
		if len(out.Path.Tasks) < MaxGraphPath {
			out.Path.Tasks = append(out.Path.Tasks, p.Tasks[t].ID)
		} else {
			out.OmittedPath++
		}
	}

	// Edges between groups, through joins: a join stands for the groups
	// behind it (computed in plan order, so a join's joins come first).
	behind := make(map[int32][]int, 64)
	sources := func(d int32) []int {
		if g := groupOf[d]; g >= 0 {
			return []int{g}
		}
		return behind[d]
	}
	edges := map[[2]int]bool{}
	for i := range p.Tasks {
		if groupOf[i] < 0 {
			var from []int
			for _, d := range ix.depsOf(i) {
				from = append(from, sources(d)...)
			}
			slices.Sort(from)
			behind[int32(i)] = slices.Compact(from)
			continue
		}
		for _, d := range ix.depsOf(i) {
			for _, g := range sources(d) {
				if g != groupOf[i] {
					edges[[2]int{g, groupOf[i]}] = true
				}
			}
		}
	}
	for e := range edges {
		out.Edges = append(out.Edges, GroupEdge{From: e[0], To: e[1], Critical: critical[e]})
	}
	slices.SortFunc(out.Edges, func(a, b GroupEdge) int { return cmp.Or(cmp.Compare(a.From, b.From), cmp.Compare(a.To, b.To)) })
	out.bound()
	return out
}

// bound cuts the graph to MaxGraphGroups groups (the first, in stage order)
// and MaxGraphEdges edges between them.
func (g *GroupGraph) bound() {
	if len(g.Groups) > MaxGraphGroups {
		g.OmittedGroups = len(g.Groups) - MaxGraphGroups
		g.Groups = g.Groups[:MaxGraphGroups]
		kept := g.Edges[:0]
		for _, e := range g.Edges {
			if e.From < MaxGraphGroups && e.To < MaxGraphGroups {
				kept = append(kept, e)
			} else {
				g.OmittedEdges++
			}
		}
		g.Edges = kept
	}
	if len(g.Edges) > MaxGraphEdges {
		g.OmittedEdges += len(g.Edges) - MaxGraphEdges
		g.Edges = g.Edges[:MaxGraphEdges]
	}
}
