package solver

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/stretchr/testify/require"
)

// randomLargeInstance is randomInstance at realistic scale: up to 14
// services, hundreds of nodes, several layout groups and restrictions, and
// dependencies: a service may require earlier services (at install or run
// time) or a provided name ("db", "cache") that some service may provide or
// none does, and now and then conflicts with another service or name.
func randomLargeInstance(r *rand.Rand) (clusterSpec, int) {
	ns := 3 + r.IntN(12)
	var names []string
	var services []*domain.Service
	for i := 0; i < ns; i++ {
		names = append(names, fmt.Sprintf("svc%02d", i))
		services = append(services, svc(names[i]))
	}
	hws := []string{"small", "medium", "large", "xlarge"}[:1+r.IntN(4)]
	imgs := []string{"debian", "ubuntu"}[:1+r.IntN(2)]
	cat := catalogOf(services, hws, imgs)
	pick := func(from []string, k int) []string {
		var out []string
		for _, i := range r.Perm(len(from))[:min(k, len(from))] {
			out = append(out, from[i])
		}
		return out
	}
	tmpl := &domain.ClusterTemplate{Meta: domain.Meta{Name: "large"}}
	tmpl.Compatibility.Services = names
	tmpl.Defaults.Services = names
	tmpl.Defaults.Provider = "aws"
	tmpl.Constraints.Services = map[string]domain.ServiceConstraint{}
	for _, s := range names {
		var sc domain.ServiceConstraint
		if r.IntN(2) == 0 {
			lo := r.IntN(6)
			sc.Quantities = domain.Quantity{Min: lo}
			if r.IntN(2) == 0 {
				sc.Quantities.Max = max(lo, 1) + r.IntN(40)
			}
		}
		if r.IntN(4) == 0 {
			sc.HardwareTypes = pick(hws, 1+r.IntN(len(hws)))
		}
		tmpl.Constraints.Services[s] = sc
	}
	for i, k := 0, r.IntN(3); i < k; i++ {
		tmpl.Constraints.Layout.MustCoexist = append(tmpl.Constraints.Layout.MustCoexist, pick(names, 2+r.IntN(2)))
	}
	for i, k := 0, r.IntN(6); i < k; i++ {
		tmpl.Constraints.Layout.CantCoexist = append(tmpl.Constraints.Layout.CantCoexist, pick(names, 2+r.IntN(2)))
	}
	provided := []string{"db", "cache"}
	for i, d := range services {
		deps := &d.Dependencies
		if i > 0 && r.IntN(3) == 0 {
			deps.Runtime.Requires = append(deps.Runtime.Requires, names[r.IntN(i)])
		}
		if i > 0 && r.IntN(5) == 0 {
			deps.Install.Requires = append(deps.Install.Requires, names[r.IntN(i)])
		}
		if r.IntN(4) == 0 {
			deps.Provides = append(deps.Provides, provided[r.IntN(len(provided))])
		}
		if r.IntN(10) == 0 {
			deps.Runtime.Requires = append(deps.Runtime.Requires, provided[r.IntN(len(provided))])
		}
		if r.IntN(30) == 0 {
			targets := append(append([]string(nil), names...), provided...)
			if c := targets[r.IntN(len(targets))]; c != d.Name {
				deps.Conflicts = append(deps.Conflicts, c)
			}
		}
	}
	return clusterSpec{tmpl: tmpl, cat: cat, provider: "aws", services: uniqueSorted(names)}, 1 + r.IntN(300)
}

// randomDenseInstance is a harder family than randomLargeInstance: 20 to 40
// services, all with minimum quantities, half restricted to two hardware
// types, and up to twice as many cantCoexist pairs and triples as services.
// Many have no layout; some exhaust the budget.
func randomDenseInstance(r *rand.Rand) (clusterSpec, int) {
	ns := 20 + r.IntN(21)
	var services []string
	for k := 0; k < ns; k++ {
		services = append(services, fmt.Sprintf("s%02d", k))
	}
	hw := []string{"small", "medium", "large"}
	cons := map[string]domain.ServiceConstraint{}
	for _, s := range services {
		sc := domain.ServiceConstraint{Quantities: domain.Quantity{Min: 1 + r.IntN(30)}}
		if r.IntN(2) == 0 {
			sc.HardwareTypes = []string{hw[r.IntN(3)], hw[r.IntN(3)]}
		}
		cons[s] = sc
	}
	var cant [][]string
	for k, nk := 0, r.IntN(2*ns); k < nk; k++ {
		g := []string{services[r.IntN(ns)], services[r.IntN(ns)]}
		if r.IntN(2) == 0 {
			g = append(g, services[r.IntN(ns)])
		}
		if g[0] == g[1] || (len(g) == 3 && (g[2] == g[0] || g[2] == g[1])) {
			continue
		}
		cant = append(cant, g)
	}
	tmpl, cat := tiny(services, cons, nil, cant)
	return clusterSpec{tmpl: tmpl, cat: cat, provider: "aws", services: uniqueSorted(services)}, 10 + r.IntN(100)
}

// TestPropertyDenseTemplates: on the dense family every answer is a valid
// layout, an explained refusal or a budget error, and nothing else.
func TestPropertyDenseTemplates(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(5, 5))
	outcomes := map[string]int{}
	for i := 0; i < 40; i++ {
		sp, n := randomDenseInstance(r)
		l, err := Create(CreateRequest{ClusterID: "c", Template: sp.tmpl, Catalog: sp.cat, Size: n})
		outcomes[outcome(err)]++
		switch {
		case err == nil:
			requireValid(t, sp, l.Nodes)
		case errors.Is(err, ErrTooComplex):
		default:
			requireExplained(t, err)
		}
	}
	t.Log(outcomes)
	require.Greater(t, outcomes["layout"], 5)
	require.Greater(t, outcomes["no layout"], 5)
}

// TestPropertyEveryAnswerIsValid runs every operation on random instances
// and checks every layout it returns with the independent checker.
func TestPropertyEveryAnswerIsValid(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(7, 11))
	outcomes := map[string]int{}
	for i := 0; i < 400; i++ {
		sp, n := randomLargeInstance(r)
		req := CreateRequest{ClusterID: "c", Template: sp.tmpl, Catalog: sp.cat, Size: n}
		l, err := Create(req)
		outcomes[outcome(err)]++
		if broken := serviceProblems(sp); len(broken) > 0 {
			requireServiceRefusal(t, err, broken)
			outcomes["broken services"]++
			continue
		}
		if err != nil {
			requireExplained(t, err)
			var re *RequestError
			if errors.As(err, &re) {
				for _, r := range re.Reasons {
					require.NotContains(t, serviceCodes, r.Code, "services pass the checker but %v", err)
				}
			}
			continue
		}
		requireValid(t, sp, l.Nodes)
		again, err := Create(req)
		require.NoError(t, err)
		require.Equal(t, l, again)

		cl := Cluster{ID: "c", Template: sp.tmpl, Provider: "aws", Services: sp.services, Nodes: l.Nodes}
		ex, err := Expand(ExpandRequest{Cluster: cl, Catalog: sp.cat, Count: 1 + r.IntN(200)})
		outcomes["expand "+outcome(err)]++
		if err == nil {
			requireValid(t, sp, ex.Nodes)
			require.Equal(t, l.Nodes, ex.Nodes[:n])
		} else {
			requireExplained(t, err)
		}
		if n > 1 {
			sh, err := Shrink(ShrinkRequest{Cluster: cl, Count: 1 + r.IntN(n-1)})
			outcomes["shrink "+outcome(err)]++
			if err == nil {
				requireValid(t, sp, sh.Nodes)
			} else {
				requireExplained(t, err)
			}
		}
		require.NoError(t, CheckSync(SyncRequest{Cluster: cl, Template: sp.tmpl, Catalog: sp.cat}))

		cut := 1 + r.IntN(len(sp.services)-1)
		old := clusterSpec{tmpl: sp.tmpl, cat: sp.cat, provider: "aws", services: sp.services[:cut]}
		base, err := Create(CreateRequest{ClusterID: "c", Template: sp.tmpl, Catalog: sp.cat, Size: n, Services: old.services})
		if err != nil {
			continue
		}
		requireValid(t, old, base.Nodes)
		cl = Cluster{ID: "c", Template: sp.tmpl, Provider: "aws", Services: old.services, Nodes: base.Nodes}
		ad, err := AddServices(AddServicesRequest{Cluster: cl, Catalog: sp.cat, Services: sp.services[cut:], MaxNewNodes: r.IntN(3) * 20})
		outcomes["add "+outcome(err)]++
		if err == nil {
			requireValid(t, sp, ad.Nodes)
		} else {
			requireExplained(t, err)
		}
	}
	t.Log(outcomes)
	require.Greater(t, outcomes["layout"], 100)
	require.Greater(t, outcomes["add layout"], 20)
	require.Zero(t, outcomes["too complex"]+outcomes["expand too complex"]+outcomes["shrink too complex"]+outcomes["add too complex"])
}

func outcome(err error) string {
	var nl *NoLayoutError
	var re *RequestError
	switch {
	case err == nil:
		return "layout"
	case errors.As(err, &nl):
		return "no layout"
	case errors.As(err, &re):
		return "bad request"
	case errors.Is(err, ErrTooComplex):
		return "too complex"
	}
	return "other"
}

// requireExplained checks that a failure carries reasons with messages.
func requireExplained(t *testing.T, err error) {
	t.Helper()
	var nl *NoLayoutError
	var re *RequestError
	var rs []Reason
	switch {
	case errors.As(err, &nl):
		rs = nl.Reasons
	case errors.As(err, &re):
		rs = re.Reasons
	default:
		t.Fatalf("unexpected error %v", err)
	}
	require.NotEmpty(t, rs)
	for _, r := range rs {
		require.NotEmpty(t, r.Code)
		require.NotEmpty(t, r.Message)
	}
}
