package solver

import (
	"fmt"
	"sort"
	"strings"
)

// wording adapts explanations to the operation: a create speaks of the
// cluster's nodes, an expansion of the nodes it adds.
type wording struct {
	have func(m int) string // "the cluster has 4 nodes"
	more string             // "" or "more ", as in "at least 3 more nodes"
}

func (w wording) need(n int) string {
	return fmt.Sprintf("at least %d %s%s", n, w.more, plural("node", n))
}

var createWording = wording{
	have: func(m int) string { return "the cluster has " + nodesPhrase(m) },
}

var expandWording = wording{
	have: func(m int) string { return "the expansion adds " + nodesPhrase(m) },
	more: "more ",
}

// explain says why lo and hi admit no layout on m rows, following the
// characterization in problem's documentation, one reason per violated
// condition and per failing component.
func (p *problem) explain(lo, hi []int, m int, w wording) ([]Reason, error) {
	var rs []Reason
	order := make([]int, len(p.units))
	for u := range p.units {
		order[p.rank[u]] = u
	}
	tooBig := map[int]bool{}
	for _, u := range order {
		pu := &p.units[u]
		switch {
		case lo[u] > m:
			tooBig[u] = true
			who := pu.loFrom
			if who == "" {
				who = pu.label
			}
			rs = append(rs, Reason{Code: CodeQuantityTooLarge, Services: sortedCopy(pu.services), Constraints: quantityPath(pu.loFrom, "min"),
				Message: fmt.Sprintf("%s needs %s but %s", who, w.need(lo[u]), w.have(m))})
		case lo[u] > hi[u]:
			tooBig[u] = true
			rs = append(rs, Reason{Code: CodeQuantityConflict, Services: sortedCopy(pu.services), Constraints: append(quantityPath(pu.loFrom, "min"), quantityPath(pu.hiFrom, "max")...),
				Message: fmt.Sprintf("%s needs %s but may run on at most %s", pu.label, w.need(lo[u]), nodesPhrase(max(hi[u], 0)))})
		}
	}
	if len(tooBig) > 0 {
		return rs, nil
	}
	if !p.allowEmpty {
		total := 0
		var services, paths []string
		for _, u := range order {
			total += min(hi[u], m)
			services = append(services, p.units[u].services...)
			paths = append(paths, quantityPath(p.units[u].hiFrom, "max")...)
		}
		if total < m {
			rs = append(rs, Reason{Code: CodeCapacity, Services: uniqueSorted(services), Constraints: uniqueSorted(paths),
				Message: fmt.Sprintf("every service has a maximum number of nodes and together they can fill at most %d %s%s, but %s; raise a maximum or add a service that may run on any number of nodes",
					total, w.more, plural("node", total), w.have(m))})
		}
	}
	for ci := range p.comps {
		ok, err := p.cover(ci, lo, m)
		if err != nil {
			return nil, err
		}
		if ok {
			continue
		}
		weight, clique, err := p.maxClique(ci, lo)
		if err != nil {
			return nil, err
		}
		if weight > m {
			rs = append(rs, p.cliqueReason(clique, lo, m, w))
			continue
		}
		lb, set, err := p.setBound(ci, lo)
		if err != nil {
			return nil, err
		}
		if lb > m {
			rs = append(rs, p.setReason(set, lb, lo, m, w))
			continue
		}
		need, weights, err := p.lpBound(ci, lo)
		if err != nil {
			return nil, err
		}
		if need > m {
			rs = append(rs, p.fractionalReason(weights, need, lo, m, w))
			continue
		}
		rs = append(rs, p.packReason(ci, lo, m, w))
	}
	return rs, nil
}

func quantityPath(service, bound string) []string {
	if service == "" {
		return nil
	}
	return []string{"constraints.services." + service + ".quantities." + bound}
}

func (p *problem) demand(u int, lo []int, w wording) string {
	if p.units[u].pseudo {
		return p.units[u].label
	}
	return fmt.Sprintf("%s (%s)", p.units[u].label, w.need(lo[u]))
}

// cliqueReason explains a set of units no two of which may share a node.
func (p *problem) cliqueReason(clique []int, lo []int, m int, w wording) Reason {
	sort.Slice(clique, func(i, j int) bool { return p.rank[clique[i]] < p.rank[clique[j]] })
	var parts, services, paths, why []string
	total := 0
	for _, u := range clique {
		parts = append(parts, p.demand(u, lo, w))
		services = append(services, p.units[u].services...)
		total += lo[u]
	}
	for i, u := range clique {
		for _, v := range clique[i+1:] {
			a, b := p.units[u].label, p.units[v].label
			for _, ei := range p.unitEdges[u] {
				if e := p.edges[ei]; e.count() == 2 && e.has(v) {
					gp := cantPaths(p.edgeGroups[ei])
					paths = append(paths, gp...)
					why = append(why, fmt.Sprintf("%s forbids %s with %s", strings.Join(gp, ", "), a, b))
				}
			}
			if !p.units[u].hw.intersects(p.units[v].hw) {
				paths = append(paths, p.units[u].typePaths...)
				paths = append(paths, p.units[v].typePaths...)
				why = append(why, fmt.Sprintf("%s and %s have no hardware type in common", a, b))
			}
			if !p.units[u].img.intersects(p.units[v].img) {
				paths = append(paths, p.units[u].typePaths...)
				paths = append(paths, p.units[v].typePaths...)
				why = append(why, fmt.Sprintf("%s and %s have no image type in common", a, b))
			}
		}
	}
	verb := "may not share a node"
	if len(clique) > 2 {
		verb = "may not share nodes with each other"
	}
	return Reason{Code: CodeCannotShare, Services: uniqueSorted(services), Constraints: uniqueSorted(paths),
		Message: fmt.Sprintf("%s %s (%s), so together they need %s but %s",
			joinAnd(parts), verb, strings.Join(why, "; "), w.need(total), w.have(m))}
}

// setReason explains a set of units of which no node may hold them all: a
// cantCoexist group of three or more, three units that share no type or
// complete a group, or the type-restricted units.
func (p *problem) setReason(set *boundSet, lb int, lo []int, m int, w wording) Reason {
	var parts, services, paths []string
	for _, u := range set.units {
		parts = append(parts, p.demand(u, lo, w))
		services = append(services, p.units[u].services...)
	}
	// Every branch names its cause the same way ("because of <paths>"), so
	// a reader sees at once which template entries to change.
	var why string
	switch {
	case set.edge >= 0:
		paths = cantPaths(p.edgeGroups[set.edge])
		why = "because of " + joinAnd(paths)
	default:
		for i, u := range set.units {
			paths = append(paths, p.units[u].typePaths...)
			for _, v := range set.units[i+1:] {
				for _, ei := range p.unitEdges[u] {
					if p.edges[ei].has(v) {
						paths = append(paths, cantPaths(p.edgeGroups[ei])...)
					}
				}
			}
		}
		paths = uniqueSorted(paths)
		why = "because of " + joinAnd(paths)
		if set.types {
			why = "no hardware and image type allows more than " + fmt.Sprint(set.alpha) + " of them"
		}
	}
	return Reason{Code: CodeCannotPack, Services: uniqueSorted(services), Constraints: paths,
		Message: fmt.Sprintf("%s may not all be on one node (%s), so a node holds at most %d of them and together they need %s but %s",
			joinAnd(parts), why, set.alpha, w.need(lb), w.have(m))}
}

// fractionalReason explains demands that the linear relaxation proves too
// large: the units it weighs and the constraints among them, which even
// sharing nodes in fractions cannot fit into m nodes.
func (p *problem) fractionalReason(weights lpWeights, need int, lo []int, m int, w wording) Reason {
	var parts, services, paths []string
	in := newBitset(len(p.units))
	for u, x := range weights {
		if x > 0 && lo[u] > 0 {
			in.add(u)
		}
	}
	order := in.members()
	sort.SliceStable(order, func(i, j int) bool { return p.rank[order[i]] < p.rank[order[j]] })
	for _, u := range order {
		parts = append(parts, p.demand(u, lo, w))
		services = append(services, p.units[u].services...)
		paths = append(paths, p.units[u].typePaths...)
		for _, ei := range p.unitEdges[u] {
			if p.edges[ei].subsetOf(in) {
				paths = append(paths, cantPaths(p.edgeGroups[ei])...)
			}
		}
	}
	paths = uniqueSorted(paths)
	return Reason{Code: CodeCannotPack, Services: uniqueSorted(services), Constraints: paths,
		Message: fmt.Sprintf("%s cannot all be placed: %s keep them apart so that, sharing nodes as far as those constraints allow, they need %s but %s; add nodes or loosen those constraints",
			joinAnd(parts), joinAnd(paths), w.need(need), w.have(m))}
}

// packReason explains a component the exhaustive search proved cannot fit,
// although no two of its units alone are the problem.
func (p *problem) packReason(ci int, lo []int, m int, w wording) Reason {
	var parts, services, paths []string
	for _, u := range p.comps[ci] {
		if lo[u] == 0 {
			continue
		}
		parts = append(parts, p.demand(u, lo, w))
		services = append(services, p.units[u].services...)
		paths = append(paths, p.units[u].typePaths...)
		for _, ei := range p.unitEdges[u] {
			paths = append(paths, cantPaths(p.edgeGroups[ei])...)
		}
	}
	paths = uniqueSorted(paths)
	return Reason{Code: CodeCannotPack, Services: uniqueSorted(services), Constraints: paths,
		Message: fmt.Sprintf("%s cannot all be placed: %s leave no arrangement of them that fits, and %s; add nodes or loosen those constraints",
			joinAnd(parts), joinAnd(paths), w.have(m))}
}
