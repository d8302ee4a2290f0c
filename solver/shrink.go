package solver

import (
	"fmt"
	"sort"
	"strings"

	"github.com/heddle-io/heddle/internal/domain"
)

// Shrink removes nodes: the ones named, or Count of them chosen highest Num
// first, skipping a node only when removing it would leave no way to remove
// the rest without breaking a minimum. Either way every service keeps its
// minimum (at least one node) and the cluster its minimum size.
func Shrink(req ShrinkRequest) (*Layout, error) {
	cl := &req.Cluster
	if cl.Template == nil {
		return nil, requestError(Reason{Code: CodeMissingTemplate, Message: "the cluster's resolved template is required"})
	}
	tmpl := cl.Template
	existing := copyNodes(cl.Nodes, 0)
	n := len(existing)
	services := cl.Services
	for _, l := range classify(existing).layouts {
		services = append(services[:len(services):len(services)], l.Services...)
	}
	services = uniqueSorted(services)
	rs := checkNodes(existing, services)
	k := req.Count
	byID := map[string]int{}
	for i := range existing {
		byID[existing[i].ID] = i
	}
	var named []int
	if len(req.NodeIDs) > 0 {
		seen := map[string]bool{}
		for _, id := range req.NodeIDs {
			i, ok := byID[id]
			switch {
			case !ok:
				rs = append(rs, Reason{Code: CodeUnknownNode, Nodes: []string{id}, Message: fmt.Sprintf("node %q is not in the cluster", id)})
			case seen[id]:
				rs = append(rs, Reason{Code: CodeDuplicateNode, Nodes: []string{id}, Message: fmt.Sprintf("node %q is named twice", id)})
			default:
				named = append(named, i)
			}
			seen[id] = true
		}
		if k != 0 && k != len(req.NodeIDs) {
			rs = append(rs, Reason{Code: CodeInvalidCount, Message: fmt.Sprintf("count is %d but %d nodes are named; give one or the other", k, len(req.NodeIDs))})
		}
		k = len(req.NodeIDs)
	}
	if k < 1 || k >= n {
		rs = append(rs, Reason{Code: CodeInvalidCount, Message: fmt.Sprintf("cannot remove %d of the cluster's %s: a shrink removes at least one node and keeps at least one (delete the cluster to remove them all)", k, nodesPhrase(n))})
	}
	if len(rs) > 0 {
		return nil, &RequestError{Reasons: rs}
	}
	var nl []Reason
	if lo, _ := sizeBounds(tmpl); n-k < lo {
		nl = append(nl, Reason{Code: CodeBelowMinimum, Constraints: []string{"constraints.size.min"},
			Message: fmt.Sprintf("template %q needs at least %s; removing %d of %d leaves %d", tmpl.Name, nodesPhrase(lo), k, n, n-k)})
	}
	counts := serviceCounts(existing)
	for _, s := range services {
		if lo, _ := serviceBounds(tmpl, s); counts[s] < lo {
			nl = append(nl, Reason{Code: CodeBelowMinimum, Services: []string{s}, Constraints: quantityPath(s, "min"),
				Message: fmt.Sprintf("%s already runs on %s, below its minimum of %d; removing nodes cannot fix that", s, nodesPhrase(counts[s]), lo)})
		}
	}
	slack := make([]int, len(services))
	for si, s := range services {
		lo, _ := serviceBounds(tmpl, s)
		slack[si] = max(counts[s]-lo, 0)
	}
	if named != nil {
		nl = append(nl, namedShrinkReasons(tmpl, existing, named, services, counts)...)
		if len(nl) > 0 {
			return nil, &NoLayoutError{Reasons: nl}
		}
		return shrunk(existing, named), nil
	}
	if len(nl) > 0 {
		return nil, &NoLayoutError{Reasons: nl}
	}
	b := newBudget(req.Budget)
	b.step = "choosing the nodes to remove"
	victims, err := chooseVictims(existing, services, slack, k, b)
	if err != nil {
		return nil, err
	}
	if victims == nil {
		return nil, &NoLayoutError{Reasons: shrinkCapacityReasons(tmpl, existing, services, counts, k)}
	}
	return shrunk(existing, victims), nil
}

func shrunk(existing []domain.Node, victims []int) *Layout {
	gone := map[int]bool{}
	for _, i := range victims {
		gone[i] = true
	}
	keep := make([]domain.Node, 0, len(existing)-len(gone))
	removed := make([]domain.Node, 0, len(gone))
	for i := range existing {
		if gone[i] {
			removed = append(removed, existing[i])
		} else {
			keep = append(keep, existing[i])
		}
	}
	return &Layout{Groups: groupsOfNodes(keep), Nodes: keep, RemovedNodes: nodeIDs(removed)}
}

func namedShrinkReasons(tmpl *domain.ClusterTemplate, existing []domain.Node, named []int, services []string, counts map[string]int) []Reason {
	var rs []Reason
	removed := map[string][]string{}
	for _, i := range named {
		for _, s := range existing[i].Services {
			removed[s] = append(removed[s], existing[i].ID)
		}
	}
	for _, s := range services {
		lo, _ := serviceBounds(tmpl, s)
		left := counts[s] - len(removed[s])
		if len(removed[s]) > 0 && left < lo {
			rs = append(rs, Reason{Code: CodeBelowMinimum, Services: []string{s}, Constraints: quantityPath(s, "min"), Nodes: removed[s],
				Message: fmt.Sprintf("removing %s leaves %s on %s, below its minimum of %d", joinAnd(removed[s]), s, nodesPhrase(left), lo)})
		}
	}
	return rs
}

// shrinkCapacityReasons explains why no k nodes can go: the services whose
// minimum pins the most nodes.
func shrinkCapacityReasons(tmpl *domain.ClusterTemplate, existing []domain.Node, services []string, counts map[string]int, k int) []Reason {
	var pinned []string
	var paths []string
	for _, s := range services {
		if lo, _ := serviceBounds(tmpl, s); counts[s]-lo < k {
			pinned = append(pinned, fmt.Sprintf("%s (on %d, minimum %d)", s, counts[s], lo))
			paths = append(paths, quantityPath(s, "min")...)
		}
	}
	return []Reason{{Code: CodeBelowMinimum, Constraints: paths,
		Message: fmt.Sprintf("no %d of the cluster's %s can be removed without taking a service below its minimum: %s", k, nodesPhrase(len(existing)), strings.Join(pinned, ", "))}}
}

// chooseVictims picks k nodes, highest Num first: a node is taken when the
// rest can still be completed within every service's slack (how far it is
// above its minimum). Nodes with the same services are interchangeable, so
// the decisions are made per run of same-layout nodes and the completion
// check works on layout counts. It returns nil when no choice exists.
func chooseVictims(existing []domain.Node, services []string, slack []int, k int, b *budget) ([]int, error) {
	idx := map[string]int{}
	for i, s := range services {
		idx[s] = i
	}
	// Types are service sets: hardware and image do not matter here.
	classes := classify(existing)
	typeOfClass := make([]int, len(classes.layouts))
	var typeSvcs [][]int
	keys := map[string]int{}
	for ci, l := range classes.layouts {
		key := strings.Join(l.Services, "\x00")
		t, ok := keys[key]
		if !ok {
			t = len(typeSvcs)
			keys[key] = t
			var ss []int
			for _, s := range l.Services {
				ss = append(ss, idx[s])
			}
			typeSvcs = append(typeSvcs, ss)
		}
		typeOfClass[ci] = t
	}
	typeOf := make([]int, len(existing))
	for i, ci := range classes.of {
		typeOf[i] = typeOfClass[ci]
	}
	avail := make([]int, len(typeSvcs))
	for _, t := range typeOf {
		avail[t]++
	}
	search := &victimSearch{typeSvcs: typeSvcs, b: b}
	if ok, err := search.feasible(avail, append([]int(nil), slack...), k); !ok || err != nil {
		return nil, err
	}
	excluded := make([]bool, len(typeSvcs))
	var victims []int
	r := k
	for pos := len(existing) - 1; pos >= 0 && r > 0; {
		t := typeOf[pos]
		end := pos
		for end-1 >= 0 && typeOf[end-1] == t {
			end--
		}
		runLen := pos - end + 1
		if !excluded[t] {
			try := func(x int) (bool, error) {
				for _, s := range typeSvcs[t] {
					if slack[s] < x {
						return false, nil
					}
				}
				a := append([]int(nil), avail...)
				sl := append([]int(nil), slack...)
				a[t] -= x
				for _, s := range typeSvcs[t] {
					sl[s] -= x
				}
				for i, ex := range excluded {
					if ex {
						a[i] = 0
					}
				}
				return search.feasible(a, sl, r-x)
			}
			take, err := largestFeasible(min(runLen, r), try)
			if err != nil {
				return nil, err
			}
			for i := 0; i < take; i++ {
				victims = append(victims, pos-i)
			}
			for _, s := range typeSvcs[t] {
				slack[s] -= take
			}
			r -= take
			if take < runLen && r > 0 {
				excluded[t] = true
			}
		}
		avail[t] -= runLen
		pos = end - 1
	}
	if r > 0 {
		return nil, nil
	}
	sort.Ints(victims)
	return victims, nil
}

// victimSearch decides whether need nodes can be picked from avail (per
// layout) within the services' slack: a small bounded integer search over the
// layouts that hold a service whose slack can actually run out.
type victimSearch struct {
	typeSvcs [][]int
	b        *budget
}

func (v *victimSearch) feasible(avail, slack []int, need int) (bool, error) {
	if need <= 0 {
		return need == 0, nil
	}
	reach := make([]int, len(slack))
	for t, a := range avail {
		for _, s := range v.typeSvcs[t] {
			reach[s] += a
		}
	}
	binding := make([]bool, len(slack))
	for s := range slack {
		binding[s] = slack[s] < min(need, reach[s])
	}
	free := 0
	var constrained []int
	for t, a := range avail {
		if a == 0 {
			continue
		}
		bound := false
		for _, s := range v.typeSvcs[t] {
			if binding[s] {
				bound = true
			}
		}
		if bound {
			constrained = append(constrained, t)
		} else {
			free += a
		}
	}
	if free >= need {
		return true, nil
	}
	restAvail := make([]int, len(constrained)+1)
	for i := len(constrained) - 1; i >= 0; i-- {
		restAvail[i] = restAvail[i+1] + avail[constrained[i]]
	}
	sl := append([]int(nil), slack...)
	var dfs func(i, left int) (bool, error)
	dfs = func(i, left int) (bool, error) {
		if err := v.b.spend(1); err != nil {
			return false, err
		}
		if left <= free {
			return true, nil
		}
		if i == len(constrained) || left > free+restAvail[i] {
			return false, nil
		}
		t := constrained[i]
		top := min(avail[t], left)
		for _, s := range v.typeSvcs[t] {
			if binding[s] {
				top = min(top, sl[s])
			}
		}
		for x := top; x >= 0; x-- {
			if left-x > free+restAvail[i+1] {
				break
			}
			for _, s := range v.typeSvcs[t] {
				sl[s] -= x
			}
			ok, err := dfs(i+1, left-x)
			for _, s := range v.typeSvcs[t] {
				sl[s] += x
			}
			if ok || err != nil {
				return ok, err
			}
		}
		return false, nil
	}
	return dfs(0, need)
}
