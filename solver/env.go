package solver

import (
	"fmt"
	"sort"
	"strings"

	"github.com/heddle-io/heddle/internal/domain"
)

// checkServices reports every service that does not exist or is not
// compatible with the template, every install or runtime requirement that no
// service on the cluster satisfies (by name or by what it provides), and
// every pair of services on the cluster that conflict.
func checkServices(tmpl *domain.ClusterTemplate, cat Catalog, services []string) []Reason {
	var rs []Reason
	compat := stringSet(tmpl.Compatibility.Services)
	provided := map[string]bool{}
	var known []*domain.Service
	for _, name := range services {
		svc := cat.Services[name]
		if svc == nil {
			rs = append(rs, Reason{Code: CodeUnknownService, Services: []string{name},
				Message: fmt.Sprintf("service %q does not exist", name)})
			continue
		}
		if len(compat) > 0 && !compat[name] {
			rs = append(rs, Reason{Code: CodeIncompatibleService, Services: []string{name}, Constraints: []string{"compatibility.services"},
				Message: fmt.Sprintf("service %q is not compatible with template %q", name, tmpl.Name)})
		}
		known = append(known, svc)
		provided[name] = true
		for _, p := range svc.Dependencies.Provides {
			provided[p] = true
		}
	}
	providers := map[string][]string{} // name -> the services that are or provide it
	for _, svc := range known {
		providers[svc.Name] = append(providers[svc.Name], svc.Name)
		for _, p := range uniqueSorted(svc.Dependencies.Provides) {
			if p != svc.Name {
				providers[p] = append(providers[p], svc.Name)
			}
		}
	}
	seenConflict := map[string]bool{}
	for _, svc := range known {
		reqs := append(append([]string(nil), svc.Dependencies.Install.Requires...), svc.Dependencies.Runtime.Requires...)
		sort.Strings(reqs)
		for i, r := range reqs {
			if (i > 0 && reqs[i-1] == r) || provided[r] {
				continue
			}
			rs = append(rs, Reason{Code: CodeMissingDependency, Services: []string{svc.Name, r},
				Message: fmt.Sprintf("%s requires %s, which no service on the cluster is or provides; add %s or a service that provides it", svc.Name, r, r)})
		}
		// A conflict names a service or a name services provide, as a
		// requirement does.
		for _, c := range uniqueSorted(svc.Dependencies.Conflicts) {
			for _, other := range providers[c] {
				if other == svc.Name {
					continue
				}
				pair := sortedPair(svc.Name, other)
				key := pair[0] + "\x00" + pair[1]
				if seenConflict[key] {
					continue
				}
				seenConflict[key] = true
				msg := fmt.Sprintf("%s conflicts with %s; they cannot be on the same cluster", pair[0], pair[1])
				if other != c {
					msg = fmt.Sprintf("%s conflicts with %s, which %s provides; they cannot be on the same cluster", svc.Name, c, other)
				}
				rs = append(rs, Reason{Code: CodeServiceConflict, Services: pair, Message: msg})
			}
		}
	}
	return rs
}

// typeSet is the universe of hardware (or image) types one request may use,
// in preference order: the requested type, the template's default, then the
// other candidates by name. Candidates (compatible with the template and
// present on the provider) come first; after them come types only existing
// nodes use, so that those nodes can be described but no new node gets them.
type typeSet struct {
	names []string
	index map[string]int
	ncand int
}

func (t *typeSet) all() bitset {
	b := newBitset(len(t.names))
	for i := range t.names {
		b.add(i)
	}
	return b
}

func (t *typeSet) candidates() bitset {
	b := newBitset(len(t.names))
	for i := 0; i < t.ncand; i++ {
		b.add(i)
	}
	return b
}

// restricted returns the candidates among names.
func (t *typeSet) restricted(names []string) bitset {
	b := newBitset(len(t.names))
	for _, n := range names {
		if i, ok := t.index[n]; ok && i < t.ncand {
			b.add(i)
		}
	}
	return b
}

func (t *typeSet) namesOf(b bitset) []string {
	var out []string
	for _, i := range b.members() {
		out = append(out, t.names[i])
	}
	return out
}

type typeKind struct {
	noun      string // "hardware type"
	field     string // "hardwareTypes"
	unknown   string
	noneCode  string
	unavCode  string
	exists    func(string) bool
	available func(string) bool // has an entry for the provider
	catalog   []string
}

func hardwareKind(cat Catalog, provider string) typeKind {
	var names []string
	for n := range cat.HardwareTypes {
		names = append(names, n)
	}
	return typeKind{
		noun: "hardware type", field: "hardwareTypes", unknown: CodeUnknownHardwareType, noneCode: CodeNoHardwareType, unavCode: CodeHardwareUnavailable,
		exists: func(n string) bool { return cat.HardwareTypes[n] != nil },
		available: func(n string) bool {
			h := cat.HardwareTypes[n]
			if h == nil {
				return false
			}
			_, ok := h.ProviderMap[provider]
			return ok
		},
		catalog: names,
	}
}

func imageKind(cat Catalog, provider string) typeKind {
	var names []string
	for n := range cat.ImageTypes {
		names = append(names, n)
	}
	return typeKind{
		noun: "image type", field: "imageTypes", unknown: CodeUnknownImageType, noneCode: CodeNoImageType, unavCode: CodeImageUnavailable,
		exists: func(n string) bool { return cat.ImageTypes[n] != nil },
		available: func(n string) bool {
			im := cat.ImageTypes[n]
			if im == nil {
				return false
			}
			_, ok := im.ProviderMap[provider]
			return ok
		},
		catalog: names,
	}
}

// resolveTypes builds the type universe. compat empty means every type in
// the catalog. pref is a request's preference (an error when unusable); dflt
// the template's (ignored when unusable); extra are types existing nodes use.
func resolveTypes(k typeKind, tmpl *domain.ClusterTemplate, provider string, compat []string, pref, dflt string, extra []string) (typeSet, []Reason) {
	source := compat
	if len(source) == 0 {
		source = k.catalog
	}
	isCand := map[string]bool{}
	var cands []string
	for _, n := range source {
		if !isCand[n] && k.exists(n) && k.available(n) {
			isCand[n] = true
			cands = append(cands, n)
		}
	}
	sort.Strings(cands)
	var rs []Reason
	if pref != "" && !isCand[pref] {
		switch {
		case !k.exists(pref):
			rs = append(rs, Reason{Code: k.unknown, Message: fmt.Sprintf("%s %q does not exist", k.noun, pref)})
		case len(compat) > 0 && !stringSet(compat)[pref]:
			rs = append(rs, Reason{Code: k.unavCode, Constraints: []string{"compatibility." + k.field},
				Message: fmt.Sprintf("%s %q is not compatible with template %q", k.noun, pref, tmpl.Name)})
		default:
			rs = append(rs, Reason{Code: k.unavCode, Message: fmt.Sprintf("%s %q has no entry for provider %q", k.noun, pref, provider)})
		}
	}
	if len(cands) == 0 {
		rs = append(rs, Reason{Code: k.noneCode, Constraints: []string{"compatibility." + k.field},
			Message: fmt.Sprintf("no %ss are available to use with template %q and provider %q", k.noun, tmpl.Name, provider)})
	}
	ordered := make([]string, 0, len(cands)+len(extra))
	for _, first := range []string{pref, dflt} {
		if first != "" && isCand[first] && !contains(ordered, first) {
			ordered = append(ordered, first)
		}
	}
	for _, n := range cands {
		if !contains(ordered, n) {
			ordered = append(ordered, n)
		}
	}
	ts := typeSet{ncand: len(ordered)}
	ex := append([]string(nil), extra...)
	sort.Strings(ex)
	for _, n := range ex {
		if !isCand[n] && !contains(ordered, n) {
			ordered = append(ordered, n)
		}
	}
	ts.names = ordered
	ts.index = make(map[string]int, len(ordered))
	for i, n := range ordered {
		ts.index[n] = i
	}
	return ts, rs
}

// unitDef is a set of services that must always be on the same nodes: a
// service on its own, or the services a chain of must-coexist groups ties
// together. The solver places units, never parts of them.
type unitDef struct {
	services       []string
	lo, hi         int    // node count bounds: the tightest of the members'
	loFrom, hiFrom string // the members that set lo and hi
	hw, img        bitset // types every member may use
	must           []int  // the mustCoexist groups that tie the unit
	cant           bool   // in an applicable cantCoexist group
	free           bool   // constrained by nothing: runs on every node
	broken         bool   // can be on no node at all (see env.reasons)
}

func (u *unitDef) label() string { return strings.Join(u.services, "+") }

// edgeDef is a cantCoexist group seen as units: no node may hold all of them.
type edgeDef struct {
	units  []int
	groups []int // indices into constraints.layout.cantCoexist
}

// env is a template applied to one set of cluster services: the units, the
// cantCoexist edges between them, the type universes and the free services.
type env struct {
	tmpl     *domain.ClusterTemplate
	services []string
	on       map[string]bool
	hw, img  typeSet
	units    []unitDef
	unitOf   map[string]int
	edges    []edgeDef
	free     []string // services of free units, sorted
	reasons  []Reason // units that can be on no node
}

func serviceBounds(tmpl *domain.ClusterTemplate, s string) (lo, hi int) {
	q := tmpl.Constraints.Services[s].Quantities
	lo, hi = max(q.Min, 1), q.Max
	if hi <= 0 || hi > domain.MaxClusterSize {
		hi = domain.MaxClusterSize
	}
	return lo, hi
}

func newEnv(tmpl *domain.ClusterTemplate, services []string, hw, img typeSet) *env {
	e := &env{tmpl: tmpl, services: services, on: stringSet(services), hw: hw, img: img, unitOf: map[string]int{}}
	parent := make([]int, len(services))
	idx := map[string]int{}
	for i, s := range services {
		parent[i] = i
		idx[s] = i
	}
	var find func(int) int
	find = func(i int) int {
		for parent[i] != i {
			parent[i] = parent[parent[i]]
			i = parent[i]
		}
		return i
	}
	mustOf := map[int][]int{} // root -> groups, filled after unions
	var applied []int
	for gi, g := range tmpl.Constraints.Layout.MustCoexist {
		var members []int
		for _, s := range g {
			if i, ok := idx[s]; ok && !containsInt(members, i) {
				members = append(members, i)
			}
		}
		if len(members) < 2 {
			continue
		}
		applied = append(applied, gi)
		for _, m := range members[1:] {
			a, b := find(members[0]), find(m)
			if a != b {
				parent[max(a, b)] = min(a, b)
			}
		}
	}
	// Units in the order of their first service, so that indices are stable.
	rootUnit := map[int]int{}
	for i, s := range services {
		r := find(i)
		u, ok := rootUnit[r]
		if !ok {
			u = len(e.units)
			rootUnit[r] = u
			e.units = append(e.units, unitDef{})
		}
		e.units[u].services = append(e.units[u].services, s)
		e.unitOf[s] = u
	}
	for _, gi := range applied {
		for _, s := range tmpl.Constraints.Layout.MustCoexist[gi] {
			if i, ok := idx[s]; ok {
				r := find(i)
				if !containsInt(mustOf[r], gi) {
					mustOf[r] = append(mustOf[r], gi)
				}
				break
			}
		}
	}
	for r, u := range rootUnit {
		e.units[u].must = mustOf[r]
	}
	allHW, allImg := hw.all(), img.all()
	for ui := range e.units {
		u := &e.units[ui]
		u.lo, u.hi = 0, domain.MaxClusterSize+1
		u.hw, u.img = allHW.clone(), allImg.clone()
		for _, s := range u.services {
			lo, hi := serviceBounds(tmpl, s)
			if lo > u.lo {
				u.lo, u.loFrom = lo, s
			}
			if hi < u.hi {
				u.hi, u.hiFrom = hi, s
			}
			u.hw = u.hw.and(e.serviceHW(s))
			u.img = u.img.and(e.serviceImg(s))
		}
		e.checkUnit(ui)
	}
	for gi, g := range tmpl.Constraints.Layout.CantCoexist {
		var us []int
		applies := len(g) >= 2
		for _, s := range g {
			if !e.on[s] {
				applies = false
				break
			}
			if u := e.unitOf[s]; !containsInt(us, u) {
				us = append(us, u)
			}
		}
		if !applies {
			continue
		}
		for _, u := range us {
			e.units[u].cant = true
		}
		if len(us) == 1 {
			u := &e.units[us[0]]
			u.broken = true
			e.reasons = append(e.reasons, Reason{Code: CodeCoexistConflict, Services: sortedCopy(g),
				Constraints: append(mustPaths(u.must), fmt.Sprintf("constraints.layout.cantCoexist[%d]", gi)),
				Message:     fmt.Sprintf("%s must coexist on every node, but %s may not all be on one node", joinAnd(u.services), joinAnd(sortedCopy(g)))})
			continue
		}
		sort.Ints(us)
		e.edges = append(e.edges, edgeDef{units: us, groups: []int{gi}})
	}
	e.edges = minimalEdges(e.edges)
	for ui := range e.units {
		u := &e.units[ui]
		u.free = !u.cant && !u.broken && u.lo <= 1 && u.hi >= domain.MaxClusterSize && u.hw.equal(allHW) && u.img.equal(allImg)
		if u.free {
			e.free = append(e.free, u.services...)
		}
	}
	sort.Strings(e.free)
	e.reasons = dedupeReasons(e.reasons)
	return e
}

// dedupeReasons drops reasons that say exactly what an earlier one says.
func dedupeReasons(rs []Reason) []Reason {
	seen := map[string]bool{}
	out := rs[:0]
	for _, r := range rs {
		if !seen[r.Message] {
			seen[r.Message] = true
			out = append(out, r)
		}
	}
	return out
}

// unfree makes the free units that have a service matching pred ordinary
// units.
func (e *env) unfree(pred func(string) bool) {
	e.free = nil
	for ui := range e.units {
		u := &e.units[ui]
		for _, s := range u.services {
			if pred(s) {
				u.free = false
			}
		}
		if u.free {
			e.free = append(e.free, u.services...)
		}
	}
	sort.Strings(e.free)
}

// serviceHW is the set of types s may use: its restriction among the
// candidates, or every type when it has none.
func (e *env) serviceHW(s string) bitset {
	if r := e.tmpl.Constraints.Services[s].HardwareTypes; len(r) > 0 {
		return e.hw.restricted(r)
	}
	return e.hw.all()
}

func (e *env) serviceImg(s string) bitset {
	if r := e.tmpl.Constraints.Services[s].ImageTypes; len(r) > 0 {
		return e.img.restricted(r)
	}
	return e.img.all()
}

// checkUnit records why a unit can be on no node: its members allow no
// common hardware or image type, or their quantities cannot agree.
func (e *env) checkUnit(ui int) {
	u := &e.units[ui]
	if r, bad := e.typeConflict(u, "hardware", "hardwareTypes", u.hw, e.serviceHW, &e.hw, CodeHardwareConflict); bad {
		u.broken = true
		e.reasons = append(e.reasons, r)
	}
	if r, bad := e.typeConflict(u, "image", "imageTypes", u.img, e.serviceImg, &e.img, CodeImageConflict); bad {
		u.broken = true
		e.reasons = append(e.reasons, r)
	}
	if u.lo > u.hi {
		u.broken = true
		if u.loFrom == u.hiFrom {
			e.reasons = append(e.reasons, Reason{Code: CodeQuantityConflict, Services: []string{u.loFrom},
				Constraints: []string{"constraints.services." + u.loFrom + ".quantities"},
				Message:     fmt.Sprintf("%s needs at least %d nodes but may run on at most %d", u.loFrom, u.lo, u.hi)})
		} else {
			e.reasons = append(e.reasons, Reason{Code: CodeQuantityConflict, Services: sortedPair(u.loFrom, u.hiFrom),
				Constraints: append(mustPaths(u.must), "constraints.services."+u.loFrom+".quantities.min", "constraints.services."+u.hiFrom+".quantities.max"),
				Message:     fmt.Sprintf("%s needs at least %d nodes, but %s, which must coexist with it, may run on at most %d", u.loFrom, u.lo, u.hiFrom, u.hi)})
		}
	}
}

func (e *env) typeConflict(u *unitDef, noun, field string, mask bitset, of func(string) bitset, ts *typeSet, code string) (Reason, bool) {
	if !mask.isEmpty() {
		return Reason{}, false
	}
	for _, s := range u.services {
		if of(s).isEmpty() {
			allowed := e.tmpl.Constraints.Services[s]
			list := allowed.HardwareTypes
			if field == "imageTypes" {
				list = allowed.ImageTypes
			}
			return Reason{Code: code, Services: []string{s}, Constraints: []string{"constraints.services." + s + "." + field},
				Message: fmt.Sprintf("%s may only use %s types %s, none of which is available to this cluster (compatible with the template and present on its provider)", s, noun, strings.Join(list, ", "))}, true
		}
	}
	for i, a := range u.services {
		for _, b := range u.services[i+1:] {
			ma, mb := of(a), of(b)
			if ma.intersects(mb) {
				continue
			}
			limited, other := b, a
			if ma.count() < mb.count() {
				limited, other = a, b
			}
			names := ts.namesOf(of(limited).and(ts.candidates()))
			return Reason{Code: code, Services: sortedPair(a, b),
				Constraints: append(mustPaths(u.must), "constraints.services."+a+"."+field, "constraints.services."+b+"."+field),
				Message: fmt.Sprintf("%s and %s must coexist but %s is limited to %s %s %s, which %s may not use",
					a, b, limited, noun, plural("type", len(names)), joinAnd(names), other)}, true
		}
	}
	return Reason{Code: code, Services: append([]string(nil), u.services...), Constraints: mustPaths(u.must),
		Message: fmt.Sprintf("%s must coexist but no %s type is allowed for all of them", joinAnd(u.services), noun)}, true
}

// minimalEdges drops duplicate edges and edges that contain another edge: a
// node that avoids the smaller group avoids the larger one too.
func minimalEdges(edges []edgeDef) []edgeDef {
	sort.SliceStable(edges, func(i, j int) bool { return len(edges[i].units) < len(edges[j].units) })
	var out []edgeDef
next:
	for _, ed := range edges {
		for k := range out {
			if subsetInts(out[k].units, ed.units) {
				if len(out[k].units) == len(ed.units) {
					out[k].groups = append(out[k].groups, ed.groups...)
				}
				continue next
			}
		}
		out = append(out, ed)
	}
	sort.SliceStable(out, func(i, j int) bool { return lessInts(out[i].units, out[j].units) })
	return out
}

func mustPaths(groups []int) []string {
	var out []string
	for _, g := range groups {
		out = append(out, fmt.Sprintf("constraints.layout.mustCoexist[%d]", g))
	}
	return out
}

func cantPaths(groups []int) []string {
	var out []string
	for _, g := range groups {
		out = append(out, fmt.Sprintf("constraints.layout.cantCoexist[%d]", g))
	}
	return out
}

// servicesOfNode maps a node's services to units: the units wholly on it, or
// ok=false when it holds part of a unit or a service not on the cluster.
func (e *env) unitsOfServices(services []string) (units []int, ok bool) {
	seen := map[int]int{}
	for _, s := range services {
		u, found := e.unitOf[s]
		if !found {
			return nil, false
		}
		seen[u]++
	}
	for u, n := range seen {
		if n != len(e.units[u].services) {
			return nil, false
		}
		units = append(units, u)
	}
	sort.Ints(units)
	return units, true
}

func stringSet(xs []string) map[string]bool {
	m := make(map[string]bool, len(xs))
	for _, x := range xs {
		m[x] = true
	}
	return m
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func containsInt(xs []int, x int) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func subsetInts(a, b []int) bool {
	for _, x := range a {
		if !containsInt(b, x) {
			return false
		}
	}
	return true
}

func lessInts(a, b []int) bool {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return len(a) < len(b)
}

func sortedPair(a, b string) []string {
	if b < a {
		return []string{b, a}
	}
	return []string{a, b}
}

func sortedCopy(xs []string) []string {
	out := append([]string(nil), xs...)
	sort.Strings(out)
	return out
}

// uniqueSorted returns xs sorted without duplicates.
func uniqueSorted(xs []string) []string {
	out := sortedCopy(xs)
	n := 0
	for i, x := range out {
		if i == 0 || x != out[n-1] {
			out[n] = x
			n++
		}
	}
	return out[:n]
}

func joinAnd(xs []string) string {
	switch len(xs) {
	case 0:
		return ""
	case 1:
		return xs[0]
	}
	return strings.Join(xs[:len(xs)-1], ", ") + " and " + xs[len(xs)-1]
}

func plural(word string, n int) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

func nodesPhrase(n int) string { return fmt.Sprintf("%d %s", n, plural("node", n)) }
