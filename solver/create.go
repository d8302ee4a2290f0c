package solver

import (
	"fmt"

	"github.com/heddle-io/heddle/internal/domain"
)

// Create solves the layout of a new cluster: Size nodes running the
// requested services (the template's defaults when none are named).
func Create(req CreateRequest) (*Layout, error) {
	plan, err := solveCreate(&req)
	if err != nil {
		return nil, err
	}
	nodes, _ := appendNewNodes(nil, req.ClusterID, plan.provider, req.Catalog, plan.groups, FirstNodeNum)
	return &Layout{Groups: plan.groups, Nodes: nodes, NewNodes: nodeIDs(nodes)}, nil
}

type createPlan struct {
	groups   []Group
	provider string
}

// solveCreate finds the node layouts and their counts; Create then numbers
// the nodes. They are separate so that each can be measured on its own.
func solveCreate(req *CreateRequest) (*createPlan, error) {
	tmpl := req.Template
	if tmpl == nil {
		return nil, requestError(Reason{Code: CodeMissingTemplate, Message: "a resolved cluster template is required"})
	}
	var rs []Reason
	n := req.Size
	if n < 1 || n > domain.MaxClusterSize {
		rs = append(rs, Reason{Code: CodeInvalidSize, Message: fmt.Sprintf("size is %d; ask for 1 to %d nodes", n, domain.MaxClusterSize)})
	}
	provider := firstNonEmpty(req.Provider, tmpl.Defaults.Provider)
	if provider == "" {
		rs = append(rs, Reason{Code: CodeNoProvider, Constraints: []string{"defaults.provider"},
			Message: "no provider was named and the template has no default provider"})
	}
	services := req.Services
	if len(services) == 0 {
		services = tmpl.Defaults.Services
	}
	services = uniqueSorted(services)
	if len(services) == 0 {
		rs = append(rs, Reason{Code: CodeNoServices, Constraints: []string{"defaults.services"},
			Message: "no services were named and the template has no default services"})
	}
	if len(rs) > 0 {
		return nil, &RequestError{Reasons: rs}
	}
	rs = checkServices(tmpl, req.Catalog, services)
	hw, r := resolveTypes(hardwareKind(req.Catalog, provider), tmpl, provider, tmpl.Compatibility.HardwareTypes, req.HardwareType, tmpl.Defaults.HardwareType, nil)
	rs = append(rs, r...)
	img, r := resolveTypes(imageKind(req.Catalog, provider), tmpl, provider, tmpl.Compatibility.ImageTypes, req.ImageType, tmpl.Defaults.ImageType, nil)
	rs = append(rs, r...)
	if len(rs) > 0 {
		return nil, &RequestError{Reasons: rs}
	}
	e := newEnv(tmpl, services, hw, img)
	var nl []Reason
	if r, bad := sizeReason(tmpl, n, "requested"); bad {
		nl = append(nl, r)
	}
	nl = append(nl, e.reasons...)
	if len(nl) > 0 {
		return nil, &NoLayoutError{Reasons: nl}
	}
	b := newBudget(req.Budget)
	b.step = "solving the create layout"
	p, lo, hi := e.newRowsProblem(n, nil, b)
	segs, err := solveRows(p, lo, hi, n, createWording)
	if err != nil {
		return nil, err
	}
	groups := e.groupsOf(p, segs)
	sortGroups(groups)
	return &createPlan{groups: groups, provider: provider}, nil
}

// solveRows checks that lo and hi admit a layout on m rows, explaining why
// not, and lays the rows out.
func solveRows(p *problem, lo, hi []int, m int, w wording) ([]seg, error) {
	ok, err := p.feasible(lo, hi, m)
	if err != nil {
		return nil, err
	}
	if !ok {
		rs, err := p.explain(lo, hi, m, w)
		if err != nil {
			return nil, err
		}
		if len(rs) == 0 {
			rs = []Reason{{Code: CodeCannotPack, Message: fmt.Sprintf("the layout constraints leave no valid layout, and %s", w.have(m))}}
		}
		return nil, &NoLayoutError{Reasons: rs}
	}
	c, err := p.chooseCounts(lo, hi, m)
	if err != nil {
		return nil, err
	}
	return p.arrange(c, m)
}

func sizeBounds(tmpl *domain.ClusterTemplate) (lo, hi int) {
	lo, hi = max(tmpl.Constraints.Size.Min, 1), tmpl.Constraints.Size.Max
	if hi <= 0 || hi > domain.MaxClusterSize {
		hi = domain.MaxClusterSize
	}
	return lo, hi
}

func sizeReason(tmpl *domain.ClusterTemplate, n int, verb string) (Reason, bool) {
	lo, hi := sizeBounds(tmpl)
	if n >= lo && n <= hi {
		return Reason{}, false
	}
	allowed := fmt.Sprintf("%d to %d nodes", lo, hi)
	if hi == domain.MaxClusterSize && tmpl.Constraints.Size.Max <= 0 {
		allowed = "at least " + nodesPhrase(lo)
	}
	return Reason{Code: CodeSizeOutOfRange, Constraints: []string{"constraints.size"},
		Message: fmt.Sprintf("template %q allows %s but %d %s %s", tmpl.Name, allowed, n, plural("node", n), map[bool]string{true: "was", false: "were"}[n == 1]+" "+verb)}, true
}

func firstNonEmpty(xs ...string) string {
	for _, x := range xs {
		if x != "" {
			return x
		}
	}
	return ""
}

// newRowsProblem builds the problem of laying out m new rows with every
// non-free unit. already[s], when given, is how many existing nodes run s:
// bounds become what the new rows must and may still add.
func (e *env) newRowsProblem(m int, already map[string]int, b *budget) (*problem, []int, []int) {
	var units []punit
	toP := map[int]int{}
	var lo, hi []int
	for ui := range e.units {
		u := &e.units[ui]
		if u.free {
			continue
		}
		l, h := u.lo, u.hi
		if already != nil {
			l, h = 0, domain.MaxClusterSize
			for _, s := range u.services {
				sl, sh := serviceBounds(e.tmpl, s)
				l = max(l, sl-already[s])
				h = min(h, sh-already[s])
			}
		}
		toP[ui] = len(units)
		units = append(units, e.punit(ui, l, h))
		lo = append(lo, l)
		hi = append(hi, min(h, m))
	}
	p := newProblem(units, e.remapEdges(toP), e.hw.all(), e.img.all(), e.hw.candidates(), e.img.candidates(), len(e.free) > 0, b)
	return p, lo, hi
}

func (e *env) punit(ui, lo, hi int) punit {
	u := &e.units[ui]
	pu := punit{lo: lo, hi: hi, hw: u.hw, img: u.img, services: u.services, label: u.label(), def: ui, loFrom: u.loFrom, hiFrom: u.hiFrom}
	for _, s := range u.services {
		sc := e.tmpl.Constraints.Services[s]
		if len(sc.HardwareTypes) > 0 {
			pu.typePaths = append(pu.typePaths, "constraints.services."+s+".hardwareTypes")
		}
		if len(sc.ImageTypes) > 0 {
			pu.typePaths = append(pu.typePaths, "constraints.services."+s+".imageTypes")
		}
	}
	return pu
}

// remapEdges keeps the edges whose units are all in the problem: an edge with
// a unit that can never be placed can never be completed.
func (e *env) remapEdges(toP map[int]int) []edgeDef {
	var out []edgeDef
next:
	for _, ed := range e.edges {
		var us []int
		for _, u := range ed.units {
			pu, ok := toP[u]
			if !ok {
				continue next
			}
			us = append(us, pu)
		}
		out = append(out, edgeDef{units: us, groups: ed.groups})
	}
	return out
}
