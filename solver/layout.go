package solver

import (
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

// newNodes creates the nodes of groups, numbered from first on, with ids
// "<clusterID>-<num>" so that the same request always names them the same.
func newNodes(clusterID, provider string, cat Catalog, groups []Group, first int) []domain.Node {
	total := 0
	for _, g := range groups {
		total += g.Count
	}
	nodes := make([]domain.Node, 0, total)
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
	return nodes
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

// groupsOfNodes counts the layouts of nodes.
func groupsOfNodes(nodes []domain.Node) []Group {
	gs := make([]Group, 0, 8)
	for i := range nodes {
		gs = append(gs, Group{NodeLayout: nodes[i].NodeLayout, Count: 1})
	}
	gs = mergeGroups(gs)
	for i := range gs {
		gs[i].Services = append([]string(nil), gs[i].Services...)
	}
	sortGroups(gs)
	return gs
}

func nodeIDs(nodes []domain.Node) []string {
	out := make([]string, len(nodes))
	for i := range nodes {
		out[i] = nodes[i].ID
	}
	return out
}

// copyNodes returns a copy of nodes sorted by Num whose service slices are
// the callers' no longer.
func copyNodes(nodes []domain.Node) []domain.Node {
	out := make([]domain.Node, len(nodes))
	copy(out, nodes)
	for i := range out {
		out[i].Services = uniqueSorted(out[i].Services)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Num < out[j].Num })
	return out
}
