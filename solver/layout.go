package solver

import (
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/heddle-io/heddle/internal/domain"
)

func layoutKey(l *domain.NodeLayout) string {
	return l.HardwareType + "\x00" + l.ImageType + "\x00" + strings.Join(l.Services, "\x00")
}

// sortGroups puts groups in the canonical order documented on Layout.Groups.
func sortGroups(gs []Group) {
	sort.SliceStable(gs, func(i, j int) bool {
		a, b := &gs[i], &gs[j]
		if a.Count != b.Count {
			return a.Count < b.Count
		}
		if len(a.Services) != len(b.Services) {
			return len(a.Services) > len(b.Services)
		}
		return layoutKey(&a.NodeLayout) < layoutKey(&b.NodeLayout)
	})
}

// mergeGroups adds up groups with the same layout, keeping first positions.
func mergeGroups(gs []Group) []Group {
	pos := map[string]int{}
	var out []Group
	for _, g := range gs {
		k := layoutKey(&g.NodeLayout)
		if i, ok := pos[k]; ok {
			out[i].Count += g.Count
			continue
		}
		pos[k] = len(out)
		out = append(out, g)
	}
	return out
}

// groupsOf turns rows into node layouts: each row's units' services plus the
// free services, on the most preferred types its units allow.
func (e *env) groupsOf(p *problem, segs []seg) []Group {
	var gs []Group
	for _, s := range segs {
		if s.n == 0 {
			continue
		}
		services := append([]string(nil), e.free...)
		for _, u := range s.set.members() {
			services = append(services, p.units[u].services...)
		}
		sort.Strings(services)
		gs = append(gs, Group{Count: s.n, NodeLayout: domain.NodeLayout{
			HardwareType: e.hw.names[s.hw.first()],
			ImageType:    e.img.names[s.img.first()],
			Services:     services,
		}})
	}
	return mergeGroups(gs)
}

// appendNewNodes appends the nodes of groups to nodes, numbered from first
// on, with ids "<clusterID>-<num>" so that the same request always names them
// the same. It returns the longer slice and the new part of it.
func appendNewNodes(nodes []domain.Node, clusterID, provider string, cat Catalog, groups []Group, first int) (all, fresh []domain.Node) {
	total := 0
	for _, g := range groups {
		total += g.Count
	}
	start := len(nodes)
	nodes = slices.Grow(nodes, total)
	ids := nodeIDStrings(clusterID, first, total)
	num := first
	for _, g := range groups {
		var flavor, image, user string
		if h := cat.HardwareTypes[g.HardwareType]; h != nil {
			flavor = h.ProviderMap[provider].Flavor
		}
		if im := cat.ImageTypes[g.ImageType]; im != nil {
			image, user = im.ProviderMap[provider].Image, im.ProviderMap[provider].SSHUser
		}
		// One backing array per group; each node gets its own full slice so
		// that an append on one node never shows on another.
		k := len(g.Services)
		backing := make([]string, k*g.Count)
		for i := 0; i < g.Count; i++ {
			svcs := backing[i*k : (i+1)*k : (i+1)*k]
			copy(svcs, g.Services)
			nodes = append(nodes, domain.Node{
				ID:        ids[num-first],
				ClusterID: clusterID,
				Num:       num,
				NodeLayout: domain.NodeLayout{
					HardwareType: g.HardwareType,
					ImageType:    g.ImageType,
					Services:     svcs,
				},
				Flavor:  flavor,
				Image:   image,
				SSHUser: user,
				Status:  domain.NodePlanned,
			})
			num++
		}
	}
	return nodes, nodes[start:]
}

// nodeIDStrings returns "<clusterID>-<num>" for count nums from first. The
// ids are cut from one string, so that numbering 10,000 nodes costs two
// allocations rather than 20,000.
func nodeIDStrings(clusterID string, first, count int) []string {
	width := len(clusterID) + 1 + len(strconv.Itoa(first+count))
	buf := make([]byte, 0, count*width)
	ends := make([]int, count)
	for i := 0; i < count; i++ {
		buf = append(buf, clusterID...)
		buf = append(buf, '-')
		buf = strconv.AppendInt(buf, int64(first+i), 10)
		ends[i] = len(buf)
	}
	all := string(buf)
	ids := make([]string, count)
	start := 0
	for i, end := range ends {
		ids[i] = all[start:end]
		start = end
	}
	return ids
}

// nodeClasses groups nodes by layout, so that the work per layout is done
// once rather than once per node: layouts[c] is a distinct layout, of[i]
// the class of node i and count[c] how many nodes have layout c.
type nodeClasses struct {
	layouts []domain.NodeLayout
	of      []int
	count   []int
}

// classify finds the classes of nodes. Neighbours usually share a layout
// (nodes are numbered group by group), so a node is compared with the one
// before it and hashed only when it differs.
func classify(nodes []domain.Node) *nodeClasses {
	c := &nodeClasses{of: make([]int, len(nodes))}
	byKey := map[string]int{}
	for i := range nodes {
		l := &nodes[i].NodeLayout
		if i > 0 && sameLayout(l, &nodes[i-1].NodeLayout) {
			c.of[i] = c.of[i-1]
			c.count[c.of[i]]++
			continue
		}
		k := layoutKey(l)
		ci, ok := byKey[k]
		if !ok {
			ci = len(c.layouts)
			byKey[k] = ci
			c.layouts = append(c.layouts, *l)
			c.count = append(c.count, 0)
		}
		c.of[i] = ci
		c.count[ci]++
	}
	return c
}

func sameLayout(a, b *domain.NodeLayout) bool {
	if a.HardwareType != b.HardwareType || a.ImageType != b.ImageType || len(a.Services) != len(b.Services) {
		return false
	}
	for i := range a.Services {
		if a.Services[i] != b.Services[i] {
			return false
		}
	}
	return true
}

// groups returns the classes as groups in canonical order.
func (c *nodeClasses) groups() []Group {
	gs := make([]Group, len(c.layouts))
	for i, l := range c.layouts {
		gs[i] = Group{NodeLayout: cloneLayout(l), Count: c.count[i]}
	}
	sortGroups(gs)
	return gs
}

// groupsOfNodes counts the layouts of nodes.
func groupsOfNodes(nodes []domain.Node) []Group { return classify(nodes).groups() }

// serviceCounts says how many nodes run each service.
func serviceCounts(nodes []domain.Node) map[string]int {
	c := classify(nodes)
	counts := map[string]int{}
	for ci, l := range c.layouts {
		for _, s := range l.Services {
			counts[s] += c.count[ci]
		}
	}
	return counts
}

func nodeIDs(nodes []domain.Node) []string {
	out := make([]string, len(nodes))
	for i := range nodes {
		out[i] = nodes[i].ID
	}
	return out
}

// copyNodes returns a copy of nodes sorted by Num whose service lists are
// sorted, without repeats, and the caller's no longer. Every node gets its
// own part of one backing array, clipped so that an append on one node can
// never show on another. The copy has room for spare more nodes.
func copyNodes(nodes []domain.Node, spare int) []domain.Node {
	out := make([]domain.Node, len(nodes), len(nodes)+min(max(spare, 0), domain.MaxClusterSize))
	copy(out, nodes)
	total := 0
	for i := range out {
		total += len(out[i].Services)
	}
	backing := make([]string, 0, total)
	for i := range out {
		svcs := out[i].Services
		if !sortedUnique(svcs) {
			svcs = uniqueSorted(svcs)
		}
		start := len(backing)
		backing = append(backing, svcs...)
		out[i].Services = backing[start:len(backing):len(backing)]
	}
	if !sort.SliceIsSorted(out, func(i, j int) bool { return out[i].Num < out[j].Num }) {
		sort.SliceStable(out, func(i, j int) bool { return out[i].Num < out[j].Num })
	}
	return out
}

func sortedUnique(xs []string) bool {
	for i := 1; i < len(xs); i++ {
		if xs[i-1] >= xs[i] {
			return false
		}
	}
	return true
}
