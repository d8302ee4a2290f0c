package solver

import (
	"fmt"
	"sort"
	"strings"

	"github.com/heddle-io/heddle/internal/domain"
)

// AddServices puts new services on a cluster. Like Coopr it places them on
// existing nodes, whose hardware and image stay as they are and whose current
// services stay; unlike Coopr it can also add up to MaxNewNodes nodes, and
// uses as few of them as possible.
//
// A new service tied by mustCoexist to services already on the cluster goes
// exactly on the nodes that run them, and, when those are fewer than its
// minimum and new nodes are allowed, onto new nodes together with them; a
// new service with no constraints goes on every node. The others are solved
// as a layout problem where every existing node layout is a fixed block of
// rows: preference as for a create (see the package documentation), oldest
// nodes first within a layout. New nodes run new services, the services
// that run everywhere, and old services only as such companions.
//
// The cluster must satisfy the template as it is: adding services moves
// nothing and changes no old service's node count, so a broken node, an old
// service outside its quantities or a size out of range is reported rather
// than carried into the new layout.
func AddServices(req AddServicesRequest) (*Layout, error) {
	cl := &req.Cluster
	if cl.Template == nil {
		return nil, requestError(Reason{Code: CodeMissingTemplate, Message: "the cluster's resolved template is required"})
	}
	tmpl := cl.Template
	existing := copyNodes(cl.Nodes, 0)
	current := uniqueSorted(cl.Services)
	adding := uniqueSorted(req.Services)
	var rs []Reason
	if len(adding) == 0 {
		rs = append(rs, Reason{Code: CodeNoServices, Message: "name at least one service to add"})
	}
	on := stringSet(current)
	for _, s := range adding {
		if on[s] {
			rs = append(rs, Reason{Code: CodeServiceOnCluster, Services: []string{s}, Message: fmt.Sprintf("%s is already on the cluster", s)})
		}
	}
	if req.MaxNewNodes < 0 {
		rs = append(rs, Reason{Code: CodeInvalidCount, Message: fmt.Sprintf("maxNewNodes is %d; use 0 or more", req.MaxNewNodes)})
	}
	if cl.Provider == "" {
		rs = append(rs, Reason{Code: CodeNoProvider, Message: "the cluster names no provider"})
	}
	if len(existing) == 0 {
		rs = append(rs, Reason{Code: CodeInvalidCount, Message: "the cluster has no nodes to add services to"})
	}
	rs = append(rs, checkNodes(existing, current)...)
	if len(rs) > 0 {
		return nil, &RequestError{Reasons: rs}
	}
	n := len(existing)
	maxNew := min(req.MaxNewNodes, domain.MaxClusterSize-n)
	all := uniqueSorted(append(append([]string(nil), current...), adding...))
	rs = checkServices(tmpl, req.Catalog, all)
	var usedHW, usedImg []string
	for _, l := range classify(existing).layouts {
		usedHW = append(usedHW, l.HardwareType)
		usedImg = append(usedImg, l.ImageType)
	}
	hw, r1 := resolveTypes(hardwareKind(req.Catalog, cl.Provider), tmpl, cl.Provider, tmpl.Compatibility.HardwareTypes, "", tmpl.Defaults.HardwareType, uniqueSorted(usedHW))
	img, r2 := resolveTypes(imageKind(req.Catalog, cl.Provider), tmpl, cl.Provider, tmpl.Compatibility.ImageTypes, "", tmpl.Defaults.ImageType, uniqueSorted(usedImg))
	for _, r := range append(r1, r2...) {
		// Without new nodes, no type needs to be available for new machines.
		if maxNew > 0 || (r.Code != CodeNoHardwareType && r.Code != CodeNoImageType) {
			rs = append(rs, r)
		}
	}
	if len(rs) > 0 {
		return nil, &RequestError{Reasons: rs}
	}
	if hw.ncand == 0 || img.ncand == 0 {
		maxNew = 0
	}
	if _, sizeHi := sizeBounds(tmpl); n+maxNew > sizeHi {
		maxNew = max(sizeHi-n, 0)
	}
	e := newEnv(tmpl, all, hw, img)
	a := &adder{e: e, existing: existing, isNew: stringSet(adding), maxNew: maxNew}
	a.reasons = append(a.reasons, existingReasons(tmpl, cl.Provider, current, existing)...)
	// A unit that can be on no node matters when it holds a new service: a
	// new service can tie old ones that must stay apart into one unit.
	for _, r := range e.reasons {
		if a.involvesNew(r.Services) || a.tiedToNew(r.Services) {
			a.reasons = append(a.reasons, r)
		}
	}
	a.groupTypes()
	a.force()
	if len(a.reasons) > 0 {
		return nil, &NoLayoutError{Reasons: a.reasons}
	}
	b := newBudget(req.Budget)
	b.step = "solving where the new services go"
	return a.solve(b, req.Catalog, cl)
}

// adder holds the state of one add-services request.
type adder struct {
	e        *env
	existing []domain.Node
	isNew    map[string]bool
	maxNew   int
	types    []nodeType
	// freeNew are new services with no constraints: on every node.
	freeNew  []string
	decision []int // env units of new services the solver places
	// extensions are units tying new services to old ones that need more
	// nodes than run the old ones: the rest go on new nodes, old services
	// along with the new.
	extensions []extension
	reasons    []Reason
}

// extension is how many new nodes a unit of old and new services still
// needs (lo) and may still take (hi) beyond the existing nodes it is on.
type extension struct {
	unit, lo, hi, on int
}

// nodeType is one existing node layout and the nodes that have it.
type nodeType struct {
	layout   domain.NodeLayout
	nodes    []int // indices into existing, by Num
	services map[string]bool
	forced   []string // new services it gets because of mustCoexist
	hw, img  int      // env type indices
}

func (a *adder) involvesNew(services []string) bool {
	if len(services) == 0 {
		return true
	}
	for _, s := range services {
		if a.isNew[s] {
			return true
		}
	}
	return false
}

// tiedToNew says whether some of services share a unit with a new service.
func (a *adder) tiedToNew(services []string) bool {
	for _, s := range services {
		u, ok := a.e.unitOf[s]
		if !ok {
			continue
		}
		for _, t := range a.e.units[u].services {
			if a.isNew[t] {
				return true
			}
		}
	}
	return false
}

func (a *adder) groupTypes() {
	c := classify(a.existing)
	for _, l := range c.layouts {
		a.types = append(a.types, nodeType{layout: cloneLayout(l), services: stringSet(l.Services),
			hw: a.e.hw.index[l.HardwareType], img: a.e.img.index[l.ImageType]})
	}
	for i, t := range c.of {
		a.types[t].nodes = append(a.types[t].nodes, i)
	}
}

func (a *adder) typeNodeIDs(t int) []string {
	var ids []string
	for _, i := range a.types[t].nodes {
		ids = append(ids, a.existing[i].ID)
	}
	return ids
}

// force places the new services whose place is decided already: those tied
// to existing services and those that go everywhere. It records every reason
// that makes them impossible.
func (a *adder) force() {
	e := a.e
	for ui := range e.units {
		u := &e.units[ui]
		if u.broken {
			continue
		}
		var old, nw []string
		for _, s := range u.services {
			if a.isNew[s] {
				nw = append(nw, s)
			} else {
				old = append(old, s)
			}
		}
		switch {
		case len(nw) == 0:
			continue
		case len(old) == 0 && u.free:
			a.freeNew = append(a.freeNew, nw...)
			continue
		case len(old) == 0:
			a.decision = append(a.decision, ui)
			continue
		}
		count := 0
		for t := range a.types {
			ty := &a.types[t]
			has := 0
			for _, s := range old {
				if ty.services[s] {
					has++
				}
			}
			if has == 0 {
				continue
			}
			if has < len(old) {
				var missing []string
				for _, s := range old {
					if !ty.services[s] {
						missing = append(missing, s)
					}
				}
				a.reasons = append(a.reasons, Reason{Code: CodeCoexistConflict, Services: u.services, Constraints: mustPaths(u.must), Nodes: a.typeNodeIDs(t),
					Message: fmt.Sprintf("adding %s ties %s together on every node (mustCoexist), but %s %s run %s without %s",
						joinAnd(nw), joinAnd(old), plural("node", len(ty.nodes)), joinAnd(a.typeNodeIDs(t)), joinAnd(diff(old, missing)), joinAnd(missing))})
				continue
			}
			if !u.hw.has(ty.hw) || !u.img.has(ty.img) {
				what, code := "hardware type "+ty.layout.HardwareType, CodeHardwareConflict
				if u.hw.has(ty.hw) {
					what, code = "image type "+ty.layout.ImageType, CodeImageConflict
				}
				a.reasons = append(a.reasons, Reason{Code: code, Services: u.services, Constraints: mustPaths(u.must), Nodes: a.typeNodeIDs(t),
					Message: fmt.Sprintf("%s must coexist with %s, but %s %s %s use %s, which %s may not use",
						joinAnd(nw), joinAnd(old), plural("node", len(ty.nodes)), joinAnd(a.typeNodeIDs(t)), map[bool]string{true: "uses", false: "use"}[len(ty.nodes) == 1], what, joinAnd(nw))})
				continue
			}
			ty.forced = append(ty.forced, nw...)
			count += len(ty.nodes)
		}
		if count < u.lo && count <= u.hi && a.maxNew > 0 {
			// Old services run on every node of their layouts already, so
			// the unit can only grow onto new nodes.
			a.extensions = append(a.extensions, extension{unit: ui, lo: u.lo - count, hi: u.hi - count, on: count})
			continue
		}
		for _, s := range nw {
			lo, hi := serviceBounds(e.tmpl, s)
			if count < lo || count > hi {
				a.reasons = append(a.reasons, Reason{Code: CodeQuantityConflict, Services: u.services,
					Constraints: append(mustPaths(u.must), "constraints.services."+s+".quantities"),
					Message: fmt.Sprintf("%s must coexist with %s, which %s on %s, but %s needs %d to %d nodes",
						s, joinAnd(old), map[bool]string{true: "runs", false: "run"}[len(old) == 1], nodesPhrase(count), s, lo, hi)})
			}
		}
	}
	// A forced service may complete a cantCoexist group on a node.
	decided := map[string]bool{}
	for _, ui := range a.decision {
		for _, s := range e.units[ui].services {
			decided[s] = true
		}
	}
	for gi, g := range e.tmpl.Constraints.Layout.CantCoexist {
		applies, hasNew := len(g) >= 2, false
		for _, s := range g {
			applies = applies && e.on[s] && !decided[s]
			hasNew = hasNew || a.isNew[s]
		}
		if !applies || !hasNew {
			continue
		}
		for t := range a.types {
			ty := &a.types[t]
			all := true
			for _, s := range g {
				if !ty.services[s] && !contains(ty.forced, s) && !contains(a.freeNew, s) {
					all = false
				}
			}
			if all {
				a.reasons = append(a.reasons, Reason{Code: CodeCoexistConflict, Services: sortedCopy(g), Constraints: cantPaths([]int{gi}), Nodes: a.typeNodeIDs(t),
					Message: fmt.Sprintf("adding the services would put %s together on %s, which constraints.layout.cantCoexist[%d] forbids", joinAnd(sortedCopy(g)), joinAnd(a.typeNodeIDs(t)), gi)})
			}
		}
	}
	sort.Strings(a.freeNew)
}

func diff(xs, minus []string) []string {
	var out []string
	for _, x := range xs {
		if !contains(minus, x) {
			out = append(out, x)
		}
	}
	return out
}

// problem builds the layout problem: one pseudo unit per existing layout
// (exactly its nodes' rows, on its own types) and one unit per decision unit.
// Existing layouts get a private type each (a bit after the real types), so
// no two of them share a row and a new service fits one exactly when it
// allows that layout's hardware and image.
func (a *adder) problem(b *budget) (*problem, []int, []int) {
	e := a.e
	nh, ni, nt := e.hw.ncand, e.img.ncand, len(a.types)
	hwAll, imgAll := newBitset(nh+nt), newBitset(ni+nt)
	for i := 0; i < nh+nt; i++ {
		hwAll.add(i)
	}
	for i := 0; i < ni+nt; i++ {
		imgAll.add(i)
	}
	hwRows, imgRows := newBitset(nh+nt), newBitset(ni+nt)
	for i := 0; i < nh; i++ {
		hwRows.add(i)
	}
	for i := 0; i < ni; i++ {
		imgRows.add(i)
	}
	var units []punit
	var lo, hi []int
	for t := range a.types {
		ty := &a.types[t]
		h, im := newBitset(nh+nt), newBitset(ni+nt)
		h.add(nh + t)
		im.add(ni + t)
		svcs := uniqueSorted(append(append(append([]string(nil), ty.layout.Services...), ty.forced...), a.freeNew...))
		units = append(units, punit{lo: len(ty.nodes), hi: len(ty.nodes), hw: h, img: im, pseudo: true, services: svcs, def: -1,
			label: fmt.Sprintf("the %s running %s", nodesPhrase(len(ty.nodes)), joinAnd(ty.layout.Services))})
		lo, hi = append(lo, len(ty.nodes)), append(hi, len(ty.nodes))
	}
	toP := map[int]int{}
	for _, ui := range a.decision {
		u := &e.units[ui]
		pu := e.punit(ui, u.lo, u.hi)
		h, im := newBitset(nh+nt), newBitset(ni+nt)
		for i := 0; i < nh; i++ {
			if u.hw.has(i) {
				h.add(i)
			}
		}
		for i := 0; i < ni; i++ {
			if u.img.has(i) {
				im.add(i)
			}
		}
		for t := range a.types {
			if u.hw.has(a.types[t].hw) {
				h.add(nh + t)
			}
			if u.img.has(a.types[t].img) {
				im.add(ni + t)
			}
		}
		pu.hw, pu.img = h, im
		toP[ui] = len(units)
		units = append(units, pu)
		lo, hi = append(lo, u.lo), append(hi, u.hi)
	}
	// An extension goes on new rows only: its hardware and image bits are
	// candidates, never an existing layout's private type.
	extP := map[int]int{}
	for _, x := range a.extensions {
		u := &e.units[x.unit]
		pu := e.punit(x.unit, x.lo, x.hi)
		h, im := newBitset(nh+nt), newBitset(ni+nt)
		for i := 0; i < nh; i++ {
			if u.hw.has(i) {
				h.add(i)
			}
		}
		for i := 0; i < ni; i++ {
			if u.img.has(i) {
				im.add(i)
			}
		}
		pu.hw, pu.img = h, im
		pu.label = u.label() + " on new nodes"
		extP[x.unit] = len(units)
		units = append(units, pu)
		lo, hi = append(lo, x.lo), append(hi, x.hi)
	}
	var edges []edgeDef
	for gi, g := range e.tmpl.Constraints.Layout.CantCoexist {
		applies := len(g) >= 2
		var d, onNew []int
		var rest []string
		allExtend := true
		for _, s := range g {
			applies = applies && e.on[s]
			if pu, ok := toP[e.unitOf[s]]; ok {
				if !containsInt(d, pu) {
					d = append(d, pu)
				}
			} else {
				rest = append(rest, s)
				if pu, ok := extP[e.unitOf[s]]; ok {
					if !containsInt(onNew, pu) {
						onNew = append(onNew, pu)
					}
				} else {
					allExtend = false
				}
			}
		}
		if !applies {
			continue
		}
		// On new rows the services outside decision units can only be
		// extensions' (free services are in no group).
		if len(rest) > 0 && allExtend && len(d)+len(onNew) >= 2 {
			us := append(append([]int(nil), d...), onNew...)
			sort.Ints(us)
			edges = append(edges, edgeDef{units: us, groups: []int{gi}})
		}
		if len(d) == 0 || (len(rest) == 0 && len(d) == 1) {
			continue
		}
		sort.Ints(d)
		if len(rest) == 0 {
			edges = append(edges, edgeDef{units: d, groups: []int{gi}})
			continue
		}
		for t := range a.types {
			all := true
			for _, s := range rest {
				if !units[t].hasService(s) {
					all = false
				}
			}
			if all {
				edges = append(edges, edgeDef{units: append([]int{t}, d...), groups: []int{gi}})
			}
		}
	}
	return newProblem(units, minimalEdges(edges), hwAll, imgAll, hwRows, imgRows, len(e.free) > 0, b), lo, hi
}

func (u *punit) hasService(s string) bool {
	i := sort.SearchStrings(u.services, s)
	return i < len(u.services) && u.services[i] == s
}

func (a *adder) solve(b *budget, cat Catalog, cl *Cluster) (*Layout, error) {
	p, lo, hi := a.problem(b)
	n := len(a.existing)
	coverable := func(k int) (bool, error) {
		m := n + k
		for u := range p.units {
			if lo[u] > min(hi[u], m) {
				return false, nil
			}
		}
		for ci := range p.comps {
			if ok, err := p.cover(ci, lo, m); !ok || err != nil {
				return false, err
			}
		}
		return true, nil
	}
	ok, err := coverable(0)
	if err != nil {
		return nil, err
	}
	k := 0
	if !ok && a.maxNew > 0 {
		// The fewest new nodes: coverability only improves with more rows.
		ok, err = coverable(a.maxNew)
		if err != nil {
			return nil, err
		}
		if ok {
			l, r := 1, a.maxNew
			for l < r {
				mid := (l + r) / 2
				good, err := b.probe(func() (bool, error) { return coverable(mid) })
				if err != nil {
					return nil, err
				}
				if good {
					r = mid
				} else {
					l = mid + 1
				}
			}
			k = l
		}
	}
	if ok {
		ok, err = p.feasible(lo, hi, n+k)
		if err != nil {
			return nil, err
		}
	} else {
		k = a.maxNew
	}
	m := n + k
	if !ok {
		rs := a.roomReasons(p, lo)
		if len(rs) == 0 {
			w := wording{have: func(int) string {
				if a.maxNew == 0 {
					return "the cluster has " + nodesPhrase(n) + " and no new nodes were allowed"
				}
				return fmt.Sprintf("the cluster has %s and may get at most %d new", nodesPhrase(n), a.maxNew)
			}}
			rs, err = p.explain(lo, hi, m, w)
			if err != nil {
				return nil, err
			}
		}
		return nil, &NoLayoutError{Reasons: rs}
	}
	c, err := p.chooseCounts(lo, hi, m)
	if err != nil {
		return nil, err
	}
	segs, err := p.arrange(c, m)
	if err != nil {
		return nil, err
	}
	return a.apply(p, segs, cat, cl), nil
}

// roomReasons finds new services that need more nodes than could ever take
// them: the clearest explanation when it applies.
func (a *adder) roomReasons(p *problem, lo []int) []Reason {
	var rs []Reason
	nt := len(a.types)
	firstExt := nt + len(a.decision)
	for i, x := range a.extensions {
		u := firstExt + i
		if lo[u] <= a.maxNew {
			continue
		}
		var old, nw []string
		for _, s := range a.e.units[x.unit].services {
			if a.isNew[s] {
				nw = append(nw, s)
			} else {
				old = append(old, s)
			}
		}
		pu := &p.units[u]
		rs = append(rs, Reason{Code: CodeNoRoom, Services: pu.services, Constraints: append(mustPaths(a.e.units[x.unit].must), quantityPath(pu.loFrom, "min")...),
			Message: fmt.Sprintf("%s must coexist with %s, which %s on %s, and needs at least %d, so %d more %s must run %s, but at most %d new %s allowed",
				joinAnd(nw), joinAnd(old), map[bool]string{true: "runs", false: "run"}[len(old) == 1], nodesPhrase(x.on), x.on+x.lo,
				x.lo, plural("node", x.lo), joinAnd(a.e.units[x.unit].services), a.maxNew, map[bool]string{true: "node is", false: "nodes are"}[a.maxNew == 1])})
	}
	for u := nt; u < firstExt; u++ {
		room := a.maxNew
		var blocked []string
		var ids []string
		for t := 0; t < nt; t++ {
			set := newBitset(len(p.units))
			set.add(t)
			if p.fits(set, p.units[t].hw, p.units[t].img, u) {
				room += len(a.types[t].nodes)
			} else {
				blocked = append(blocked, a.types[t].layout.Services...)
				ids = append(ids, a.typeNodeIDs(t)...)
			}
		}
		if lo[u] <= room {
			continue
		}
		pu := &p.units[u]
		extra := ""
		if a.maxNew > 0 {
			extra = fmt.Sprintf(" and at most %d new", a.maxNew)
		}
		rs = append(rs, Reason{Code: CodeNoRoom, Services: pu.services, Constraints: append(quantityPath(pu.loFrom, "min"), pu.typePaths...), Nodes: ids,
			Message: fmt.Sprintf("%s needs at least %s but only %d of the cluster's %s%s can run it: the others run services it may not coexist with (%s) or use a hardware or image type it may not use",
				pu.label, nodesPhrase(lo[u]), room-a.maxNew, nodesPhrase(len(a.existing)), extra, strings.Join(uniqueSorted(blocked), ", "))})
	}
	return rs
}

// apply turns the rows into the new cluster: each existing layout's rows go
// to its nodes oldest first; rows without an existing layout are new nodes.
func (a *adder) apply(p *problem, segs []seg, cat Catalog, cl *Cluster) *Layout {
	e := a.e
	nt := len(a.types)
	next := make([]int, nt)
	nodes := a.existing
	var added []Group
	changed := make([][]string, len(nodes))
	for _, s := range segs {
		ty := -1
		var svcs []string
		for _, u := range s.set.members() {
			if u < nt {
				ty = u
			} else {
				svcs = append(svcs, p.units[u].services...)
			}
		}
		if ty < 0 {
			services := uniqueSorted(append(svcs, e.free...))
			added = append(added, Group{Count: s.n, NodeLayout: domain.NodeLayout{
				HardwareType: e.hw.names[s.hw.first()], ImageType: e.img.names[s.img.first()], Services: services}})
			continue
		}
		extra := uniqueSorted(append(append(svcs, a.types[ty].forced...), a.freeNew...))
		if len(extra) == 0 {
			next[ty] += s.n
			continue
		}
		// The run's nodes all had one layout and all gain extra: merge once,
		// then give each node its own clipped part of one backing array.
		merged := uniqueSorted(append(append([]string(nil), a.types[ty].layout.Services...), extra...))
		k, x := len(merged), len(extra)
		backing := make([]string, k*s.n)
		addedBacking := make([]string, x*s.n)
		for i := 0; i < s.n; i++ {
			ni := a.types[ty].nodes[next[ty]]
			next[ty]++
			svcs := backing[i*k : (i+1)*k : (i+1)*k]
			copy(svcs, merged)
			nodes[ni].Services = svcs
			add := addedBacking[i*x : (i+1)*x : (i+1)*x]
			copy(add, extra)
			changed[ni] = add
		}
	}
	var changes []NodeChange
	for i := range nodes {
		if add := changed[i]; add != nil {
			changes = append(changes, NodeChange{ID: nodes[i].ID, Added: add})
		}
	}
	first := nodes[len(nodes)-1].Num + 1
	all, fresh := appendNewNodes(nodes, cl.ID, cl.Provider, cat, mergeGroups(added), first)
	return &Layout{Groups: groupsOfNodes(all), Nodes: all, NewNodes: nodeIDs(fresh), Changed: changes}
}

// existingReasons lists what already breaks the template on the cluster as
// it is: adding services changes no old service's node count and moves
// nothing, so a broken node layout, an old service outside its quantities
// or a size below the minimum would stay broken.
func existingReasons(tmpl *domain.ClusterTemplate, provider string, current []string, existing []domain.Node) []Reason {
	var rs []Reason
	for _, r := range nodeReasons(tmpl, provider, current, existing, nil, nil) {
		r.Message = "the existing nodes already break the template: " + r.Message
		rs = append(rs, r)
	}
	counts := serviceCounts(existing)
	for _, s := range current {
		lo, hi := serviceBounds(tmpl, s)
		switch {
		case counts[s] < lo:
			rs = append(rs, Reason{Code: CodeBelowMinimum, Services: []string{s}, Constraints: quantityPath(s, "min"),
				Message: fmt.Sprintf("%s runs on %s, below its minimum of %d; adding services cannot fix that, expand the cluster first", s, nodesPhrase(counts[s]), lo)})
		case counts[s] > hi:
			rs = append(rs, Reason{Code: CodeAboveMaximum, Services: []string{s}, Constraints: quantityPath(s, "max"),
				Message: fmt.Sprintf("%s runs on %s, above its maximum of %d; adding services cannot fix that, shrink the cluster first", s, nodesPhrase(counts[s]), hi)})
		}
	}
	if lo, hi := sizeBounds(tmpl); len(existing) < lo {
		rs = append(rs, Reason{Code: CodeBelowMinimum, Constraints: []string{"constraints.size.min"},
			Message: fmt.Sprintf("template %q needs at least %s but the cluster has %d; expand the cluster first", tmpl.Name, nodesPhrase(lo), len(existing))})
	} else if len(existing) > hi {
		rs = append(rs, Reason{Code: CodeAboveMaximum, Constraints: []string{"constraints.size.max"},
			Message: fmt.Sprintf("template %q allows at most %s but the cluster has %d; shrink the cluster first", tmpl.Name, nodesPhrase(hi), len(existing))})
	}
	return rs
}
