package solver

import (
	"fmt"
	"sort"

	"github.com/heddle-io/heddle/internal/domain"
)

// clusterSpec is what a layout is checked against.
type clusterSpec struct {
	tmpl     *domain.ClusterTemplate
	cat      Catalog
	provider string
	services []string
}

// independentCheck lists every constraint a cluster layout breaks. It shares
// no code with the solver: it reads the rules straight off the domain types,
// node by node, so that a bug in the solver's model cannot hide itself.
func independentCheck(sp clusterSpec, nodes []domain.Node) []string {
	var bad []string
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
