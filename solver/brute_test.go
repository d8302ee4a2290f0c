package solver

import (
	"fmt"

	"github.com/heddle-io/heddle/internal/domain"
)

// bruteForce decides small instances by trying everything. Like the
// checker, it shares no code with the solver. A cluster whose services break
// a cluster-level rule (serviceProblems) has no valid layout at all.
type bruteForce struct {
	clusterSpec
	servicesOK bool
	index      map[string]int
	contents   []uint // every service set (bit i: services[i]) a node may run on some usable types
	lo, hi     []int
	hw, img    []string // usable types
}

func newBruteForce(sp clusterSpec) *bruteForce {
	b := &bruteForce{clusterSpec: sp, servicesOK: len(serviceProblems(sp)) == 0, index: map[string]int{}}
	for i, s := range sp.services {
		b.index[s] = i
		q := sp.tmpl.Constraints.Services[s].Quantities
		lo, hi := q.Min, q.Max
		if lo < 1 {
			lo = 1
		}
		if hi == 0 {
			hi = domain.MaxClusterSize
		}
		b.lo, b.hi = append(b.lo, lo), append(b.hi, hi)
	}
	usable := func(compat []string, all []string, onProvider func(string) bool) []string {
		src := compat
		if len(src) == 0 {
			src = all
		}
		var out []string
		for _, t := range src {
			if onProvider(t) {
				out = append(out, t)
			}
		}
		return out
	}
	var allHW, allImg []string
	for h := range sp.cat.HardwareTypes {
		allHW = append(allHW, h)
	}
	for im := range sp.cat.ImageTypes {
		allImg = append(allImg, im)
	}
	b.hw = usable(sp.tmpl.Compatibility.HardwareTypes, allHW, func(t string) bool {
		h := sp.cat.HardwareTypes[t]
		if h == nil {
			return false
		}
		_, ok := h.ProviderMap[sp.provider]
		return ok
	})
	b.img = usable(sp.tmpl.Compatibility.ImageTypes, allImg, func(t string) bool {
		im := sp.cat.ImageTypes[t]
		if im == nil {
			return false
		}
		_, ok := im.ProviderMap[sp.provider]
		return ok
	})
	for mask := uint(1); mask < 1<<len(sp.services); mask++ {
		if len(b.typesFor(mask)) > 0 {
			b.contents = append(b.contents, mask)
		}
	}
	return b
}

// layoutOK says whether a node may hold mask, ignoring types.
func (b *bruteForce) layoutOK(mask uint) bool {
	in := func(s string) (bool, bool) {
		i, ok := b.index[s]
		return ok, ok && mask&(1<<i) != 0
	}
	for _, g := range b.tmpl.Constraints.Layout.MustCoexist {
		members, present := 0, 0
		for _, s := range g {
			if on, has := in(s); on {
				members++
				if has {
					present++
				}
			}
		}
		if members >= 2 && present > 0 && present < members {
			return false
		}
	}
	for _, g := range b.tmpl.Constraints.Layout.CantCoexist {
		all := len(g) >= 2
		for _, s := range g {
			_, has := in(s)
			all = all && has
		}
		if all {
			return false
		}
	}
	return true
}

// typeOK says whether every service of mask allows hardware h and image im.
func (b *bruteForce) typeOK(mask uint, h, im string) bool {
	for i, s := range b.services {
		if mask&(1<<i) == 0 {
			continue
		}
		sc := b.tmpl.Constraints.Services[s]
		if len(sc.HardwareTypes) > 0 && !containsString(sc.HardwareTypes, h) {
			return false
		}
		if len(sc.ImageTypes) > 0 && !containsString(sc.ImageTypes, im) {
			return false
		}
	}
	return true
}

// typesFor lists the usable (hardware, image) pairs for a valid node set.
func (b *bruteForce) typesFor(mask uint) [][2]string {
	if !b.layoutOK(mask) {
		return nil
	}
	var out [][2]string
	for _, h := range b.hw {
		for _, im := range b.img {
			if b.typeOK(mask, h, im) {
				out = append(out, [2]string{h, im})
			}
		}
	}
	return out
}

func containsString(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func (b *bruteForce) sizeOK(n int) bool {
	lo, hi := b.tmpl.Constraints.Size.Min, b.tmpl.Constraints.Size.Max
	if lo < 1 {
		lo = 1
	}
	if hi == 0 {
		hi = domain.MaxClusterSize
	}
	return n >= lo && n <= hi
}

func (b *bruteForce) countsOK(count []int) bool {
	for i := range count {
		if count[i] < b.lo[i] || count[i] > b.hi[i] {
			return false
		}
	}
	return true
}

// exists reports whether rows new nodes can join nodes (already counted in
// count) to make a valid cluster.
func (b *bruteForce) exists(count []int, fixed, rows int) bool {
	if !b.servicesOK || !b.sizeOK(fixed+rows) {
		return false
	}
	count = append([]int(nil), count...)
	var dfs func(from, left int) bool
	dfs = func(from, left int) bool {
		if left == 0 {
			return b.countsOK(count)
		}
		for i := range count {
			if b.lo[i]-count[i] > left {
				return false
			}
		}
		for c := from; c < len(b.contents); c++ {
			mask := b.contents[c]
			ok := true
			for i := range count {
				if mask&(1<<i) != 0 && count[i] >= b.hi[i] {
					ok = false
				}
			}
			if !ok {
				continue
			}
			for i := range count {
				if mask&(1<<i) != 0 {
					count[i]++
				}
			}
			found := dfs(c, left-1)
			for i := range count {
				if mask&(1<<i) != 0 {
					count[i]--
				}
			}
			if found {
				return true
			}
		}
		return false
	}
	return dfs(0, rows)
}

func (b *bruteForce) maskOf(services []string) uint {
	var m uint
	for _, s := range services {
		m |= 1 << b.index[s]
	}
	return m
}

func (b *bruteForce) countNodes(nodes []domain.Node) []int {
	count := make([]int, len(b.services))
	for _, n := range nodes {
		for _, s := range n.Services {
			count[b.index[s]]++
		}
	}
	return count
}

// shrinkExists reports whether some k of nodes can go, leaving a valid
// cluster (nodes are valid one by one, so only counts and size matter).
func (b *bruteForce) shrinkExists(nodes []domain.Node, k int) bool {
	if !b.servicesOK || !b.sizeOK(len(nodes)-k) {
		return false
	}
	count := b.countNodes(nodes)
	var dfs func(from, left int) bool
	dfs = func(from, left int) bool {
		if left == 0 {
			return b.countsOK(count)
		}
		for i := from; i < len(nodes); i++ {
			m := b.maskOf(nodes[i].Services)
			for j := range count {
				if m&(1<<j) != 0 {
					count[j]--
				}
			}
			found := dfs(i+1, left-1)
			for j := range count {
				if m&(1<<j) != 0 {
					count[j]++
				}
			}
			if found {
				return true
			}
		}
		return false
	}
	return dfs(0, k)
}

// addExists reports whether the services adding can be put on the existing
// nodes, plus at most maxNew new nodes, so that the cluster is valid.
func (b *bruteForce) addExists(nodes []domain.Node, adding []string, maxNew int) bool {
	if !b.servicesOK {
		return false
	}
	addMask := b.maskOf(adding)
	count := b.countNodes(nodes)
	var dfs func(i int) bool
	dfs = func(i int) bool {
		if i == len(nodes) {
			for k := 0; k <= maxNew; k++ {
				if b.exists(count, len(nodes), k) {
					return true
				}
			}
			return false
		}
		base := b.maskOf(nodes[i].Services)
		// every subset of addMask
		for sub := addMask; ; sub = (sub - 1) & addMask {
			m := base | sub
			if b.layoutOK(m) && b.typeOK(m, nodes[i].HardwareType, nodes[i].ImageType) {
				ok := true
				for j := range count {
					if sub&(1<<j) != 0 && count[j] >= b.hi[j] {
						ok = false
					}
				}
				if ok {
					for j := range count {
						if sub&(1<<j) != 0 {
							count[j]++
						}
					}
					found := dfs(i + 1)
					for j := range count {
						if sub&(1<<j) != 0 {
							count[j]--
						}
					}
					if found {
						return true
					}
				}
			}
			if sub == 0 {
				break
			}
		}
		return false
	}
	return dfs(0)
}

// byteGen turns fuzz input into small choices; past the end it answers 0.
type byteGen struct {
	b []byte
	i int
}

func (g *byteGen) intn(n int) int {
	if n <= 1 || g.i >= len(g.b) {
		return 0
	}
	v := int(g.b[g.i])
	g.i++
	return v % n
}

func (g *byteGen) subset(names []string, nonEmpty bool) []string {
	var out []string
	for _, n := range names {
		if g.intn(2) == 1 {
			out = append(out, n)
		}
	}
	if nonEmpty && len(out) == 0 {
		out = append(out, names[g.intn(len(names))])
	}
	return out
}

func (g *byteGen) distinct(names []string, k int) []string {
	var out []string
	for len(out) < k && len(out) < len(names) {
		n := names[g.intn(len(names))]
		if containsString(out, n) {
			n = ""
			for _, m := range names {
				if !containsString(out, m) {
					n = m
					break
				}
			}
		}
		out = append(out, n)
	}
	return out
}

// randomInstance builds a small random template and catalog: up to maxSvc
// services with random quantities, type restrictions and layout groups, on
// up to three hardware and two image types, some missing from the provider;
// then random dependencies (randomDependencies). Input that runs out early
// gives an instance without dependencies.
func randomInstance(g *byteGen, maxSvc int) clusterSpec {
	ns := 1 + g.intn(maxSvc)
	var names []string
	var services []*domain.Service
	for i := 0; i < ns; i++ {
		names = append(names, fmt.Sprintf("s%d", i))
		services = append(services, svc(names[i]))
	}
	nh, ni := 1+g.intn(3), 1+g.intn(2)
	var hws, imgs []string
	for i := 0; i < nh; i++ {
		hws = append(hws, fmt.Sprintf("h%d", i))
	}
	for i := 0; i < ni; i++ {
		imgs = append(imgs, fmt.Sprintf("i%d", i))
	}
	cat := catalogOf(services, hws, imgs)
	if nh > 1 && g.intn(4) == 0 {
		delete(cat.HardwareTypes[hws[g.intn(nh)]].ProviderMap, "aws")
	}
	tmpl := &domain.ClusterTemplate{Meta: domain.Meta{Name: "random"}}
	tmpl.Compatibility.Services = names
	if g.intn(3) == 0 {
		tmpl.Compatibility.HardwareTypes = g.subset(hws, true)
	}
	tmpl.Constraints.Services = map[string]domain.ServiceConstraint{}
	for _, s := range names {
		var sc domain.ServiceConstraint
		if g.intn(2) == 0 {
			sc.Quantities = domain.Quantity{Min: g.intn(4), Max: g.intn(5)}
		}
		if g.intn(4) == 0 {
			sc.HardwareTypes = g.subset(hws, true)
		}
		if g.intn(6) == 0 {
			sc.ImageTypes = g.subset(imgs, true)
		}
		tmpl.Constraints.Services[s] = sc
	}
	if ns >= 2 {
		for i, k := 0, g.intn(3); i < k; i++ {
			tmpl.Constraints.Layout.MustCoexist = append(tmpl.Constraints.Layout.MustCoexist, g.distinct(names, 2+g.intn(2)))
		}
		for i, k := 0, g.intn(4); i < k; i++ {
			tmpl.Constraints.Layout.CantCoexist = append(tmpl.Constraints.Layout.CantCoexist, g.distinct(names, 2+g.intn(2)))
		}
	}
	tmpl.Constraints.Size = domain.SizeConstraint{Min: g.intn(3), Max: []int{0, 0, 2, 4, 6}[g.intn(5)]}
	if g.intn(3) == 0 {
		tmpl.Defaults.HardwareType = hws[g.intn(nh)]
	}
	requested := names
	if g.intn(4) == 0 {
		requested = g.subset(names, true)
	}
	tmpl.Defaults.Services = requested
	tmpl.Defaults.Provider = "aws"
	randomDependencies(g, tmpl, cat, names)
	return clusterSpec{tmpl: tmpl, cat: cat, provider: "aws", services: uniqueSorted(requested)}
}

// providedNames are names no service has but some may provide.
var providedNames = []string{"x", "y"}

// randomDependencies gives the services names random install and runtime
// requirements (on other services or on a provided name), provided names
// and conflicts, and sometimes leaves one service out of the template's
// compatibility list. Choice 0 always means "none", so the rules stay
// satisfiable often enough for layouts to be found.
func randomDependencies(g *byteGen, tmpl *domain.ClusterTemplate, cat Catalog, names []string) {
	others := func(self string) []string {
		var out []string
		for _, n := range names {
			if n != self {
				out = append(out, n)
			}
		}
		return append(out, providedNames...)
	}
	for _, s := range names {
		d := &cat.Services[s].Dependencies
		pool := others(s)
		if g.intn(4) == 1 {
			d.Runtime.Requires = append(d.Runtime.Requires, pool[g.intn(len(pool))])
		}
		if g.intn(5) == 1 {
			d.Install.Requires = append(d.Install.Requires, pool[g.intn(len(pool))])
		}
		if g.intn(2) == 1 {
			d.Provides = append(d.Provides, providedNames[g.intn(len(providedNames))])
		}
		if g.intn(8) == 1 {
			d.Conflicts = append(d.Conflicts, pool[g.intn(len(pool))])
		}
	}
	if len(names) > 1 && g.intn(8) == 1 {
		drop := names[g.intn(len(names))]
		var compat []string
		for _, n := range names {
			if n != drop {
				compat = append(compat, n)
			}
		}
		tmpl.Compatibility.Services = compat
	}
}

// randomNodes builds n nodes, each a random valid node set on random usable
// types; counts are not checked.
func randomNodes(g *byteGen, b *bruteForce, clusterID string, n int) []domain.Node {
	var nodes []domain.Node
	for i := 0; i < n && len(b.contents) > 0; i++ {
		mask := b.contents[g.intn(len(b.contents))]
		types := b.typesFor(mask)
		t := types[g.intn(len(types))]
		var svcs []string
		for j, s := range b.services {
			if mask&(1<<j) != 0 {
				svcs = append(svcs, s)
			}
		}
		num := FirstNodeNum + i
		nodes = append(nodes, domain.Node{ID: fmt.Sprintf("%s-%d", clusterID, num), ClusterID: clusterID, Num: num,
			NodeLayout: domain.NodeLayout{HardwareType: t[0], ImageType: t[1], Services: svcs}})
	}
	return nodes
}
