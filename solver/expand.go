package solver

import (
	"fmt"
	"sort"

	"github.com/heddle-io/heddle/internal/domain"
)

// Expand adds Count nodes to a cluster. Existing nodes are untouched. New
// nodes copy existing node layouts, the layout shared by the most nodes
// first, each as many times as a valid layout remains; the nodes still to
// place after that get layouts solved as for a create (see the package
// documentation).
func Expand(req ExpandRequest) (*Layout, error) {
	cl := &req.Cluster
	if cl.Template == nil {
		return nil, requestError(Reason{Code: CodeMissingTemplate, Message: "the cluster's resolved template is required"})
	}
	tmpl := cl.Template
	existing := copyNodes(cl.Nodes, req.Count)
	services := uniqueSorted(cl.Services)
	k := req.Count
	var rs []Reason
	if k < 1 {
		rs = append(rs, Reason{Code: CodeInvalidCount, Message: fmt.Sprintf("count is %d; an expansion adds at least 1 node", k)})
	}
	if len(existing)+k > domain.MaxClusterSize {
		rs = append(rs, Reason{Code: CodeTooManyNodes, Message: fmt.Sprintf("the cluster has %s; adding %d would pass the limit of %d", nodesPhrase(len(existing)), k, domain.MaxClusterSize)})
	}
	rs = append(rs, checkNodes(existing, services)...)
	if cl.Provider == "" {
		rs = append(rs, Reason{Code: CodeNoProvider, Message: "the cluster names no provider"})
	}
	if len(rs) > 0 {
		return nil, &RequestError{Reasons: rs}
	}
	rs = checkServices(tmpl, req.Catalog, services)
	hw, r := resolveTypes(hardwareKind(req.Catalog, cl.Provider), tmpl, cl.Provider, tmpl.Compatibility.HardwareTypes, req.HardwareType, tmpl.Defaults.HardwareType, nil)
	rs = append(rs, r...)
	img, r := resolveTypes(imageKind(req.Catalog, cl.Provider), tmpl, cl.Provider, tmpl.Compatibility.ImageTypes, req.ImageType, tmpl.Defaults.ImageType, nil)
	rs = append(rs, r...)
	if len(rs) > 0 {
		return nil, &RequestError{Reasons: rs}
	}
	e := newEnv(tmpl, services, hw, img)
	var nl []Reason
	if r, bad := sizeReason(tmpl, len(existing)+k, "asked for"); bad {
		nl = append(nl, r)
	}
	nl = append(nl, e.reasons...)
	// Existing nodes stay as they are, so they must already be valid.
	for _, r := range nodeReasons(tmpl, cl.Provider, services, existing, nil, nil) {
		r.Message = "the existing nodes already break the template: " + r.Message
		nl = append(nl, r)
	}
	already := serviceCounts(existing)
	// A free service no node runs yet is placed like any other unit, so
	// that mirrored layouts cannot leave it out.
	e.unfree(func(s string) bool { return already[s] == 0 })
	for _, s := range services {
		if _, hi := serviceBounds(tmpl, s); already[s] > hi {
			nl = append(nl, Reason{Code: CodeAboveMaximum, Services: []string{s}, Constraints: quantityPath(s, "max"),
				Message: fmt.Sprintf("%s already runs on %s, more than its maximum of %d; no expansion can fix that, shrink the cluster or sync it to a template that allows more", s, nodesPhrase(already[s]), hi)})
		}
	}
	if len(nl) > 0 {
		return nil, &NoLayoutError{Reasons: nl}
	}
	b := newBudget(req.Budget)
	b.step = "solving the expansion"
	p, lo, hi := e.newRowsProblem(k, already, b)
	ok, err := p.feasible(lo, hi, k)
	if err != nil {
		return nil, err
	}
	if !ok {
		_, err := solveRows(p, lo, hi, k, expandWording)
		return nil, err
	}
	toP := map[int]int{}
	for i := range p.units {
		toP[p.units[i].def] = i
	}
	var added []Group
	left := k
	for _, g := range mirrorOrder(existing) {
		if left == 0 {
			break
		}
		units, ok := e.mirrorable(&g.NodeLayout)
		if !ok {
			continue
		}
		var pus []int
		top := left
		for _, u := range units {
			if pu, in := toP[u]; in {
				pus = append(pus, pu)
				top = min(top, hi[pu])
			}
		}
		try := func(t int) (bool, error) {
			l, h := append([]int(nil), lo...), append([]int(nil), hi...)
			for _, u := range pus {
				l[u], h[u] = max(l[u]-t, 0), h[u]-t
			}
			return b.probe(func() (bool, error) { return p.feasible(l, h, left-t) })
		}
		t, err := largestFeasible(top, try)
		if err != nil {
			return nil, err
		}
		if t == 0 {
			continue
		}
		for _, u := range pus {
			lo[u], hi[u] = max(lo[u]-t, 0), hi[u]-t
		}
		added = append(added, Group{NodeLayout: cloneLayout(g.NodeLayout), Count: t})
		left -= t
	}
	if left > 0 {
		segs, err := solveRows(p, lo, hi, left, expandWording)
		if err != nil {
			return nil, err
		}
		rest := e.groupsOf(p, segs)
		sortGroups(rest)
		added = append(added, rest...)
	}
	first := FirstNodeNum
	if len(existing) > 0 {
		first = existing[len(existing)-1].Num + 1
	}
	all, fresh := appendNewNodes(existing, cl.ID, cl.Provider, req.Catalog, added, first)
	return &Layout{Groups: groupsOfNodes(all), Nodes: all, NewNodes: nodeIDs(fresh)}, nil
}

// largestFeasible returns the largest t in [0, top] with try(t), knowing
// try(0) holds and that try holds on an interval starting at 0.
func largestFeasible(top int, try func(int) (bool, error)) (int, error) {
	if top <= 0 {
		return 0, nil
	}
	ok, err := try(top)
	if err != nil || ok {
		return top, err
	}
	l, r := 0, top-1
	for l < r {
		mid := (l + r + 1) / 2
		ok, err := try(mid)
		if err != nil {
			return 0, err
		}
		if ok {
			l = mid
		} else {
			r = mid - 1
		}
	}
	return l, nil
}

// mirrorOrder lists the existing layouts in the order new nodes copy them:
// the most common first, then the one with most services, then by name.
func mirrorOrder(nodes []domain.Node) []Group {
	gs := groupsOfNodes(nodes)
	sort.SliceStable(gs, func(i, j int) bool {
		a, b := &gs[i], &gs[j]
		if a.Count != b.Count {
			return a.Count > b.Count
		}
		if len(a.Services) != len(b.Services) {
			return len(a.Services) > len(b.Services)
		}
		return layoutKey(&a.NodeLayout) < layoutKey(&b.NodeLayout)
	})
	return gs
}

// mirrorable maps an existing layout to its units when a new node may copy
// it: it holds whole units only, and its types are still candidates that
// each of its services allows.
func (e *env) mirrorable(l *domain.NodeLayout) ([]int, bool) {
	if len(l.Services) == 0 {
		return nil, false
	}
	units, ok := e.unitsOfServices(l.Services)
	if !ok {
		return nil, false
	}
	hi, okh := e.hw.index[l.HardwareType]
	ii, oki := e.img.index[l.ImageType]
	if !okh || !oki || hi >= e.hw.ncand || ii >= e.img.ncand {
		return nil, false
	}
	for _, u := range units {
		if !e.units[u].hw.has(hi) || !e.units[u].img.has(ii) || e.units[u].broken {
			return nil, false
		}
	}
	return units, true
}

func cloneLayout(l domain.NodeLayout) domain.NodeLayout {
	l.Services = append([]string(nil), l.Services...)
	return l
}

// checkNodes reports duplicate node ids and numbers and nodes running
// services the cluster does not list. nodes are sorted by Num (copyNodes),
// so a repeated number is next to its twin.
func checkNodes(nodes []domain.Node, services []string) []Reason {
	var rs []Reason
	on := stringSet(services)
	ids := make(map[string]bool, len(nodes))
	for i := range nodes {
		n := &nodes[i]
		if ids[n.ID] {
			rs = append(rs, Reason{Code: CodeDuplicateNode, Nodes: []string{n.ID}, Message: fmt.Sprintf("node id %q appears twice", n.ID)})
		}
		if i > 0 && nodes[i-1].Num == n.Num {
			rs = append(rs, Reason{Code: CodeNodeNumbers, Nodes: []string{n.ID}, Message: fmt.Sprintf("node number %d appears twice", n.Num)})
		}
		ids[n.ID] = true
	}
	c := classify(nodes)
	bad := make([][]string, len(c.layouts))
	for ci, l := range c.layouts {
		for _, s := range l.Services {
			if !on[s] {
				bad[ci] = append(bad[ci], s)
			}
		}
	}
	v := newViolations()
	for i := range nodes {
		for _, s := range bad[c.of[i]] {
			v.add(s, nodes[i].ID, Reason{Code: CodeNodeService, Services: []string{s},
				Message: fmt.Sprintf("%s is not one of the cluster's services", s)})
		}
	}
	return append(rs, v.done()...)
}
