package planner

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/heddle-io/heddle/internal/domain"
)

// graph is the plan under construction: tasks numbered in creation order and,
// for each, the numbers of the tasks it depends on.
type graph struct {
	tasks    []gtask
	limits   Limits
	barriers map[string]int32
	// slab is where the first dependencies of tasks are taken from: most
	// tasks have one or two, and one allocation each is most of what a
	// 10,000-node plan would otherwise allocate per task.
	slab []int32
	// What tasks name by number (gtask): a task stays 64 bytes, where
	// three strings of its own made it 112, at 60,000 tasks a plan.
	nodeIDs  []string
	services []string
	actions  []domain.Action
}

type gtask struct {
	// name is a join's ID; a work task's is derived from what it does
	// (graph.taskID), and only written out when the plan is finished.
	name        string
	deps        []int32
	timeout     domain.Duration
	node        int32 // index into nodeIDs (the planning's nodes); -1 for joins
	maxAttempts int32
	service     int16 // index into services; -1 for a node-level action or a join
	action      uint8 // index into actions
}

func (t *gtask) isJoin() bool { return t.node < 0 }

// actionNum numbers a, adding it to the graph's actions the first time.
func (g *graph) actionNum(a domain.Action) uint8 {
	for i, known := range g.actions {
		if known == a {
			return uint8(i)
		}
	}
	g.actions = append(g.actions, a)
	return uint8(len(g.actions) - 1)
}

// taskID is task i's ID (Task's documentation says how it is made).
func (g *graph) taskID(i int32) string {
	var b strings.Builder
	b.Grow(g.idLen(&g.tasks[i]))
	g.writeID(&b, &g.tasks[i])
	return b.String()
}

func (g *graph) idLen(t *gtask) int {
	switch {
	case t.isJoin():
		return len(t.name)
	case t.service < 0:
		return len(g.nodeIDs[t.node]) + 1 + len(g.actions[t.action])
	default:
		return len(g.nodeIDs[t.node]) + 1 + len(g.services[t.service]) + 1 + len(g.actions[t.action])
	}
}

func (g *graph) writeID(b *strings.Builder, t *gtask) {
	if t.isJoin() {
		b.WriteString(t.name)
		return
	}
	b.WriteString(g.nodeIDs[t.node])
	b.WriteByte('/')
	if t.service >= 0 {
		b.WriteString(g.services[t.service])
		b.WriteByte('/')
	}
	b.WriteString(string(g.actions[t.action]))
}

func newGraph(limits Limits, sizeHint int, nodeIDs, services []string) *graph {
	return &graph{
		tasks:    make([]gtask, 0, sizeHint),
		limits:   limits.withDefaults(),
		barriers: map[string]int32{},
		nodeIDs:  nodeIDs,
		services: services,
	}
}

func (g *graph) add(t gtask) int32 {
	g.tasks = append(g.tasks, t)
	return int32(len(g.tasks) - 1)
}

func (g *graph) addJoin(name string, deps []int32) int32 {
	return g.add(gtask{name: "join:" + name, node: -1, service: -1, action: g.actionNum(ActionJoin), maxAttempts: 1, deps: deps})
}

// dependOn makes task t wait for every task in on.
func (g *graph) dependOn(t int32, on ...int32) {
	deps := g.tasks[t].deps
	if deps == nil {
		// Room for two from the slab; the capacity ends there, so a third
		// dependency moves the list out rather than into a neighbour's.
		n := max(len(on), 2)
		if len(g.slab) < n {
			g.slab = make([]int32, max(n, 4096))
		}
		deps = g.slab[:0:n]
		g.slab = g.slab[n:]
	}
	g.tasks[t].deps = append(deps, on...)
}

// groupEdge makes every task of dst wait for every task of src. Small groups
// are linked directly; large ones through one join that stands for "all of
// src done", named by key and shared by every group edge with the same source
// (key must name src exactly). It turns |src|*|dst| edges into |src|+|dst|.
func (g *graph) groupEdge(key string, src, dst []int32) {
	if len(src) == 0 || len(dst) == 0 {
		return
	}
	if len(src) == 1 || len(dst) == 1 || len(src)*len(dst) <= g.limits.MaxDirectEdges {
		for _, t := range dst {
			for _, s := range src {
				// An earlier task on the same node is already ahead in the
				// node's chain.
				if g.tasks[s].node != g.tasks[t].node || s > t {
					g.dependOn(t, s)
				}
			}
		}
		return
	}
	j, ok := g.barriers[key]
	if !ok {
		j = g.addJoin(key, slices.Clone(src))
		g.barriers[key] = j
	}
	for _, t := range dst {
		g.dependOn(t, j)
	}
}

// boundFanIn gives every task at most MaxDependsOn dependencies by gathering
// the excess into joins, level by level (a tree, never a chain).
func (g *graph) boundFanIn() {
	max := g.limits.MaxDependsOn
	for i := 0; i < len(g.tasks); i++ {
		if len(g.tasks[i].deps) <= max {
			continue
		}
		base := joinBase(g.taskID(int32(i)))
		n := 0
		for len(g.tasks[i].deps) > max {
			deps := g.tasks[i].deps
			var gathered []int32
			for start := 0; start < len(deps); start += max {
				chunk := deps[start:min(start+max, len(deps))]
				if len(chunk) == 1 {
					gathered = append(gathered, chunk[0])
					continue
				}
				n++
				gathered = append(gathered, g.addJoin(base+":in"+strconv.Itoa(n), slices.Clone(chunk)))
			}
			g.tasks[i].deps = gathered
		}
	}
}

// boundFanOut gives every task at most MaxDependents dependents by putting
// joins between a task and its dependents, level by level. A dependent keeps
// the same number of dependencies (one is replaced by a join), so fan-in
// bounds hold.
func (g *graph) boundFanOut() {
	max := g.limits.MaxDependents
	count := make([]int32, len(g.tasks))
	for i := range g.tasks {
		for _, d := range g.tasks[i].deps {
			count[d]++
		}
	}
	// Only tasks over the bound need their dependents listed.
	dependents := make([][]int32, len(g.tasks))
	for i := range g.tasks {
		for _, d := range g.tasks[i].deps {
			if count[d] > int32(max) {
				dependents[d] = append(dependents[d], int32(i))
			}
		}
	}
	for i := 0; i < len(dependents); i++ {
		if len(dependents[i]) <= max {
			continue
		}
		base := joinBase(g.taskID(int32(i)))
		n := 0
		for len(dependents[i]) > max {
			outs := dependents[i]
			var joins []int32
			for start := 0; start < len(outs); start += max {
				chunk := outs[start:min(start+max, len(outs))]
				if len(chunk) == 1 {
					joins = append(joins, chunk[0])
					continue
				}
				n++
				j := g.addJoin(base+":out"+strconv.Itoa(n), []int32{int32(i)})
				for _, u := range chunk {
					deps := g.tasks[u].deps
					deps[slices.Index(deps, int32(i))] = j
				}
				dependents = append(dependents, slices.Clone(chunk))
				joins = append(joins, j)
			}
			dependents[i] = joins
		}
	}
}

// joinBase is the name joins derived from task id start with.
func joinBase(id string) string {
	if len(id) > len("join:") && id[:len("join:")] == "join:" {
		return id[len("join:"):]
	}
	return id
}

// dedupe sorts every task's dependencies and drops repeats.
func (g *graph) dedupe() {
	for i := range g.tasks {
		deps := g.tasks[i].deps
		if len(deps) > 1 {
			slices.Sort(deps)
			g.tasks[i].deps = slices.Compact(deps)
		}
	}
}

// finish bounds the graph, orders it topologically (Kahn's algorithm, ready
// tasks in creation order, so the order reads like waves of work) and turns it
// into Tasks with their dependencies as IDs in that same order, every ID
// starting with prefix. It also returns the plan's index (Plan.built), which
// it knows without looking an ID up.
func (g *graph) finish(prefix string) ([]Task, *builtIndex, error) {
	g.dedupe()
	g.boundFanIn()
	g.boundFanOut()

	n := len(g.tasks)
	pending := make([]int32, n)
	dependentCount := make([]int32, n+1)
	for i := range g.tasks {
		pending[i] = int32(len(g.tasks[i].deps))
		for _, d := range g.tasks[i].deps {
			dependentCount[d+1]++
		}
	}
	// dependents in one flat array (CSR), so ordering allocates O(1) slices.
	for i := 1; i <= n; i++ {
		dependentCount[i] += dependentCount[i-1]
	}
	flat := make([]int32, dependentCount[n])
	fill := slices.Clone(dependentCount[:n])
	for i := range g.tasks {
		for _, d := range g.tasks[i].deps {
			flat[fill[d]] = int32(i)
			fill[d]++
		}
	}
	order := make([]int32, 0, n)
	for i := range g.tasks {
		if pending[i] == 0 {
			order = append(order, int32(i))
		}
	}
	for head := 0; head < len(order); head++ {
		t := order[head]
		for _, u := range flat[dependentCount[t]:dependentCount[t+1]] {
			pending[u]--
			if pending[u] == 0 {
				order = append(order, u)
			}
		}
	}
	if len(order) != n {
		// Chains follow one global order, so this is a planner bug, not bad input.
		return nil, nil, fmt.Errorf("planner: internal error: the task graph has a cycle (%d of %d tasks ordered)", len(order), n)
	}
	position := pending // free again: every count reached zero
	for pos, t := range order {
		position[t] = int32(pos)
	}

	// Every ID, in plan order, in one string: one allocation with no
	// pointers for the collector to follow, instead of one per task.
	ix := &builtIndex{end: make([]int32, n), depStart: make([]int32, n+1)}
	total := 0
	for _, t := range order {
		total += len(prefix) + g.idLen(&g.tasks[t])
		ix.end[position[t]] = int32(total)
	}
	var sb strings.Builder
	sb.Grow(total)
	for _, t := range order {
		sb.WriteString(prefix)
		g.writeID(&sb, &g.tasks[t])
	}
	ix.ids = sb.String()
	idAt := func(pos int32) string {
		start := int32(0)
		if pos > 0 {
			start = ix.end[pos-1]
		}
		return ix.ids[start:ix.end[pos]]
	}

	edgeCount := int(dependentCount[n])
	ix.deps = make([]int32, 0, edgeCount)
	ids := make([]string, edgeCount) // one backing array for every DependsOn
	out := make([]Task, n)
	// Work task IDs are unique by construction (unique node IDs, one task per
	// node, service and action); joins are named by key, so check those.
	joinIDs := make(map[string]struct{})
	for pos, t := range order {
		gt := &g.tasks[t]
		if gt.isJoin() {
			if _, dup := joinIDs[gt.name]; dup {
				return nil, nil, fmt.Errorf("planner: internal error: two joins have the ID %q", gt.name)
			}
			joinIDs[gt.name] = struct{}{}
		}
		task := Task{
			ID:          idAt(int32(pos)),
			Kind:        KindWork,
			Action:      g.actions[gt.action],
			Timeout:     gt.timeout,
			MaxAttempts: int(gt.maxAttempts),
		}
		if gt.isJoin() {
			task.Kind = KindJoin
		} else {
			task.NodeID = g.nodeIDs[gt.node]
		}
		if gt.service >= 0 {
			task.Service = g.services[gt.service]
		}
		if len(gt.deps) > 0 {
			for k, d := range gt.deps {
				gt.deps[k] = position[d]
			}
			slices.Sort(gt.deps)
			dst := ids[:len(gt.deps):len(gt.deps)]
			ids = ids[len(gt.deps):]
			for k, d := range gt.deps {
				dst[k] = out[d].ID // d < pos: already written
			}
			task.DependsOn = dst
			ix.deps = append(ix.deps, gt.deps...)
		}
		ix.depStart[pos+1] = int32(len(ix.deps))
		out[pos] = task
	}
	return out, ix, nil
}
