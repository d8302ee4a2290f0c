package solver

import (
	"fmt"

	"github.com/heddle-io/heddle/internal/domain"
)

// CheckSync reports whether a cluster, as it is, satisfies another version of
// its template (the resolved one in req.Template): its services are
// compatible, present, dependency-complete and conflict-free; each node's
// hardware and image types are compatible, exist on the cluster's provider
// and are allowed for each of its services; every mustCoexist and
// cantCoexist group holds on every node; and every service's quantity and the
// cluster's size are within bounds. It returns nil, or a *NoLayoutError that
// lists every violation (nodes grouped per violation), or a *RequestError
// when the request itself is incomplete.
func CheckSync(req SyncRequest) error {
	tmpl := req.Template
	if tmpl == nil {
		return requestError(Reason{Code: CodeMissingTemplate, Message: "the template version to sync to is required"})
	}
	cl := &req.Cluster
	nodes := copyNodes(cl.Nodes)
	services := uniqueSorted(cl.Services)
	rs := checkNodes(nodes, services)
	if len(rs) > 0 {
		return &RequestError{Reasons: rs}
	}
	rs = checkServices(tmpl, req.Catalog, services)
	hwKind, imgKind := hardwareKind(req.Catalog, cl.Provider), imageKind(req.Catalog, cl.Provider)
	hw, _ := resolveTypes(hwKind, tmpl, cl.Provider, tmpl.Compatibility.HardwareTypes, "", "", nil)
	img, _ := resolveTypes(imgKind, tmpl, cl.Provider, tmpl.Compatibility.ImageTypes, "", "", nil)
	rs = append(rs, nodeReasons(tmpl, cl.Provider, services, nodes, &hw, &img)...)
	counts := serviceCounts(nodes)
	for _, s := range services {
		lo, hi := serviceBounds(tmpl, s)
		switch {
		case counts[s] == 0:
			rs = append(rs, Reason{Code: CodeServiceWithoutNodes, Services: []string{s}, Message: fmt.Sprintf("%s runs on no node", s)})
		case counts[s] < lo:
			rs = append(rs, Reason{Code: CodeQuantityBelowMinimum, Services: []string{s}, Constraints: quantityPath(s, "min"),
				Message: fmt.Sprintf("%s runs on %s but needs at least %d", s, nodesPhrase(counts[s]), lo)})
		case counts[s] > hi:
			rs = append(rs, Reason{Code: CodeQuantityAboveMaximum, Services: []string{s}, Constraints: quantityPath(s, "max"),
				Message: fmt.Sprintf("%s runs on %s but may run on at most %d", s, nodesPhrase(counts[s]), hi)})
		}
	}
	if r, bad := sizeReason(tmpl, len(nodes), "present"); bad {
		rs = append(rs, r)
	}
	if len(rs) > 0 {
		return &NoLayoutError{Reasons: rs}
	}
	return nil
}

// violations groups the nodes that break the same rule into one reason.
type violations struct {
	byKey   map[string]int
	reasons []Reason
}

func (v *violations) add(key, node string, r Reason) {
	if i, ok := v.byKey[key]; ok {
		v.reasons[i].Nodes = append(v.reasons[i].Nodes, node)
		return
	}
	v.byKey[key] = len(v.reasons)
	r.Nodes = []string{node}
	v.reasons = append(v.reasons, r)
}

// nodeReasons checks each node on its own: its types are usable (when hw and
// img are given), allowed for its services, and it holds every mustCoexist
// group wholly or not at all and no cantCoexist group wholly. Nodes breaking
// the same rule share one reason.
func nodeReasons(tmpl *domain.ClusterTemplate, provider string, services []string, nodes []domain.Node, hw, img *typeSet) []Reason {
	var rs []Reason
	v := &violations{byKey: map[string]int{}}
	on := stringSet(services)
	for i := range nodes {
		n := &nodes[i]
		if len(n.Services) == 0 {
			continue
		}
		if hw != nil && !hasKey(hw.index, n.HardwareType) {
			v.add("hw:"+n.HardwareType, n.ID, Reason{Code: CodeHardwareUnavailable, Constraints: []string{"compatibility.hardwareTypes"},
				Message: fmt.Sprintf("hardware type %q is not one template %q allows on provider %q", n.HardwareType, tmpl.Name, provider)})
		}
		if img != nil && !hasKey(img.index, n.ImageType) {
			v.add("img:"+n.ImageType, n.ID, Reason{Code: CodeImageUnavailable, Constraints: []string{"compatibility.imageTypes"},
				Message: fmt.Sprintf("image type %q is not one template %q allows on provider %q", n.ImageType, tmpl.Name, provider)})
		}
		for _, s := range n.Services {
			sc := tmpl.Constraints.Services[s]
			if len(sc.HardwareTypes) > 0 && !contains(sc.HardwareTypes, n.HardwareType) {
				v.add("shw:"+s+":"+n.HardwareType, n.ID, Reason{Code: CodeServiceHardware, Services: []string{s}, Constraints: []string{"constraints.services." + s + ".hardwareTypes"},
					Message: fmt.Sprintf("%s may not run on hardware type %s", s, n.HardwareType)})
			}
			if len(sc.ImageTypes) > 0 && !contains(sc.ImageTypes, n.ImageType) {
				v.add("simg:"+s+":"+n.ImageType, n.ID, Reason{Code: CodeServiceImage, Services: []string{s}, Constraints: []string{"constraints.services." + s + ".imageTypes"},
					Message: fmt.Sprintf("%s may not run on image type %s", s, n.ImageType)})
			}
		}
		has := stringSet(n.Services)
		for gi, g := range tmpl.Constraints.Layout.MustCoexist {
			var present, missing []string
			for _, s := range uniqueSorted(g) {
				switch {
				case !on[s]:
				case has[s]:
					present = append(present, s)
				default:
					missing = append(missing, s)
				}
			}
			if len(present) > 0 && len(missing) > 0 {
				v.add(fmt.Sprintf("must:%d:%v", gi, present), n.ID, Reason{Code: CodeMustCoexistBroken, Services: append(present, missing...), Constraints: mustPaths([]int{gi}),
					Message: fmt.Sprintf("%s must coexist with %s", joinAnd(present), joinAnd(missing))})
			}
		}
		for gi, g := range tmpl.Constraints.Layout.CantCoexist {
			all := len(g) >= 2
			for _, s := range g {
				all = all && has[s]
			}
			if all {
				v.add(fmt.Sprintf("cant:%d", gi), n.ID, Reason{Code: CodeCantCoexistBroken, Services: sortedCopy(g), Constraints: cantPaths([]int{gi}),
					Message: fmt.Sprintf("%s may not all be on one node", joinAnd(sortedCopy(g)))})
			}
		}
	}
	for _, r := range v.reasons {
		r.Message = fmt.Sprintf("%s %s: %s", plural("node", len(r.Nodes)), joinAnd(r.Nodes), r.Message)
		rs = append(rs, r)
	}
	return rs
}

func hasKey(m map[string]int, k string) bool {
	_, ok := m[k]
	return ok
}
