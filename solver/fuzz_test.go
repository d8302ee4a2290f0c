package solver

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"sort"
	"strconv"
	"testing"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/stretchr/testify/require"
)

var fuzzSeeds = [][]byte{
	{},
	{4, 2, 1, 0, 0, 1, 3, 2, 1, 0, 3, 0, 1, 2, 3, 4, 5, 6, 7},
	{3, 1, 0, 1, 0, 2, 4, 0, 0, 3, 1, 2, 2, 0, 1, 1, 2, 3, 0, 2, 5},
	{4, 2, 1, 2, 3, 0, 0, 1, 3, 3, 1, 2, 0, 1, 0, 2, 3, 1, 0, 0, 4, 2, 1, 0, 3},
	{2, 0, 0, 0, 1, 1, 3, 2, 0, 0, 0, 2, 1, 0, 1, 2, 0, 0, 1, 5},
	{4, 1, 1, 0, 0, 0, 3, 4, 0, 0, 3, 4, 0, 0, 3, 4, 0, 0, 3, 4, 0, 0, 0, 3, 0, 1, 1, 2, 2, 3, 5},
	{255, 254, 253, 252, 251, 250, 249, 248, 247, 246, 245, 244, 243, 242, 241, 240, 239, 238, 237},
}

// fuzzWith seeds f with fuzzSeeds and fuzzes one case.
func fuzzWith(f *testing.F, check func(*testing.T, []byte)) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(check)
}

// TestFuzzCasesOnRandomInput runs every fuzz case on a thousand
// pseudo-random inputs, so that a plain go test covers more than the seeds:
// instances with and without dependencies, conflicts and incompatible
// services, all held to the checker and the brute force.
func TestFuzzCasesOnRandomInput(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		check func(*testing.T, []byte)
	}{
		{"Create", caseCreate}, {"Expand", caseExpand}, {"Shrink", caseShrink}, {"AddServices", caseAddServices},
		{"CheckSync", caseCheckSync}, {"RemoveServices", caseRemoveServices},
	}
	for ci, c := range cases {
		check := c.check
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r := rand.New(rand.NewPCG(3, uint64(ci)))
			for i := 0; i < 1000; i++ {
				data := make([]byte, 40+r.IntN(80))
				for j := range data {
					data[j] = byte(r.Uint32())
				}
				if !t.Run(strconv.Itoa(i), func(t *testing.T) { check(t, data) }) {
					t.Fatalf("input %#v", data)
				}
			}
		})
	}
}

// TestRandomInstancesMix checks that random instances mix the cases the
// fuzz cases need: services with dependencies, clusters whose services break
// a cluster-level rule, and clusters that get a layout despite dependencies.
func TestRandomInstancesMix(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(3, 4))
	seen := map[string]int{}
	for i := 0; i < 300; i++ {
		data := make([]byte, 40+r.IntN(80))
		for j := range data {
			data[j] = byte(r.Uint32())
		}
		g := &byteGen{b: data}
		sp := randomInstance(g, 5)
		deps := false
		for _, s := range sp.services {
			d := sp.cat.Services[s].Dependencies
			deps = deps || len(d.Install.Requires)+len(d.Runtime.Requires)+len(d.Provides)+len(d.Conflicts) > 0
		}
		if !deps {
			seen["no dependencies"]++
			continue
		}
		if len(serviceProblems(sp)) > 0 {
			seen["broken services"]++
			continue
		}
		_, err := Create(CreateRequest{ClusterID: "c", Template: sp.tmpl, Catalog: sp.cat, Size: 1 + g.intn(6)})
		seen["dependencies, "+outcome(err)]++
	}
	t.Log(seen)
	for _, k := range []string{"no dependencies", "broken services", "dependencies, layout", "dependencies, no layout"} {
		require.Greater(t, seen[k], 10, k)
	}
}

// serviceCodes are the reasons a request names when its services break a
// cluster-level rule.
var serviceCodes = []string{CodeUnknownService, CodeIncompatibleService, CodeMissingDependency, CodeServiceConflict}

// requireServiceRefusal checks that err refuses the request with at least
// one reason about the cluster's services (broken is what the checker found).
func requireServiceRefusal(t *testing.T, err error, broken []string) {
	t.Helper()
	var re *RequestError
	require.ErrorAs(t, err, &re, "the services break %v", broken)
	named := false
	for _, r := range re.Reasons {
		named = named || containsString(serviceCodes, r.Code)
	}
	require.True(t, named, "the services break %v but the reasons are %+v", broken, re.Reasons)
}

// checkAgainstBrute asserts the solver's answer against the exhaustive one:
// a layout must be valid, and "no layout" must be true. When the cluster's
// services break a cluster-level rule, the request itself must be refused
// with a reason that says so; otherwise no such reason may appear.
func checkAgainstBrute(t *testing.T, sp clusterSpec, l *Layout, err error, exists bool) {
	t.Helper()
	var tooComplex *TooComplexError
	require.False(t, errors.As(err, &tooComplex), "small instance ran out of budget: %v", err)
	if broken := serviceProblems(sp); len(broken) > 0 {
		requireServiceRefusal(t, err, broken)
	}
	if err == nil {
		require.Empty(t, independentCheck(sp, l.Nodes), "invalid layout %+v", l.Groups)
		require.True(t, exists, "solver found a layout the brute force did not")
		return
	}
	var nl *NoLayoutError
	var re *RequestError
	switch {
	case errors.As(err, &nl):
		require.NotEmpty(t, nl.Reasons)
		for _, r := range nl.Reasons {
			require.NotEmpty(t, r.Message)
		}
	case errors.As(err, &re):
		allowed := []string{CodeNoHardwareType, CodeNoImageType}
		if len(serviceProblems(sp)) > 0 {
			allowed = append(allowed, serviceCodes...)
		}
		for _, r := range re.Reasons {
			require.Contains(t, allowed, r.Code, "unexpected request error %v", err)
		}
	default:
		t.Fatalf("unexpected error %v", err)
	}
	require.False(t, exists, "solver said %v but a layout exists", err)
}

func FuzzCreate(f *testing.F) { fuzzWith(f, caseCreate) }

func caseCreate(t *testing.T, data []byte) {
	g := &byteGen{b: data}
	sp := randomInstance(g, 5)
	n := 1 + g.intn(6)
	if len(sp.services) == 5 {
		n = 1 + g.intn(4)
	}
	req := CreateRequest{ClusterID: "c", Template: sp.tmpl, Catalog: sp.cat, Size: n}
	l, err := Create(req)
	b := newBruteForce(sp)
	checkAgainstBrute(t, sp, l, err, b.exists(make([]int, len(sp.services)), 0, n))
	if err == nil {
		again, err := Create(req)
		require.NoError(t, err)
		require.True(t, reflect.DeepEqual(l, again), "same request, different layouts")
	}
}

func FuzzExpand(f *testing.F) { fuzzWith(f, caseExpand) }

func caseExpand(t *testing.T, data []byte) {
	g := &byteGen{b: data}
	sp := randomInstance(g, 4)
	b := newBruteForce(sp)
	nodes := randomNodes(g, b, "c", 1+g.intn(4))
	if len(nodes) == 0 {
		return
	}
	k := 1 + g.intn(3)
	l, err := Expand(ExpandRequest{Cluster: Cluster{ID: "c", Template: sp.tmpl, Provider: sp.provider, Services: sp.services, Nodes: nodes}, Catalog: sp.cat, Count: k})
	checkAgainstBrute(t, sp, l, err, b.exists(b.countNodes(nodes), len(nodes), k))
	if err == nil {
		require.Equal(t, nodes, l.Nodes[:len(nodes)], "existing nodes changed")
		require.Len(t, l.NewNodes, k)
	}
}

func FuzzShrink(f *testing.F) { fuzzWith(f, caseShrink) }

func caseShrink(t *testing.T, data []byte) {
	g := &byteGen{b: data}
	sp := randomInstance(g, 5)
	b := newBruteForce(sp)
	nodes := randomNodes(g, b, "c", 2+g.intn(6))
	if len(nodes) < 2 || len(independentCheck(sp, nodes)) > 0 {
		return
	}
	cl := Cluster{ID: "c", Template: sp.tmpl, Provider: sp.provider, Services: sp.services, Nodes: nodes}
	k := 1 + g.intn(len(nodes)-1)
	l, err := Shrink(ShrinkRequest{Cluster: cl, Count: k})
	checkAgainstBrute(t, sp, l, err, b.shrinkExists(nodes, k))
	if err == nil {
		require.Len(t, l.RemovedNodes, k)
	}

	// Named nodes go exactly when what remains is valid.
	var named []string
	var rest []domain.Node
	for _, n := range nodes {
		if g.intn(2) == 0 && len(named) < len(nodes)-1 {
			named = append(named, n.ID)
		} else {
			rest = append(rest, n)
		}
	}
	if len(named) == 0 {
		return
	}
	l, err = Shrink(ShrinkRequest{Cluster: cl, NodeIDs: named})
	if len(independentCheck(sp, rest)) > 0 {
		var nl *NoLayoutError
		require.ErrorAs(t, err, &nl)
		return
	}
	require.NoError(t, err)
	require.Equal(t, named, l.RemovedNodes)
	require.Equal(t, rest, l.Nodes)
}

func FuzzAddServices(f *testing.F) { fuzzWith(f, caseAddServices) }

func caseAddServices(t *testing.T, data []byte) {
	g := &byteGen{b: data}
	sp := randomInstance(g, 5)
	if len(sp.services) < 2 {
		return
	}
	cut := 1 + g.intn(len(sp.services)-1)
	old := clusterSpec{tmpl: sp.tmpl, cat: sp.cat, provider: sp.provider, services: sp.services[:cut]}
	adding := sp.services[cut:]
	nodes := randomNodes(g, newBruteForce(old), "c", 1+g.intn(5))
	if len(nodes) == 0 || len(independentCheck(old, nodes)) > 0 {
		return
	}
	maxNew := g.intn(3)
	cl := Cluster{ID: "c", Template: sp.tmpl, Provider: sp.provider, Services: old.services, Nodes: nodes}
	l, err := AddServices(AddServicesRequest{Cluster: cl, Catalog: sp.cat, Services: adding, MaxNewNodes: maxNew})
	b := newBruteForce(sp)
	checkAgainstBrute(t, sp, l, err, b.addExists(nodes, adding, maxNew))
	if err == nil {
		require.LessOrEqual(t, len(l.Nodes), len(nodes)+maxNew)
		require.Len(t, l.NewNodes, len(l.Nodes)-len(nodes))
		if len(l.NewNodes) > 0 {
			// The fewest new nodes: one fewer would not do.
			require.False(t, b.addExists(nodes, adding, len(l.NewNodes)-1), "used %d new nodes where fewer would do", len(l.NewNodes))
		}
		for i := range nodes {
			require.Equal(t, nodes[i].ID, l.Nodes[i].ID)
			require.Equal(t, nodes[i].HardwareType, l.Nodes[i].HardwareType)
			require.Equal(t, nodes[i].ImageType, l.Nodes[i].ImageType)
			require.Subset(t, l.Nodes[i].Services, nodes[i].Services)
		}
	}
}

// arbitraryNodes builds n nodes that run random non-empty sets of the
// cluster's services on random catalog types, whatever the template says.
func arbitraryNodes(g *byteGen, sp clusterSpec, clusterID string, n int) []domain.Node {
	var hws, imgs []string
	for h := range sp.cat.HardwareTypes {
		hws = append(hws, h)
	}
	for im := range sp.cat.ImageTypes {
		imgs = append(imgs, im)
	}
	sort.Strings(hws)
	sort.Strings(imgs)
	nodes := make([]domain.Node, n)
	for i := range nodes {
		num := FirstNodeNum + i
		nodes[i] = domain.Node{ID: fmt.Sprintf("%s-%d", clusterID, num), ClusterID: clusterID, Num: num, NodeLayout: domain.NodeLayout{
			HardwareType: hws[g.intn(len(hws))], ImageType: imgs[g.intn(len(imgs))], Services: g.subset(sp.services, true)}}
	}
	return nodes
}

// FuzzCheckSync holds the template sync check to the independent checker:
// a cluster passes exactly when the checker finds nothing wrong, and every
// violation comes with a reason.
func FuzzCheckSync(f *testing.F) { fuzzWith(f, caseCheckSync) }

func caseCheckSync(t *testing.T, data []byte) {
	g := &byteGen{b: data}
	sp := randomInstance(g, 5)
	var nodes []domain.Node
	if g.intn(2) == 0 {
		nodes = randomNodes(g, newBruteForce(sp), "c", 1+g.intn(6))
	} else {
		nodes = arbitraryNodes(g, sp, "c", 1+g.intn(6))
	}
	if len(nodes) == 0 {
		return
	}
	err := CheckSync(SyncRequest{Cluster: Cluster{ID: "c", Template: sp.tmpl, Provider: sp.provider, Services: sp.services, Nodes: nodes}, Template: sp.tmpl, Catalog: sp.cat})
	broken := independentCheck(sp, nodes)
	if len(broken) == 0 {
		require.NoError(t, err)
		return
	}
	var nl *NoLayoutError
	require.ErrorAs(t, err, &nl, "the checker found %v", broken)
	for _, r := range nl.Reasons {
		require.NotEmpty(t, r.Code)
		require.NotEmpty(t, r.Message)
	}
}

// FuzzRemoveServices gives the services random requirements and provided
// names, removes a random set, and checks the answer: refused exactly when a
// remaining service would lose a requirement, and otherwise a layout where
// the removed services are gone and every other node is as it was.
func FuzzRemoveServices(f *testing.F) { fuzzWith(f, caseRemoveServices) }

func caseRemoveServices(t *testing.T, data []byte) {
	g := &byteGen{b: data}
	sp := randomInstance(g, 5)
	nodes := randomNodes(g, newBruteForce(sp), "c", 1+g.intn(5))
	if len(nodes) == 0 {
		return
	}
	names := append(append([]string(nil), sp.services...), "x", "y")
	cat := sp.cat
	cat.Services = map[string]*domain.Service{}
	for _, s := range sp.services {
		d := svc(s, g.subset(names, false)...)
		d.Dependencies.Provides = g.subset([]string{"x", "y"}, false)
		cat.Services[s] = d
	}
	removing := g.subset(sp.services, true)
	cl := Cluster{ID: "c", Template: sp.tmpl, Provider: sp.provider, Services: sp.services, Nodes: nodes}
	l, err := RemoveServices(RemoveServicesRequest{Cluster: cl, Catalog: cat, Services: removing})

	gone := stringSet(removing)
	provided := func(keep func(string) bool) map[string]bool {
		m := map[string]bool{}
		for _, s := range sp.services {
			if keep(s) {
				m[s] = true
				for _, p := range cat.Services[s].Dependencies.Provides {
					m[p] = true
				}
			}
		}
		return m
	}
	before := provided(func(string) bool { return true })
	after := provided(func(s string) bool { return !gone[s] })
	lost, remaining := false, 0
	for _, s := range sp.services {
		if gone[s] {
			continue
		}
		remaining++
		for _, r := range cat.Services[s].Dependencies.Runtime.Requires {
			lost = lost || (before[r] && !after[r])
		}
	}
	if lost || remaining == 0 {
		requireRequestError(t, err, map[bool]string{true: CodeRequiredByRemaining, false: CodeLastServices}[lost], "")
		return
	}
	require.NoError(t, err)
	require.Len(t, l.Nodes, len(nodes))
	for i, n := range l.Nodes {
		var want []string
		for _, s := range nodes[i].Services {
			if !gone[s] {
				want = append(want, s)
			}
		}
		require.ElementsMatch(t, want, n.Services)
		require.Equal(t, nodes[i].NodeLayout.HardwareType, n.HardwareType)
	}
}
