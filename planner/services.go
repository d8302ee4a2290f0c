package planner

import (
	"fmt"
	"sort"
	"strings"

	"github.com/heddle-io/heddle/internal/domain"
)

// phase names the two dependency sets a service declares.
type phase int

const (
	installPhase phase = iota // orders install and remove
	runtimePhase              // orders initialize, start and stop
)

func (p phase) String() string {
	if p == installPhase {
		return "install"
	}
	return "runtime"
}

// CycleError reports services on the cluster whose dependencies of one phase
// form a cycle, so no order can satisfy them. Cycle lists the services along it,
// each depending on the next, and repeats the first at the end.
type CycleError struct {
	Phase string   `json:"phase"` // "install" or "runtime"
	Cycle []string `json:"cycle"`
}

func (e *CycleError) Error() string {
	return fmt.Sprintf("planner: the %s dependencies of the cluster's services form a cycle (%s); no order can satisfy them: change a requires or uses so the cycle is broken",
		e.Phase, strings.Join(e.Cycle, " -> "))
}

// serviceGraph is the dependency graph of the services on one cluster, with
// provided names already replaced by the services that provide them. Services
// are numbered in name order so that everything derived from the graph is
// deterministic.
type serviceGraph struct {
	names []string
	index map[string]int
	defs  []*domain.Service
	// deps[p][s] are the services s directly depends on in phase p (sorted).
	deps [2][][]int
	// rank[p][s] is s's position in a dependencies-first order of phase p.
	rank [2][]int
	// order[p] lists services by rank.
	order [2][]int
}

// newServiceGraph builds the graph of the named services (the ones on the
// cluster). Dependencies on services that are not on the cluster are ignored:
// the solver has already checked that required ones are there, and a used one
// only orders actions when present. A service never depends on itself, even
// when it provides a name it requires.
func newServiceGraph(present []string, catalog map[string]*domain.Service) (*serviceGraph, error) {
	g := &serviceGraph{names: present, index: make(map[string]int, len(present))}
	for i, name := range present {
		g.index[name] = i
		def := catalog[name]
		if def == nil {
			return nil, fmt.Errorf("%w: service %q is on a node but not in Services", ErrInvalidRequest, name)
		}
		g.defs = append(g.defs, def)
	}
	providers := map[string][]int{}
	for i, def := range g.defs {
		providers[g.names[i]] = append(providers[g.names[i]], i)
		for _, p := range def.Dependencies.Provides {
			if p != g.names[i] {
				providers[p] = append(providers[p], i)
			}
		}
	}
	for p, sets := range [2]func(*domain.Service) domain.DependencySet{
		func(s *domain.Service) domain.DependencySet { return s.Dependencies.Install },
		func(s *domain.Service) domain.DependencySet { return s.Dependencies.Runtime },
	} {
		g.deps[p] = make([][]int, len(present))
		for i, def := range g.defs {
			set := sets(def)
			seen := map[int]bool{}
			for _, list := range [][]string{set.Requires, set.Uses} {
				for _, name := range list {
					for _, d := range providers[name] {
						if d != i && !seen[d] {
							seen[d] = true
							g.deps[p][i] = append(g.deps[p][i], d)
						}
					}
				}
			}
			sort.Ints(g.deps[p][i])
		}
		if cycle := g.findCycle(phase(p)); cycle != nil {
			return nil, &CycleError{Phase: phase(p).String(), Cycle: cycle}
		}
		g.order[p], g.rank[p] = g.topoOrder(phase(p))
	}
	return g, nil
}

// findCycle returns the first cycle a depth-first search in name order meets,
// as names with the first repeated at the end, or nil.
func (g *serviceGraph) findCycle(p phase) []string {
	const (
		unseen = iota
		onPath
		done
	)
	state := make([]int, len(g.names))
	var path []int
	var visit func(s int) []string
	visit = func(s int) []string {
		state[s] = onPath
		path = append(path, s)
		for _, d := range g.deps[p][s] {
			switch state[d] {
			case onPath:
				start := len(path) - 1
				for path[start] != d {
					start--
				}
				cycle := make([]string, 0, len(path)-start+1)
				for _, c := range path[start:] {
					cycle = append(cycle, g.names[c])
				}
				return append(cycle, g.names[d])
			case unseen:
				if c := visit(d); c != nil {
					return c
				}
			}
		}
		path = path[:len(path)-1]
		state[s] = done
		return nil
	}
	for s := range g.names {
		if state[s] == unseen {
			if c := visit(s); c != nil {
				return c
			}
		}
	}
	return nil
}

// topoOrder orders services dependencies first, breaking ties by name, so a
// node's chain reads the same way on every node and in every plan.
func (g *serviceGraph) topoOrder(p phase) (order, rank []int) {
	n := len(g.names)
	pending := make([]int, n)
	dependents := make([][]int, n)
	for s := 0; s < n; s++ {
		pending[s] = len(g.deps[p][s])
		for _, d := range g.deps[p][s] {
			dependents[d] = append(dependents[d], s)
		}
	}
	ready := make([]bool, n)
	for s := 0; s < n; s++ {
		ready[s] = pending[s] == 0
	}
	rank = make([]int, n)
	for len(order) < n {
		next := -1
		for s := 0; s < n; s++ {
			if ready[s] {
				next = s
				break
			}
		}
		ready[next] = false
		rank[next] = len(order)
		order = append(order, next)
		for _, t := range dependents[next] {
			pending[t]--
			if pending[t] == 0 {
				ready[t] = true
			}
		}
	}
	return order, rank
}

// defines reports whether service s has a definition for action a.
func (g *serviceGraph) defines(s int, a domain.Action) bool {
	_, ok := g.defs[s].Actions[a]
	return ok
}

// closure returns seed plus everything reachable from it in phase p, following
// dependencies (towards what the seed needs) or, with dependents set, the
// reverse (towards what needs the seed).
func (g *serviceGraph) closure(p phase, seed []bool, dependents bool) []bool {
	out := append([]bool(nil), seed...)
	changed := true
	for changed {
		changed = false
		for s := range g.names {
			for _, d := range g.deps[p][s] {
				from, to := s, d
				if dependents {
					from, to = d, s
				}
				if out[from] && !out[to] {
					out[to] = true
					changed = true
				}
			}
		}
	}
	return out
}

// effectiveDeps returns, for every service, the nearest dependencies in phase
// p for which has is true, walking through those for which it is false, with
// redundant ones removed: d is dropped when another kept dependency already
// (transitively) depends on d, because the task edges through that one order d
// already.
func (g *serviceGraph) effectiveDeps(p phase, has func(s int) bool) [][]int {
	n := len(g.names)
	eff := make([][]int, n)
	// reach[s] is every has-service s transitively depends on through has-edges.
	reach := make([][]bool, n)
	for _, s := range g.order[p] { // dependencies first, so eff of deps is final
		seen := make([]bool, n)
		var direct []int
		for _, d := range g.deps[p][s] {
			if has(d) {
				if !seen[d] {
					seen[d] = true
					direct = append(direct, d)
				}
				continue
			}
			for _, w := range eff[d] {
				if !seen[w] {
					seen[w] = true
					direct = append(direct, w)
				}
			}
		}
		r := make([]bool, n)
		for _, d := range direct {
			r[d] = true
			for t, ok := range reach[d] {
				if ok {
					r[t] = true
				}
			}
		}
		reach[s] = r
		var reduced []int
		for _, d := range direct {
			redundant := false
			for _, e := range direct {
				if e != d && reach[e][d] {
					redundant = true
					break
				}
			}
			if !redundant {
				reduced = append(reduced, d)
			}
		}
		sort.Ints(reduced)
		eff[s] = reduced
	}
	return eff
}
