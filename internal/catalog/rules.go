package catalog

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/store"
)

// The write-time rules: every reference that cluster creation would refuse
// later is refused when the catalog is written, at the field that holds it.
// They run inside the write's transaction view (writeTx), so PUT, an import
// of any size and `heddle apply` (an import) all go through them, and a
// refusal writes nothing:
//
//   - a pinned script_version must be a version the script has (put);
//   - templates may not extend or include each other in a cycle, nor a
//     partial template itself (put: a cluster template is resolved whole, a
//     partial one flattened);
//   - services may not depend on each other in a cycle, in their install
//     or their runtime dependencies, requires and uses alike, through
//     provided names too (checkServiceCycles, once per write, over every
//     live service);
//   - a cluster template may not combine services that depend on each
//     other in a cycle (checkTemplateServices: only a cycle stored before
//     the previous rule existed can be left for it to find).

// checkEntity runs the rules that look at one entity being written (a new
// or changed version): pinned script versions and template cycles.
func (tx *writeTx) checkEntity(e domain.Entity) error {
	switch v := e.(type) {
	case *domain.Service:
		return tx.checkPinnedScripts(v).Err()
	case *domain.PartialTemplate:
		// A partial template is only resolved as part of a cluster template;
		// flattening it now finds the cycles and missing versions its
		// extends and includes would meet there.
		self := Layer{Kind: domain.KindPartialTemplate, Name: v.Name, Version: v.Version, Immutable: v.Immutable, Sections: v.TemplateSections}
		var layers []mergeLayer
		return flatten(self, true, tx.c.lookup(tx.ctx, tx.tenant, tx.pending), nil, "", &layers)
	}
	return nil
}

// checkPinnedScripts refuses a script_version above the latest version of
// the script it pins: the shell automator would fail the action on every
// attempt of every cluster that runs it.
func (tx *writeTx) checkPinnedScripts(s *domain.Service) domain.Problems {
	var ps domain.Problems
	for _, a := range domain.ServiceActions {
		act, ok := s.Actions[a]
		if !ok {
			continue
		}
		name, pinned := act.Fields[domain.FieldScriptResource], act.Fields[domain.FieldScriptVersion]
		n, err := strconv.Atoi(pinned)
		if name == "" || err != nil || n < 1 {
			continue // no pin, or one the action's own validation refuses
		}
		latest := tx.scriptLatest(name)
		if latest == 0 || n <= latest {
			continue // a missing script is refused as an unknown reference
		}
		ps = append(ps, domain.Problem{Field: "actions." + string(a) + ".fields." + domain.FieldScriptVersion, Code: domain.CodeUnknownRef,
			Message: fmt.Sprintf("pins version %d of script %q, which has versions 1 to %d; push the script first, pin an existing version, or drop %s to run the latest",
				n, name, latest, domain.FieldScriptVersion)})
	}
	return ps
}

// scriptLatest is the latest version of a script as this write leaves it
// (0 when it has none): the version this write gives it, else its head's.
func (tx *writeTx) scriptLatest(name string) int {
	ref := Ref{Kind: domain.KindScript, Name: name}
	if v, ok := tx.versions[ref]; ok {
		return v
	}
	h, err := tx.head(domain.KindScript, name)
	if err != nil || h == nil || h.Status != statusLive {
		return 0
	}
	return int(h.Counter(counterLatest))
}

// checkServiceCycles refuses a write after which services it writes depend
// on each other in a cycle: the planner refuses any cluster holding them
// all (422 dependency_cycle at create). A cycle needs an edge out of every
// service on it, so a write none of whose services depends on anything is
// not checked; cycles among services the write leaves alone are older
// than these rules and are not this write's to refuse.
func (tx *writeTx) checkServiceCycles() error {
	var written []*domain.Service
	for _, w := range tx.writes {
		if s, ok := tx.pending[w.Ref].(*domain.Service); ok && w.Ref.Kind == domain.KindService && hasDependencies(s) {
			written = append(written, s)
		}
	}
	if len(written) == 0 {
		return nil
	}
	all, err := tx.liveServices()
	if err != nil {
		return err
	}
	var ps domain.Problems
	for _, p := range phases {
		g := newDepGraph(all, p.set)
		reported := map[int]bool{} // strongly connected components already reported
		for _, s := range written {
			i := g.index[s.Name]
			comp := g.comp[i]
			if g.compSize[comp] < 2 || reported[comp] {
				continue
			}
			reported[comp] = true
			cycle := g.cycleThrough(i)
			names := make([]string, len(cycle))
			for j, c := range cycle {
				names[j] = g.names[c]
			}
			field := p.field + "." + depField(p.set(s), g.names[cycle[1]], g.provides[cycle[1]])
			if prefix, ok := tx.paths[Ref{Kind: domain.KindService, Name: s.Name}]; ok {
				field = joinField(prefix, field)
			}
			ps = append(ps, domain.Problem{Field: field, Code: domain.CodeCycle,
				Message: fmt.Sprintf("services depend on each other in a cycle in their %s dependencies (%s), so no cluster can hold them all: no order of their actions satisfies it; remove one of these requires or uses",
					p.name, strings.Join(names, " -> "))})
		}
	}
	return ps.Err()
}

func hasDependencies(s *domain.Service) bool {
	d := s.Dependencies
	return len(d.Install.Requires)+len(d.Install.Uses)+len(d.Runtime.Requires)+len(d.Runtime.Uses) > 0
}

// depField is the path, under a service's dependency set, of the first
// requires or uses entry that names the service to (or a name it provides).
func depField(set domain.DependencySet, to string, provides []string) string {
	for _, l := range []struct {
		field string
		names []string
	}{{"requires", set.Requires}, {"uses", set.Uses}} {
		for i, n := range l.names {
			if n == to || slices.Contains(provides, n) {
				return fmt.Sprintf("%s[%d]", l.field, i)
			}
		}
	}
	return "requires"
}

// checkTemplateServices refuses a cluster template, resolved, whose
// services (compatibility and defaults) depend on each other in a cycle
// among themselves: the planner refuses every cluster that holds them all.
func (tx *writeTx) checkTemplateServices(t *domain.ClusterTemplate) error {
	names := union(slices.Clone(t.Compatibility.Services), t.Defaults.Services)
	var combined []*domain.Service
	for _, name := range names {
		s, err := tx.service(name)
		if err != nil {
			return err
		}
		if s != nil {
			combined = append(combined, s)
		}
	}
	for _, p := range phases {
		g := newDepGraph(combined, p.set)
		for _, name := range names {
			i, ok := g.index[name]
			if !ok || g.compSize[g.comp[i]] < 2 {
				continue
			}
			cycle := g.cycleThrough(i)
			loop := make([]string, len(cycle))
			for j, c := range cycle {
				loop[j] = g.names[c]
			}
			field := "defaults.services"
			if k := slices.Index(t.Compatibility.Services, name); k >= 0 {
				field = fmt.Sprintf("compatibility.services[%d]", k)
			} else if k := slices.Index(t.Defaults.Services, name); k >= 0 {
				field = fmt.Sprintf("defaults.services[%d]", k)
			}
			return domain.Problems{{Field: field, Code: domain.CodeCycle,
				Message: fmt.Sprintf("combines services whose %s dependencies form a cycle (%s), so no cluster of this template could hold them all; break the cycle in the services or leave one of them out",
					p.name, strings.Join(loop, " -> "))}}
		}
	}
	return nil
}

// service is the live service name as this write leaves it, or nil.
func (tx *writeTx) service(name string) (*domain.Service, error) {
	if s, ok := tx.pending[Ref{Kind: domain.KindService, Name: name}].(*domain.Service); ok {
		return s, nil
	}
	h, err := tx.head(domain.KindService, name)
	if err != nil || h == nil || h.Status != statusLive {
		return nil, err
	}
	e, err := decodeEntity(domain.KindService, h.Data)
	if err != nil {
		return nil, err
	}
	return e.(*domain.Service), nil
}

// phases are the two dependency sets of a service, each ordering its own
// actions, so each must be free of cycles.
var phases = []struct {
	name  string
	field string
	set   func(*domain.Service) domain.DependencySet
}{
	{"install", "dependencies.install", func(s *domain.Service) domain.DependencySet { return s.Dependencies.Install }},
	{"runtime", "dependencies.runtime", func(s *domain.Service) domain.DependencySet { return s.Dependencies.Runtime }},
}

// liveServices is every live service as this write leaves them: the
// store's heads, with what the write itself puts in their place.
func (tx *writeTx) liveServices() ([]*domain.Service, error) {
	byName := map[string]*domain.Service{}
	cursor := ""
	for {
		page, err := tx.s.Query(tx.ctx, "CAT#"+string(domain.KindService), store.Query{Cursor: cursor, Limit: store.MaxPageSize})
		if err != nil {
			return nil, err
		}
		for _, it := range page.Items {
			if it.Status != statusLive {
				continue
			}
			e, err := decodeEntity(domain.KindService, it.Data)
			if err != nil {
				return nil, err
			}
			byName[it.SK] = e.(*domain.Service)
		}
		if page.Next == "" {
			break
		}
		cursor = page.Next
	}
	for ref, e := range tx.pending {
		if s, ok := e.(*domain.Service); ok && ref.Kind == domain.KindService {
			byName[ref.Name] = s
		}
	}
	out := make([]*domain.Service, 0, len(byName))
	for _, name := range sortedKeys(byName) {
		out = append(out, byName[name])
	}
	return out, nil
}

// depGraph is one phase's dependency graph over services, as the planner
// builds it for a cluster holding all of them: an edge from a service to
// every other service that has, or provides, a name it requires or uses.
// comp numbers its strongly connected components (Tarjan's algorithm): a
// service is on a cycle exactly when its component holds another service.
type depGraph struct {
	names    []string
	index    map[string]int
	provides [][]string
	edges    [][]int
	comp     []int
	compSize []int
}

func newDepGraph(services []*domain.Service, set func(*domain.Service) domain.DependencySet) *depGraph {
	n := len(services)
	g := &depGraph{names: make([]string, n), index: make(map[string]int, n), provides: make([][]string, n), edges: make([][]int, n)}
	providers := map[string][]int{}
	for i, s := range services {
		g.names[i], g.index[s.Name], g.provides[i] = s.Name, i, s.Dependencies.Provides
		providers[s.Name] = append(providers[s.Name], i)
		for _, p := range s.Dependencies.Provides {
			if p != s.Name {
				providers[p] = append(providers[p], i)
			}
		}
	}
	for i, s := range services {
		d := set(s)
		seen := map[int]bool{}
		for _, name := range slices.Concat(d.Requires, d.Uses) {
			for _, j := range providers[name] {
				if j != i && !seen[j] {
					seen[j] = true
					g.edges[i] = append(g.edges[i], j)
				}
			}
		}
		slices.Sort(g.edges[i])
	}
	g.components()
	return g
}

// components fills comp and compSize with Tarjan's algorithm, iteratively,
// so that a long chain of services does not grow the goroutine's stack.
func (g *depGraph) components() {
	n := len(g.names)
	g.comp = make([]int, n)
	index, low := make([]int, n), make([]int, n)
	onStack := make([]bool, n)
	for i := range index {
		index[i] = -1
	}
	var stack []int
	next := 0
	type frame struct{ v, edge int }
	for root := range n {
		if index[root] >= 0 {
			continue
		}
		calls := []frame{{v: root}}
		index[root], low[root] = next, next
		next++
		stack = append(stack, root)
		onStack[root] = true
		for len(calls) > 0 {
			f := &calls[len(calls)-1]
			if f.edge < len(g.edges[f.v]) {
				w := g.edges[f.v][f.edge]
				f.edge++
				switch {
				case index[w] < 0:
					index[w], low[w] = next, next
					next++
					stack = append(stack, w)
					onStack[w] = true
					calls = append(calls, frame{v: w})
				case onStack[w]:
					low[f.v] = min(low[f.v], index[w])
				}
				continue
			}
			v := f.v
			calls = calls[:len(calls)-1]
			if len(calls) > 0 {
				parent := calls[len(calls)-1].v
				low[parent] = min(low[parent], low[v])
			}
			if low[v] == index[v] {
				id := len(g.compSize)
				size := 0
				for {
					w := stack[len(stack)-1]
					stack = stack[:len(stack)-1]
					onStack[w] = false
					g.comp[w] = id
					size++
					if w == v {
						break
					}
				}
				g.compSize = append(g.compSize, size)
			}
		}
	}
}

// cycleThrough returns a shortest cycle from service i back to itself, as
// indexes with i first and last; i must be on a cycle.
func (g *depGraph) cycleThrough(i int) []int {
	parent := map[int]int{}
	queue := []int{i}
	for len(queue) > 0 {
		v := queue[0]
		queue = queue[1:]
		for _, w := range g.edges[v] {
			if g.comp[w] != g.comp[i] {
				continue
			}
			if w == i {
				path := []int{i}
				for u := v; u != i; u = parent[u] {
					path = append(path, u)
				}
				path = append(path, i)
				slices.Reverse(path[1 : len(path)-1])
				return path
			}
			if _, seen := parent[w]; !seen {
				parent[w] = v
				queue = append(queue, w)
			}
		}
	}
	return []int{i, i}
}
