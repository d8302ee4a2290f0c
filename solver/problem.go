package solver

import (
	"errors"
	"sort"
)

// punit is a unit as one problem sees it: how many rows (nodes) it must and
// may occupy and which hardware and image types it allows.
type punit struct {
	lo, hi  int
	hw, img bitset
	// pseudo marks an existing node layout in add-services: it occupies
	// exactly its nodes' rows and is never moved by the spreading step.
	pseudo   bool
	services []string
	label    string
	def      int // the env unit, or -1 for a pseudo unit
	// loFrom and hiFrom name the services whose quantities set lo and hi,
	// and paths the template constraints that restrict the unit's types;
	// explanations quote them.
	loFrom, hiFrom string
	typePaths      []string
}

// problem is the combinatorial core shared by every operation: place units on
// rows (nodes) so that each unit u is on between lo[u] and hi[u] rows, no row
// holds a whole edge (cantCoexist group), every row's units share a hardware
// and an image type, and (unless allowEmpty) no row is empty.
//
// The rows a unit may share form a downward-closed family: any subset of a
// valid row is valid. So a layout with m rows exists exactly when
//
//	(a) lo[u] <= min(hi[u], m) for every unit,
//	(b) allowEmpty, or the sum of min(hi[u], m) is at least m, and
//	(c) the lower bounds can be covered with at most m valid rows,
//
// because a cover can be split into more rows (one unit at a time) and padded
// with single-unit rows up to the upper bounds. (c) only concerns units that
// conflict with something, and splits into independent components; a unit
// that conflicts with nothing fits on any row and is "universal".
type problem struct {
	units      []punit
	edges      []bitset // over units
	edgeGroups [][]int  // the cantCoexist groups behind each edge
	unitEdges  [][]int
	adj        []bitset // pairwise conflicts: a 2-edge or disjoint types
	hwAll      bitset   // every type a unit may allow
	imgAll     bitset
	hwRows     bitset // the types a row without units may use
	imgRows    bitset
	allowEmpty bool
	rank       []int   // position in priority order
	comps      [][]int // components of conflicting units, each in priority order
	compOf     []int   // component of each unit, -1 when universal
	universal  []int   // units that conflict with nothing, in priority order
	patterns   [][]bitset
	patDone    []bool
	patTooBig  []bool // a probe ran out of budget enumerating the patterns
	sets       [][]boundSet
	b          *budget
}

func newProblem(units []punit, edges []edgeDef, hwAll, imgAll, hwRows, imgRows bitset, allowEmpty bool, b *budget) *problem {
	n := len(units)
	p := &problem{units: units, hwAll: hwAll, imgAll: imgAll, hwRows: hwRows, imgRows: imgRows, allowEmpty: allowEmpty, b: b,
		unitEdges: make([][]int, n), adj: make([]bitset, n), rank: make([]int, n), compOf: make([]int, n)}
	for _, e := range edges {
		set := newBitset(n)
		for _, u := range e.units {
			set.add(u)
		}
		for _, u := range e.units {
			p.unitEdges[u] = append(p.unitEdges[u], len(p.edges))
		}
		p.edges = append(p.edges, set)
		p.edgeGroups = append(p.edgeGroups, e.groups)
	}
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	// Priority: existing layouts first, then the most constrained units
	// (smallest maximum, then largest minimum), then by name.
	sort.SliceStable(order, func(i, j int) bool {
		a, c := &units[order[i]], &units[order[j]]
		if a.pseudo != c.pseudo {
			return a.pseudo
		}
		if a.hi != c.hi {
			return a.hi < c.hi
		}
		if a.lo != c.lo {
			return a.lo > c.lo
		}
		return a.label < c.label
	})
	for i, u := range order {
		p.rank[u] = i
	}
	parent := make([]int, n)
	for i := range parent {
		parent[i] = i
	}
	var find func(int) int
	find = func(i int) int {
		for parent[i] != i {
			parent[i] = parent[parent[i]]
			i = parent[i]
		}
		return i
	}
	union := func(a, c int) {
		ra, rc := find(a), find(c)
		if ra != rc {
			parent[max(ra, rc)] = min(ra, rc)
		}
	}
	for _, e := range edges {
		for _, u := range e.units[1:] {
			union(e.units[0], u)
		}
	}
	// Type restrictions tie units together: whether three restricted units
	// share a type is not a pairwise question.
	firstRestricted := -1
	for u := range units {
		if p.restricted(u) {
			if firstRestricted < 0 {
				firstRestricted = u
			} else {
				union(firstRestricted, u)
			}
		}
	}
	members := map[int][]int{}
	for _, u := range order {
		r := find(u)
		members[r] = append(members[r], u)
	}
	var roots []int
	for r := range members {
		roots = append(roots, r)
	}
	sort.Slice(roots, func(i, j int) bool { return p.rank[members[roots[i]][0]] < p.rank[members[roots[j]][0]] })
	for _, r := range roots {
		ms := members[r]
		if len(ms) == 1 && len(p.unitEdges[ms[0]]) == 0 {
			p.compOf[ms[0]] = -1
			p.universal = append(p.universal, ms[0])
			continue
		}
		for _, u := range ms {
			p.compOf[u] = len(p.comps)
		}
		p.comps = append(p.comps, ms)
	}
	for u := range units {
		p.adj[u] = newBitset(n)
	}
	for _, comp := range p.comps {
		for i, u := range comp {
			for _, v := range comp[i+1:] {
				if p.conflictPair(u, v) {
					p.adj[u].add(v)
					p.adj[v].add(u)
				}
			}
		}
	}
	p.patterns = make([][]bitset, len(p.comps))
	p.patDone = make([]bool, len(p.comps))
	p.patTooBig = make([]bool, len(p.comps))
	p.sets = make([][]boundSet, len(p.comps))
	return p
}

func (p *problem) restricted(u int) bool {
	return !p.units[u].hw.equal(p.hwAll) || !p.units[u].img.equal(p.imgAll)
}

func (p *problem) conflictPair(u, v int) bool {
	if !p.units[u].hw.intersects(p.units[v].hw) || !p.units[u].img.intersects(p.units[v].img) {
		return true
	}
	for _, ei := range p.unitEdges[u] {
		if e := p.edges[ei]; e.count() == 2 && e.has(v) {
			return true
		}
	}
	return false
}

// fits reports whether unit u may join a row holding set, whose units allow
// the types hw and img.
func (p *problem) fits(set, hw, img bitset, u int) bool {
	pu := &p.units[u]
	if !hw.intersects(pu.hw) || !img.intersects(pu.img) {
		return false
	}
	uw, ub := u>>6, uint64(1)<<(uint(u)&63)
next:
	for _, ei := range p.unitEdges[u] {
		e := p.edges[ei]
		for w := range e {
			x := e[w]
			if w == uw {
				x &^= ub
			}
			if x&^set[w] != 0 {
				continue next
			}
		}
		return false
	}
	return true
}

// seg is a run of identical rows.
type seg struct {
	set     bitset
	hw, img bitset
	n       int
}

func (p *problem) rowMasks(set bitset) (hw, img bitset) {
	hw, img = p.hwRows.clone(), p.imgRows.clone()
	first := true
	for _, u := range set.members() {
		if first {
			hw, img = p.units[u].hw.clone(), p.units[u].img.clone()
			first = false
			continue
		}
		hw, img = hw.and(p.units[u].hw), img.and(p.units[u].img)
	}
	return hw, img
}

// fitOrders is how many unit orders first-fit tries before the exact search.
const fitOrders = 2

// firstFit places the units of one component in one of fitOrders orders,
// each on the first rows that can take it, opening rows only when none can.
// Order 0 is largest demand first; order 1 is most conflicted first (the
// units in most edges and pairwise conflicts), which packs groups of three
// or more better. It gives up (rows > limit) as soon as it needs more than
// limit rows.
func (p *problem) firstFit(comp []int, b []int, limit, variant int) ([]seg, int, error) {
	order := make([]int, 0, len(comp))
	for _, u := range comp {
		if b[u] > 0 {
			order = append(order, u)
		}
	}
	degree := func(u int) int { return len(p.unitEdges[u]) + p.adj[u].count() }
	sort.SliceStable(order, func(i, j int) bool {
		a, c := order[i], order[j]
		if p.units[a].pseudo != p.units[c].pseudo {
			return p.units[a].pseudo
		}
		if variant == 1 && degree(a) != degree(c) {
			return degree(a) > degree(c)
		}
		if b[a] != b[c] {
			return b[a] > b[c]
		}
		return p.rank[a] < p.rank[c]
	})
	var segs []seg
	rows := 0
	for _, u := range order {
		need := b[u]
		if err := p.b.spend(int64(1 + len(segs))); err != nil {
			return nil, 0, err
		}
		for i := 0; i < len(segs) && need > 0; i++ {
			s := &segs[i]
			if !p.fits(s.set, s.hw, s.img, u) {
				continue
			}
			if need < s.n {
				// Every segment owns its sets, so the part that keeps its
				// units gets copies and this one is changed in place.
				rest := seg{set: s.set.clone(), hw: s.hw.clone(), img: s.img.clone(), n: s.n - need}
				segs = append(segs, seg{})
				copy(segs[i+2:], segs[i+1:])
				segs[i+1] = rest
				s = &segs[i]
				s.n = need
			}
			s.set.add(u)
			s.hw.andInto(s.hw, p.units[u].hw)
			s.img.andInto(s.img, p.units[u].img)
			need -= s.n
		}
		if need > 0 {
			set := newBitset(len(p.units))
			set.add(u)
			segs = append(segs, seg{set: set, hw: p.units[u].hw.clone(), img: p.units[u].img.clone(), n: need})
			rows += need
			if rows > limit {
				return nil, rows, nil
			}
		}
	}
	return segs, rows, nil
}

// cover reports whether the demands b of component ci fit on m rows.
func (p *problem) cover(ci int, b []int, m int) (bool, error) {
	comp := p.comps[ci]
	sum, top := 0, 0
	for _, u := range comp {
		sum += b[u]
		top = max(top, b[u])
	}
	if sum <= m {
		return true, nil
	}
	if top > m {
		return false, nil
	}
	for v := 0; v < fitOrders; v++ {
		_, rows, err := p.firstFit(comp, b, m, v)
		if err != nil || rows <= m {
			return err == nil, err
		}
	}
	w, _, err := p.maxClique(ci, b)
	if err != nil || w > m {
		return false, err
	}
	if lb, _, err := p.setBound(ci, b); err != nil || lb > m {
		return false, err
	}
	ok, _, err := p.exactCover(ci, b, m)
	return ok, err
}

// compSets returns, once per component, the sets of units of which a row
// can hold only some: every cantCoexist group of four or more (all but one
// of them), every three pairwise compatible units that cannot share a row
// anyway (a three-member group, or no common hardware or image type), and
// all the type-restricted units together (as many as one type allows at
// most).
func (p *problem) compSets(ci int) ([]boundSet, error) {
	if p.sets[ci] != nil {
		return p.sets[ci], nil
	}
	comp := p.comps[ci]
	out := []boundSet{}
	seen := map[int]bool{}
	for _, u := range comp {
		for _, ei := range p.unitEdges[u] {
			if members := p.edges[ei].members(); !seen[ei] && len(members) >= 4 {
				out = append(out, boundSet{units: members, alpha: len(members) - 1, edge: ei})
			}
			seen[ei] = true
		}
	}
	set := newBitset(len(p.units))
	for i, a := range comp {
		for j := i + 1; j < len(comp); j++ {
			c := comp[j]
			if p.adj[a].has(c) {
				continue
			}
			set.add(a)
			hw, img := p.units[a].hw, p.units[a].img
			for k := j + 1; k < len(comp); k++ {
				d := comp[k]
				if err := p.b.spend(1); err != nil {
					return nil, err
				}
				if p.adj[a].has(d) || p.adj[c].has(d) {
					continue
				}
				set.add(c)
				ok := p.fits(set, hw.and(p.units[c].hw), img.and(p.units[c].img), d)
				set.remove(c)
				if !ok {
					out = append(out, boundSet{units: []int{a, c, d}, alpha: 2, edge: -1})
				}
			}
			set.remove(a)
		}
	}
	var restricted []int
	for _, u := range comp {
		if p.restricted(u) {
			restricted = append(restricted, u)
		}
	}
	if len(restricted) >= 2 {
		alpha := 0
		for _, h := range p.hwAll.members() {
			for _, im := range p.imgAll.members() {
				n := 0
				for _, u := range restricted {
					if p.units[u].hw.has(h) && p.units[u].img.has(im) {
						n++
					}
				}
				alpha = max(alpha, n)
			}
		}
		if alpha < len(restricted) && alpha > 0 {
			out = append(out, boundSet{units: restricted, alpha: alpha, edge: -1, types: true})
		}
	}
	p.sets[ci] = out
	return out, nil
}

// setBound is the most rows any of the component's sets needs for demands b,
// and that set.
func (p *problem) setBound(ci int, b []int) (int, *boundSet, error) {
	sets, err := p.compSets(ci)
	if err != nil {
		return 0, nil, err
	}
	best := 0
	var which *boundSet
	for i := range sets {
		if n := sets[i].need(b); n > best {
			best, which = n, &sets[i]
		}
	}
	return best, which, nil
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// maxClique finds the heaviest set of pairwise conflicting units (weights b):
// no two of them share a row, so they need at least that many rows.
func (p *problem) maxClique(ci int, b []int) (int, []int, error) {
	var cands []int
	for _, u := range p.comps[ci] {
		if b[u] > 0 {
			cands = append(cands, u)
		}
	}
	sort.SliceStable(cands, func(i, j int) bool { return b[cands[i]] > b[cands[j]] })
	best := 0
	var bestSet []int
	var cur []int
	var rec func(cands []int, w int) error
	rec = func(cands []int, w int) error {
		if err := p.b.spend(1); err != nil {
			return err
		}
		if w > best {
			best = w
			bestSet = append(bestSet[:0], cur...)
		}
		rest := 0
		for _, v := range cands {
			rest += b[v]
		}
		for i, v := range cands {
			if w+rest <= best {
				return nil
			}
			rest -= b[v]
			var next []int
			for _, x := range cands[i+1:] {
				if p.adj[v].has(x) {
					next = append(next, x)
				}
			}
			cur = append(cur, v)
			err := rec(next, w+b[v])
			cur = cur[:len(cur)-1]
			if err != nil {
				return err
			}
		}
		return nil
	}
	err := rec(cands, 0)
	return best, bestSet, err
}

// compPatterns lists the maximal valid rows of a component. Any cover can use
// maximal rows only (extend each row; covering more than needed is harmless),
// so the exact search chooses how many rows of each pattern to use.
func (p *problem) compPatterns(ci int) ([]bitset, error) {
	if p.patDone[ci] {
		return p.patterns[ci], nil
	}
	comp := p.comps[ci]
	pos := make(map[int]int, len(comp))
	for i, u := range comp {
		pos[u] = i
	}
	// lastPartner[u]: the last position of a unit that can keep u off a row
	// with it. Leaving u out of a row is only ever maximal if such a unit may
	// still join later.
	lastPartner := make(map[int]int, len(comp))
	for _, u := range comp {
		last := -1
		for _, ei := range p.unitEdges[u] {
			for _, v := range p.edges[ei].members() {
				if v != u {
					last = max(last, pos[v])
				}
			}
		}
		if p.restricted(u) {
			for _, v := range comp {
				if v != u && p.restricted(v) {
					last = max(last, pos[v])
				}
			}
		}
		lastPartner[u] = last
	}
	if p.patTooBig[ci] && p.b.probeEnd > 0 {
		// A probe could not enumerate them before; neither will this one.
		return nil, errProbeSpent
	}
	set := newBitset(len(p.units))
	var out []bitset
	// One pair of type sets per depth, so the recursion allocates nothing.
	hwAt, imgAt := make([]bitset, len(comp)+1), make([]bitset, len(comp)+1)
	for i := range hwAt {
		hwAt[i], imgAt[i] = newBitset(len(p.hwAll)*64), newBitset(len(p.imgAll)*64)
	}
	var rec func(i int, hw, img bitset) error
	rec = func(i int, hw, img bitset) error {
		if err := p.b.spend(1); err != nil {
			return err
		}
		if i == len(comp) {
			// Checking maximality tries every unit of the component.
			if err := p.b.spend(int64(len(comp) / 4)); err != nil {
				return err
			}
			for _, v := range comp {
				if !set.has(v) && p.fits(set, hw, img, v) {
					return nil
				}
			}
			out = append(out, set.clone())
			return nil
		}
		u := comp[i]
		if p.fits(set, hw, img, u) {
			set.add(u)
			err := rec(i+1, hw.andInto(hwAt[i+1], p.units[u].hw), img.andInto(imgAt[i+1], p.units[u].img))
			set.remove(u)
			if err != nil || lastPartner[u] < i {
				return err
			}
		}
		return rec(i+1, hw, img)
	}
	if err := rec(0, p.hwAll, p.imgAll); err != nil {
		if errors.Is(err, errProbeSpent) {
			p.patTooBig[ci] = true
		}
		return nil, err
	}
	p.patterns[ci], p.patDone[ci] = out, true
	return out, nil
}

// needyPatterns returns the maximal rows of component ci restricted to the
// units with demand in b, without repeats or rows contained in another, the
// most units first; and those units and their total demand.
func (p *problem) needyPatterns(ci int, b []int) (pats []bitset, needyUnits []int, sumR int, err error) {
	all, err := p.compPatterns(ci)
	if err != nil {
		return nil, nil, 0, err
	}
	needy := newBitset(len(p.units))
	for _, u := range p.comps[ci] {
		if b[u] > 0 {
			needy.add(u)
			needyUnits = append(needyUnits, u)
			sumR += b[u]
		}
	}
	var cand []bitset
	for _, pat := range all {
		if q := pat.and(needy); !q.isEmpty() {
			cand = append(cand, q)
		}
	}
	sort.SliceStable(cand, func(i, j int) bool {
		ci, cj := cand[i].count(), cand[j].count()
		if ci != cj {
			return ci > cj
		}
		return cand[i].less(cand[j])
	})
	for _, q := range cand {
		if err := p.b.spend(int64(1 + len(pats)/8)); err != nil {
			return nil, nil, 0, err
		}
		dominated := false
		for _, k := range pats {
			if q.subsetOf(k) {
				dominated = true
				break
			}
		}
		if !dominated {
			pats = append(pats, q)
		}
	}
	return pats, needyUnits, sumR, nil
}

// exactCover decides, by a bounded exhaustive search, whether the demands b
// of component ci fit on m rows, and returns the patterns and their counts.
func (p *problem) exactCover(ci int, b []int, m int) (bool, []seg, error) {
	pats, needyUnits, sumR, err := p.needyPatterns(ci, b)
	if err != nil {
		return false, nil, err
	}
	need, weights, lpRows, err := p.lpBoundOn(pats, needyUnits, b)
	if err != nil || need > m {
		return false, nil, err
	}
	if segs, ok, err := p.roundCover(ci, pats, lpRows, b, m); err != nil || ok {
		return ok, segs, err
	}
	n := len(p.units)
	s := &coverSearch{p: p, m: m, r: append([]int(nil), b...), sumR: sumR, needy: needyUnits, weights: weights,
		pats: pats, lastPat: make([]int, n), y: make([]int, len(pats)), maxSizeFrom: make([]int, len(pats)+1)}
	for i := range s.lastPat {
		s.lastPat[i] = -1
	}
	for i, pat := range pats {
		us := pat.members()
		s.patUnits = append(s.patUnits, us)
		for _, u := range us {
			s.lastPat[u] = i
		}
	}
	s.maxSizeFrom[len(pats)] = 1
	for i := len(pats) - 1; i >= 0; i-- {
		s.maxSizeFrom[i] = max(s.maxSizeFrom[i+1], len(s.patUnits[i]))
	}
	s.saved = make([][]int, len(pats))
	for i := range pats {
		s.saved[i] = make([]int, len(s.patUnits[i]))
	}
	if s.bounds, err = p.boundSets(ci, needyUnits); err != nil {
		return false, nil, err
	}
	work := 2*len(needyUnits) + len(s.weights)
	for _, bs := range s.bounds {
		work += len(bs.units)
	}
	s.stepCost = int64(1 + work/16)
	ok, err := s.dfs(0, 0)
	if !ok || err != nil {
		return false, nil, err
	}
	var segs []seg
	for i, y := range s.y {
		if y > 0 {
			segs = append(segs, seg{set: pats[i].clone(), n: y})
		}
	}
	return true, p.trim(segs, b), nil
}

type coverSearch struct {
	p           *problem
	m           int
	r           []int // remaining demand per unit
	sumR        int
	needy       []int
	pats        []bitset
	patUnits    [][]int
	lastPat     []int // the last pattern holding each unit
	maxSizeFrom []int
	y           []int
	saved       [][]int
	bounds      []boundSet
	// weights are the linear relaxation's at the root: they stay a valid
	// bound for every remaining demand, whatever rows are already chosen.
	weights lpWeights
	// stepCost is what one search node spends: it reads every bound set.
	stepCost int64
}

// boundSet is a set of units of which a row holds at most alpha: its
// remaining demand needs at least sum/alpha more rows.
type boundSet struct {
	units []int
	alpha int
	edge  int  // the cantCoexist edge it is, or -1
	types bool // the type-restricted units of a component
}

func (b *boundSet) need(r []int) int {
	sum := 0
	for _, u := range b.units {
		sum += r[u]
	}
	return ceilDiv(sum, b.alpha)
}

// boundSets lists the maximal cliques of pairwise conflicting units (alpha 1)
// and the component's other sets (compSets).
func (p *problem) boundSets(ci int, units []int) ([]boundSet, error) {
	var out []boundSet
	var rec func(r, pset, x []int) error
	rec = func(r, pset, x []int) error {
		if err := p.b.spend(1); err != nil {
			return err
		}
		if len(pset) == 0 && len(x) == 0 {
			if len(r) >= 2 {
				out = append(out, boundSet{units: append([]int(nil), r...), alpha: 1, edge: -1})
			}
			return nil
		}
		for len(pset) > 0 {
			v := pset[0]
			var np, nx []int
			for _, w := range pset[1:] {
				if p.adj[v].has(w) {
					np = append(np, w)
				}
			}
			for _, w := range x {
				if p.adj[v].has(w) {
					nx = append(nx, w)
				}
			}
			if err := rec(append(r, v), np, nx); err != nil {
				return err
			}
			pset = pset[1:]
			x = append(x, v)
		}
		return nil
	}
	if err := rec(nil, append([]int(nil), units...), nil); err != nil {
		return nil, err
	}
	sets, err := p.compSets(ci)
	return append(out, sets...), err
}

func (s *coverSearch) dfs(i, used int) (bool, error) {
	if err := s.p.b.spend(s.stepCost); err != nil {
		return false, err
	}
	if s.sumR == 0 {
		return true, nil
	}
	if i == len(s.pats) {
		return false, nil
	}
	left := s.m - used
	maxR := 0
	for _, u := range s.needy {
		if s.r[u] > 0 {
			if s.lastPat[u] < i {
				return false, nil
			}
			maxR = max(maxR, s.r[u])
		}
	}
	if maxR > left || (s.sumR+s.maxSizeFrom[i]-1)/s.maxSizeFrom[i] > left {
		return false, nil
	}
	if s.weights != nil && s.weights.need(s.r) > left {
		return false, nil
	}
	pat, units := s.pats[i], s.patUnits[i]
	// Sets no row of this pattern touches need rows of their own.
	apart := 0
	for k := range s.bounds {
		bs := &s.bounds[k]
		need := bs.need(s.r)
		if need > left {
			return false, nil
		}
		touches := false
		for _, u := range bs.units {
			touches = touches || pat.has(u)
		}
		if !touches {
			apart = max(apart, need)
		}
	}
	top, forced, outside := 0, 0, 0
	for _, u := range units {
		top = max(top, s.r[u])
		if s.lastPat[u] == i {
			forced = max(forced, s.r[u])
		}
	}
	for _, u := range s.needy {
		if !pat.has(u) {
			outside = max(outside, s.r[u])
		}
	}
	hiT := min(top, left-max(outside, apart))
	saved := s.saved[i]
	for t := hiT; t >= forced; t-- {
		if err := s.p.b.spend(1); err != nil {
			return false, err
		}
		for k, u := range units {
			saved[k] = s.r[u]
			d := min(s.r[u], t)
			s.r[u] -= d
			s.sumR -= d
		}
		s.y[i] = t
		ok, err := s.dfs(i+1, used+t)
		for k, u := range units {
			s.sumR += saved[k] - s.r[u]
			s.r[u] = saved[k]
		}
		if ok || err != nil {
			return ok, err
		}
	}
	s.y[i] = 0
	return false, nil
}

// trim takes units off rows until each unit u is on exactly b[u] rows, from
// the last rows up, and drops rows left empty. Rows stay valid: the family
// of valid rows is closed under subsets.
func (p *problem) trim(segs []seg, b []int) []seg {
	cov := make([]int, len(p.units))
	for _, s := range segs {
		for _, u := range s.set.members() {
			cov[u] += s.n
		}
	}
	for u := range cov {
		ex := cov[u] - b[u]
		for i := len(segs) - 1; i >= 0 && ex > 0; i-- {
			if !segs[i].set.has(u) {
				continue
			}
			x := min(ex, segs[i].n)
			without := segs[i].set.clone()
			without.remove(u)
			if x == segs[i].n {
				segs[i].set = without
			} else {
				segs[i].n -= x
				segs = append(segs, seg{})
				copy(segs[i+2:], segs[i+1:])
				segs[i+1] = seg{set: without, n: x}
			}
			ex -= x
		}
	}
	out := segs[:0]
	for _, s := range segs {
		if !s.set.isEmpty() {
			s.hw, s.img = p.rowMasks(s.set)
			out = append(out, s)
		}
	}
	return out
}

// witness returns rows for component ci holding each unit exactly b[u]
// times, on at most m rows. The caller knows they exist.
func (p *problem) witness(ci int, b []int, m int) ([]seg, error) {
	for v := 0; v < fitOrders; v++ {
		segs, rows, err := p.firstFit(p.comps[ci], b, m, v)
		if err != nil {
			return nil, err
		}
		if rows <= m {
			return segs, nil
		}
	}
	ok, segs, err := p.exactCover(ci, b, m)
	if err != nil {
		return nil, err
	}
	if !ok {
		panic("solver: a component judged feasible has no cover")
	}
	return segs, nil
}

// feasible applies the characterization in the problem's documentation.
func (p *problem) feasible(lo, hi []int, m int) (bool, error) {
	if m <= 0 {
		for u := range p.units {
			if lo[u] > 0 {
				return false, nil
			}
		}
		return m == 0, nil
	}
	total := 0
	for u := range p.units {
		h := min(hi[u], m)
		if lo[u] > h {
			return false, nil
		}
		total += h
	}
	if !p.allowEmpty && total < m {
		return false, nil
	}
	for ci := range p.comps {
		ok, err := p.cover(ci, lo, m)
		if !ok || err != nil {
			return false, err
		}
	}
	return true, nil
}

// probeCover is cover as a question of preference (see budget.probe).
func (p *problem) probeCover(ci int, b []int, m int) (bool, error) {
	return p.b.probe(func() (bool, error) { return p.cover(ci, b, m) })
}

// chooseCounts fixes how many rows each unit gets: in priority order within
// each component, as many as its maximum allows while a layout remains. The
// bounds must be feasible. Feasible counts for one unit form an interval
// (more rows only ever make the cover harder and the capacity easier), so a
// binary search finds the largest.
func (p *problem) chooseCounts(lo, hi []int, m int) ([]int, error) {
	c := append([]int(nil), lo...)
	for _, u := range p.universal {
		c[u] = min(hi[u], m)
	}
	for ci, comp := range p.comps {
		for _, u := range comp {
			h := min(hi[u], m)
			if h <= lo[u] {
				continue
			}
			c[u] = h
			ok, err := p.probeCover(ci, c, m)
			if err != nil {
				return nil, err
			}
			if ok {
				continue
			}
			l, r := lo[u], h-1
			for l < r {
				mid := (l + r + 1) / 2
				c[u] = mid
				ok, err := p.probeCover(ci, c, m)
				if err != nil {
					return nil, err
				}
				if ok {
					l = mid
				} else {
					r = mid - 1
				}
			}
			c[u] = l
		}
	}
	return c, nil
}

// arrange lays out m rows holding each unit exactly c[u] times. Components
// are laid out on their own and stacked from the first row; universal units
// take the first c[u] rows. Rows left empty when empty rows are not allowed
// are filled by moving units off shared rows.
func (p *problem) arrange(c []int, m int) ([]seg, error) {
	parts := make([][]seg, len(p.comps))
	breaks := []int{m}
	for ci := range p.comps {
		segs, err := p.witness(ci, c, m)
		if err != nil {
			return nil, err
		}
		parts[ci] = segs
		end := 0
		for _, s := range segs {
			end += s.n
			breaks = append(breaks, end)
		}
	}
	for _, u := range p.universal {
		if c[u] > 0 {
			breaks = append(breaks, c[u])
		}
	}
	sort.Ints(breaks)
	n := len(p.units)
	var out []seg
	idx := make([]int, len(parts))
	ends := make([]int, len(parts))
	for ci, segs := range parts {
		if len(segs) > 0 {
			ends[ci] = segs[0].n
		}
	}
	start := 0
	for _, end := range breaks {
		if end <= start {
			continue
		}
		set := newBitset(n)
		for ci, segs := range parts {
			for idx[ci] < len(segs) && ends[ci] <= start {
				idx[ci]++
				if idx[ci] < len(segs) {
					ends[ci] += segs[idx[ci]].n
				}
			}
			if idx[ci] < len(segs) {
				for w, x := range segs[idx[ci]].set {
					set[w] |= x
				}
			}
		}
		for _, u := range p.universal {
			if c[u] > start {
				set.add(u)
			}
		}
		hw, img := p.rowMasks(set)
		out = append(out, seg{set: set, hw: hw, img: img, n: end - start})
		start = end
	}
	if !p.allowEmpty {
		out = p.fillEmptyRows(out)
	}
	return out, nil
}

// fillEmptyRows moves units from shared rows to empty ones: each move takes
// the lowest-priority unit of the last shared run. Valid because the unit
// alone is a valid row and the run without it is too; it ends because the
// counts hold at least one placement per row.
func (p *problem) fillEmptyRows(segs []seg) []seg {
	empty := 0
	full := segs[:0:0]
	for _, s := range segs {
		if s.set.isEmpty() {
			empty += s.n
		} else {
			full = append(full, s)
		}
	}
	for empty > 0 {
		i := len(full) - 1
		for i >= 0 && full[i].set.count() < 2 {
			i--
		}
		if i < 0 {
			panic("solver: empty rows remain but no row is shared")
		}
		members := full[i].set.members()
		move := -1
		for _, u := range members {
			if !p.units[u].pseudo && (move < 0 || p.rank[u] > p.rank[move]) {
				move = u
			}
		}
		if move < 0 {
			move = members[len(members)-1]
		}
		x := min(empty, full[i].n)
		without := full[i].set.clone()
		without.remove(move)
		hw, img := p.rowMasks(without)
		part := seg{set: without, hw: hw, img: img, n: x}
		if x == full[i].n {
			full[i] = part
		} else {
			full[i].n -= x
			full = append(full, seg{})
			copy(full[i+2:], full[i+1:])
			full[i+1] = part
		}
		alone := newBitset(len(p.units))
		alone.add(move)
		full = append(full, seg{set: alone, hw: p.units[move].hw, img: p.units[move].img, n: x})
		empty -= x
	}
	return full
}
