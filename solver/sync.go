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
	nodes := copyNodes(cl.Nodes, 0)
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

func newViolations() *violations { return &violations{byKey: map[string]int{}} }

func (v *violations) add(key, node string, r Reason) {
	if i, ok := v.byKey[key]; ok {
		v.reasons[i].Nodes = append(v.reasons[i].Nodes, node)
		return
	}
	v.byKey[key] = len(v.reasons)
	r.Nodes = []string{node}
	v.reasons = append(v.reasons, r)
}

// done returns the reasons, each message led by the nodes that break it.
func (v *violations) done() []Reason {
	for i := range v.reasons {
		r := &v.reasons[i]
		r.Message = fmt.Sprintf("%s %s: %s", plural("node", len(r.Nodes)), joinAnd(r.Nodes), r.Message)
	}
	return v.reasons
}

// keyedReason is a rule one layout breaks; key tells rules apart.
type keyedReason struct {
	key    string
	reason Reason
}

// nodeReasons checks each node on its own: its types are usable (when hw and
// img are given), allowed for its services, and it holds every mustCoexist
// group wholly or not at all and no cantCoexist group wholly. The checks run
// once per distinct layout; nodes breaking the same rule share one reason.
func nodeReasons(tmpl *domain.ClusterTemplate, provider string, services []string, nodes []domain.Node, hw, img *typeSet) []Reason {
	on := stringSet(services)
	c := classify(nodes)
	broken := make([][]keyedReason, len(c.layouts))
	for ci := range c.layouts {
		broken[ci] = layoutReasons(tmpl, provider, on, &c.layouts[ci], hw, img)
	}
	v := newViolations()
	for i := range nodes {
		for _, kr := range broken[c.of[i]] {
			v.add(kr.key, nodes[i].ID, kr.reason)
		}
	}
	return v.done()
}

// layoutReasons lists the rules one node layout breaks.
func layoutReasons(tmpl *domain.ClusterTemplate, provider string, on map[string]bool, l *domain.NodeLayout, hw, img *typeSet) []keyedReason {
	if len(l.Services) == 0 {
		return nil
	}
	var out []keyedReason
	add := func(key string, r Reason) { out = append(out, keyedReason{key: key, reason: r}) }
	if hw != nil && !hasKey(hw.index, l.HardwareType) {
		add("hw:"+l.HardwareType, Reason{Code: CodeHardwareUnavailable, Constraints: []string{"compatibility.hardwareTypes"},
			Message: fmt.Sprintf("hardware type %q is not one template %q allows on provider %q", l.HardwareType, tmpl.Name, provider)})
	}
	if img != nil && !hasKey(img.index, l.ImageType) {
		add("img:"+l.ImageType, Reason{Code: CodeImageUnavailable, Constraints: []string{"compatibility.imageTypes"},
			Message: fmt.Sprintf("image type %q is not one template %q allows on provider %q", l.ImageType, tmpl.Name, provider)})
	}
	for _, s := range l.Services {
		sc := tmpl.Constraints.Services[s]
		if len(sc.HardwareTypes) > 0 && !contains(sc.HardwareTypes, l.HardwareType) {
			add("shw:"+s+":"+l.HardwareType, Reason{Code: CodeServiceHardware, Services: []string{s}, Constraints: []string{"constraints.services." + s + ".hardwareTypes"},
				Message: fmt.Sprintf("%s may not run on hardware type %s", s, l.HardwareType)})
		}
		if len(sc.ImageTypes) > 0 && !contains(sc.ImageTypes, l.ImageType) {
			add("simg:"+s+":"+l.ImageType, Reason{Code: CodeServiceImage, Services: []string{s}, Constraints: []string{"constraints.services." + s + ".imageTypes"},
				Message: fmt.Sprintf("%s may not run on image type %s", s, l.ImageType)})
		}
	}
	has := stringSet(l.Services)
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
			add(fmt.Sprintf("must:%d:%v", gi, present), Reason{Code: CodeMustCoexistBroken, Services: append(present, missing...), Constraints: mustPaths([]int{gi}),
				Message: fmt.Sprintf("%s must coexist with %s", joinAnd(present), joinAnd(missing))})
		}
	}
	for gi, g := range tmpl.Constraints.Layout.CantCoexist {
		all := len(g) >= 2
		for _, s := range g {
			all = all && has[s]
		}
		if all {
			add(fmt.Sprintf("cant:%d", gi), Reason{Code: CodeCantCoexistBroken, Services: sortedCopy(g), Constraints: cantPaths([]int{gi}),
				Message: fmt.Sprintf("%s may not all be on one node", joinAnd(sortedCopy(g)))})
		}
	}
	return out
}

func hasKey(m map[string]int, k string) bool {
	_, ok := m[k]
	return ok
}
