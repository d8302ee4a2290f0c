package solver

import (
	"fmt"
	"sort"
	"testing"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/stretchr/testify/require"
)

// clusterSpec is what a layout is checked against.
type clusterSpec struct {
	tmpl     *domain.ClusterTemplate
	cat      Catalog
	provider string
	services []string
}

// independentCheck lists every constraint a cluster layout breaks: the
// cluster-level rules on its services (serviceProblems), then the rules on
// each node, on quantities and on the size. It shares no code with the
// solver: it reads the rules straight off the domain types, node by node, so
// that a bug in the solver's model cannot hide itself.
func independentCheck(sp clusterSpec, nodes []domain.Node) []string {
	bad := serviceProblems(sp)
	tmpl := sp.tmpl
	on := map[string]bool{}
	for _, s := range sp.services {
		on[s] = true
	}
	minSize, maxSize := tmpl.Constraints.Size.Min, tmpl.Constraints.Size.Max
	if minSize < 1 {
		minSize = 1
	}
	if maxSize == 0 {
		maxSize = domain.MaxClusterSize
	}
	if len(nodes) < minSize || len(nodes) > maxSize {
		bad = append(bad, fmt.Sprintf("size %d outside [%d,%d]", len(nodes), minSize, maxSize))
	}
	inList := func(list []string, x string) bool {
		for _, y := range list {
			if y == x {
				return true
			}
		}
		return false
	}
	ids, nums := map[string]bool{}, map[int]bool{}
	count := map[string]int{}
	for _, n := range nodes {
		if ids[n.ID] || nums[n.Num] {
			bad = append(bad, fmt.Sprintf("node %s/%d repeats an id or number", n.ID, n.Num))
		}
		ids[n.ID], nums[n.Num] = true, true
		if len(n.Services) == 0 {
			bad = append(bad, fmt.Sprintf("node %s runs nothing", n.ID))
		}
		if !sort.StringsAreSorted(n.Services) {
			bad = append(bad, fmt.Sprintf("node %s services not sorted", n.ID))
		}
		has := map[string]bool{}
		for _, s := range n.Services {
			if has[s] {
				bad = append(bad, fmt.Sprintf("node %s runs %s twice", n.ID, s))
			}
			has[s] = true
			if !on[s] {
				bad = append(bad, fmt.Sprintf("node %s runs %s, not a cluster service", n.ID, s))
			}
			count[s]++
		}
		h := sp.cat.HardwareTypes[n.HardwareType]
		if h == nil {
			bad = append(bad, fmt.Sprintf("node %s hardware %q unknown", n.ID, n.HardwareType))
		} else if _, ok := h.ProviderMap[sp.provider]; !ok {
			bad = append(bad, fmt.Sprintf("node %s hardware %q not on provider", n.ID, n.HardwareType))
		}
		if c := tmpl.Compatibility.HardwareTypes; len(c) > 0 && !inList(c, n.HardwareType) {
			bad = append(bad, fmt.Sprintf("node %s hardware %q incompatible", n.ID, n.HardwareType))
		}
		im := sp.cat.ImageTypes[n.ImageType]
		if im == nil {
			bad = append(bad, fmt.Sprintf("node %s image %q unknown", n.ID, n.ImageType))
		} else if _, ok := im.ProviderMap[sp.provider]; !ok {
			bad = append(bad, fmt.Sprintf("node %s image %q not on provider", n.ID, n.ImageType))
		}
		if c := tmpl.Compatibility.ImageTypes; len(c) > 0 && !inList(c, n.ImageType) {
			bad = append(bad, fmt.Sprintf("node %s image %q incompatible", n.ID, n.ImageType))
		}
		for _, s := range n.Services {
			sc := tmpl.Constraints.Services[s]
			if len(sc.HardwareTypes) > 0 && !inList(sc.HardwareTypes, n.HardwareType) {
				bad = append(bad, fmt.Sprintf("node %s: %s may not use hardware %s", n.ID, s, n.HardwareType))
			}
			if len(sc.ImageTypes) > 0 && !inList(sc.ImageTypes, n.ImageType) {
				bad = append(bad, fmt.Sprintf("node %s: %s may not use image %s", n.ID, s, n.ImageType))
			}
		}
		for gi, g := range tmpl.Constraints.Layout.MustCoexist {
			members, present := 0, 0
			for _, s := range g {
				if on[s] {
					members++
					if has[s] {
						present++
					}
				}
			}
			if members >= 2 && present > 0 && present < members {
				bad = append(bad, fmt.Sprintf("node %s breaks mustCoexist[%d]", n.ID, gi))
			}
		}
		for gi, g := range tmpl.Constraints.Layout.CantCoexist {
			all := len(g) >= 2
			for _, s := range g {
				all = all && on[s] && has[s]
			}
			if all {
				bad = append(bad, fmt.Sprintf("node %s breaks cantCoexist[%d]", n.ID, gi))
			}
		}
	}
	for _, s := range sp.services {
		q := tmpl.Constraints.Services[s].Quantities
		lo := q.Min
		if lo < 1 {
			lo = 1
		}
		if count[s] < lo || (q.Max > 0 && count[s] > q.Max) {
			bad = append(bad, fmt.Sprintf("%s on %d nodes, allowed %d..%d", s, count[s], lo, q.Max))
		}
	}
	return bad
}

// serviceProblems lists what is wrong with the cluster's set of services,
// whatever its nodes: a service the catalog does not have, a service the
// template's compatibility list does not name, an install or runtime
// requirement that no service on the cluster is or provides, and two
// services on the cluster that conflict, where a conflict names a service or
// a name another service provides (see the solver's package doc).
func serviceProblems(sp clusterSpec) []string {
	var bad []string
	// satisfiedBy maps a name to the services on the cluster that are it or
	// provide it.
	satisfiedBy := map[string][]string{}
	for _, s := range sp.services {
		def := sp.cat.Services[s]
		if def == nil {
			bad = append(bad, fmt.Sprintf("service %s unknown", s))
			continue
		}
		satisfiedBy[s] = append(satisfiedBy[s], s)
		for _, p := range def.Dependencies.Provides {
			if p != s {
				satisfiedBy[p] = append(satisfiedBy[p], s)
			}
		}
	}
	for _, s := range sp.services {
		compatible := false
		for _, c := range sp.tmpl.Compatibility.Services {
			compatible = compatible || c == s
		}
		if !compatible {
			bad = append(bad, fmt.Sprintf("service %s not in compatibility.services", s))
		}
		def := sp.cat.Services[s]
		if def == nil {
			continue
		}
		for phase, set := range map[string]domain.DependencySet{"install": def.Dependencies.Install, "run": def.Dependencies.Runtime} {
			for _, r := range set.Requires {
				if len(satisfiedBy[r]) == 0 {
					bad = append(bad, fmt.Sprintf("%s requires %s at %s time; nothing on the cluster is or provides it", s, r, phase))
				}
			}
		}
		for _, c := range def.Dependencies.Conflicts {
			for _, other := range satisfiedBy[c] {
				if other != s {
					bad = append(bad, fmt.Sprintf("%s conflicts with %s (as %s)", s, other, c))
				}
			}
		}
	}
	sort.Strings(bad)
	return bad
}

// TestServiceProblems holds the checker's cluster-level rules to hand-made
// cases, so that the fuzz and property tests that trust it stand on
// something.
func TestServiceProblems(t *testing.T) {
	t.Parallel()
	build := func(compat []string, defs ...*domain.Service) clusterSpec {
		var names []string
		for _, d := range defs {
			names = append(names, d.Name)
		}
		tmpl := &domain.ClusterTemplate{Meta: domain.Meta{Name: "t"}}
		tmpl.Compatibility.Services = compat
		if compat == nil {
			tmpl.Compatibility.Services = names
		}
		return clusterSpec{tmpl: tmpl, cat: catalogOf(defs, []string{"small"}, []string{"ubuntu"}), provider: "aws", services: uniqueSorted(names)}
	}
	with := func(d *domain.Service, fs ...func(*domain.ServiceDependencies)) *domain.Service {
		for _, f := range fs {
			f(&d.Dependencies)
		}
		return d
	}
	provides := func(names ...string) func(*domain.ServiceDependencies) {
		return func(d *domain.ServiceDependencies) { d.Provides = names }
	}
	conflicts := func(names ...string) func(*domain.ServiceDependencies) {
		return func(d *domain.ServiceDependencies) { d.Conflicts = names }
	}
	installs := func(names ...string) func(*domain.ServiceDependencies) {
		return func(d *domain.ServiceDependencies) { d.Install.Requires = names }
	}
	tests := []struct {
		name string
		sp   clusterSpec
		want []string
	}{
		{"requires by name", build(nil, svc("a"), svc("b", "a")), nil},
		{"requires a provided name", build(nil, with(svc("mysql"), provides("sql-db")), svc("hive", "sql-db")), nil},
		{"runtime requirement missing", build(nil, svc("hive", "sql-db")),
			[]string{"hive requires sql-db at run time; nothing on the cluster is or provides it"}},
		{"install requirement missing", build(nil, with(svc("a"), installs("base"))),
			[]string{"a requires base at install time; nothing on the cluster is or provides it"}},
		{"conflict by name", build(nil, with(svc("a"), conflicts("b")), svc("b")), []string{"a conflicts with b (as b)"}},
		{"conflict by a provided name", build(nil, with(svc("a"), conflicts("db")), with(svc("b"), provides("db"))),
			[]string{"a conflicts with b (as db)"}},
		{"conflict with an absent service", build(nil, with(svc("a"), conflicts("b"))), nil},
		{"conflict with a name only it provides", build(nil, with(svc("a"), conflicts("db"), provides("db"))), nil},
		{"incompatible service", build([]string{"a"}, svc("a"), svc("b")), []string{"service b not in compatibility.services"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, serviceProblems(tt.sp))
		})
	}
}
