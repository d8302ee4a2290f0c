package solver

import (
	"errors"
	"fmt"
	"testing"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/stretchr/testify/require"
)

func hadoopSpec() clusterSpec {
	tmpl, cat := hadoop()
	return clusterSpec{tmpl: tmpl, cat: cat, provider: "aws", services: uniqueSorted(tmpl.Defaults.Services)}
}

func nodesRunning(nodes []domain.Node, service string) int {
	n := 0
	for _, nd := range nodes {
		if contains(nd.Services, service) {
			n++
		}
	}
	return n
}

func requireValid(t *testing.T, sp clusterSpec, nodes []domain.Node) {
	t.Helper()
	require.Empty(t, independentCheck(sp, nodes))
}

func requireNoLayout(t *testing.T, err error, code, message string) {
	t.Helper()
	var nl *NoLayoutError
	require.ErrorAs(t, err, &nl)
	for _, r := range nl.Reasons {
		if r.Code == code && (message == "" || r.Message == message) {
			return
		}
	}
	t.Fatalf("no reason %s %q in %+v", code, message, nl.Reasons)
}

func requireRequestError(t *testing.T, err error, code, message string) {
	t.Helper()
	var re *RequestError
	require.ErrorAs(t, err, &re)
	for _, r := range re.Reasons {
		if r.Code == code && (message == "" || r.Message == message) {
			return
		}
	}
	t.Fatalf("no reason %s %q in %+v", code, message, re.Reasons)
}

func group(count int, hw string, services ...string) Group {
	return Group{Count: count, NodeLayout: domain.NodeLayout{HardwareType: hw, ImageType: "ubuntu", Services: services}}
}

func TestCreateHadoop(t *testing.T) {
	t.Parallel()
	sp := hadoopSpec()
	tests := []struct {
		size    int
		message string // of the no-layout reason, when none exists
	}{
		{size: 1, message: "zookeeper-server needs at least 3 nodes but the cluster has 1 node"},
		{size: 2, message: "zookeeper-server needs at least 3 nodes but the cluster has 2 nodes"},
		{size: 3}, {size: 4}, {size: 5}, {size: 10}, {size: 100}, {size: 1000}, {size: 10000},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.size), func(t *testing.T) {
			t.Parallel()
			l, err := Create(CreateRequest{ClusterID: "c1", Template: sp.tmpl, Catalog: sp.cat, Size: tt.size})
			if tt.message != "" {
				requireNoLayout(t, err, CodeQuantityTooLarge, tt.message)
				return
			}
			require.NoError(t, err)
			require.Len(t, l.Nodes, tt.size)
			requireValid(t, sp, l.Nodes)
			total := 0
			for _, g := range l.Groups {
				total += g.Count
			}
			require.Equal(t, tt.size, total)
			for i, n := range l.Nodes {
				require.Equal(t, FirstNodeNum+i, n.Num)
				require.Equal(t, fmt.Sprintf("c1-%d", n.Num), n.ID)
				require.Equal(t, domain.NodePlanned, n.Status)
				require.Equal(t, "aws-"+n.HardwareType, n.Flavor)
				require.Equal(t, "ami-"+n.ImageType, n.Image)
			}
			require.Equal(t, nodeIDs(l.Nodes), l.NewNodes)
			// The preference order: free services everywhere, bounded services
			// up to their maximum, workers on what is left.
			require.Equal(t, tt.size, nodesRunning(l.Nodes, "base"))
			require.Equal(t, min(5, tt.size), nodesRunning(l.Nodes, "zookeeper-server"))
			require.Equal(t, 2, nodesRunning(l.Nodes, "hbase-master"))
			require.Equal(t, 1, nodesRunning(l.Nodes, "hdfs-namenode"))
			require.Equal(t, tt.size-2, nodesRunning(l.Nodes, "hdfs-datanode"))
			// Rare layouts (masters) come first and the commonest last, so
			// shrink, highest first, takes workers.
			require.Equal(t, 1, l.Groups[0].Count)
			last := l.Groups[len(l.Groups)-1]
			require.Equal(t, last.NodeLayout, l.Nodes[tt.size-1].NodeLayout)
			for _, g := range l.Groups {
				require.LessOrEqual(t, g.Count, last.Count)
				if contains(g.Services, "hdfs-namenode") {
					require.Equal(t, "large", g.HardwareType)
				}
			}
		})
	}
}

func TestCreateHadoopLayout(t *testing.T) {
	t.Parallel()
	sp := hadoopSpec()
	l, err := Create(CreateRequest{ClusterID: "c1", Template: sp.tmpl, Catalog: sp.cat, Size: 10})
	require.NoError(t, err)
	dn := []string{"base", "hbase-regionserver", "hdfs-datanode", "yarn-nodemanager"}
	require.Equal(t, []Group{
		group(1, "medium", "base", "hbase-regionserver", "hdfs-datanode", "hdfs-secondarynamenode", "hive-metastore", "mapreduce-historyserver", "yarn-nodemanager", "zookeeper-server"),
		group(1, "large", "base", "hbase-master", "hdfs-namenode", "mysql-server", "yarn-resourcemanager"),
		group(1, "medium", "base", "hbase-master"),
		group(3, "medium", dn...),
		group(4, "medium", append(dn, "zookeeper-server")...),
	}, l.Groups)
}

func TestCreateIsDeterministic(t *testing.T) {
	t.Parallel()
	sp := hadoopSpec()
	req := CreateRequest{ClusterID: "c1", Template: sp.tmpl, Catalog: sp.cat, Size: 57}
	first, err := Create(req)
	require.NoError(t, err)
	for i := 0; i < 5; i++ {
		// Fresh maps each time: iteration order must not matter.
		tmpl, cat := hadoop()
		again, err := Create(CreateRequest{ClusterID: "c1", Template: tmpl, Catalog: cat, Size: 57})
		require.NoError(t, err)
		require.Equal(t, first, again)
	}
}

func TestCreatePreferences(t *testing.T) {
	t.Parallel()
	sp := hadoopSpec()
	l, err := Create(CreateRequest{ClusterID: "c1", Template: sp.tmpl, Catalog: sp.cat, Size: 6, HardwareType: "large", ImageType: "centos"})
	require.NoError(t, err)
	requireValid(t, sp, l.Nodes)
	for _, n := range l.Nodes {
		// Every service allows large (datanode: medium or large), so it wins.
		require.Equal(t, "large", n.HardwareType)
		require.Equal(t, "centos", n.ImageType)
	}
	l, err = Create(CreateRequest{ClusterID: "c1", Template: sp.tmpl, Catalog: sp.cat, Size: 6, HardwareType: "small"})
	require.NoError(t, err)
	requireValid(t, sp, l.Nodes)
	for _, n := range l.Nodes {
		// The preference yields to restrictions: namenode needs large,
		// datanode medium or large (medium: the template's default).
		switch {
		case contains(n.Services, "hdfs-namenode"):
			require.Equal(t, "large", n.HardwareType)
		case contains(n.Services, "hdfs-datanode"):
			require.Equal(t, "medium", n.HardwareType)
		default:
			require.Equal(t, "small", n.HardwareType)
		}
	}
}

// tiny builds a template over services with the given constraints, on
// hardware small, medium and large.
func tiny(services []string, cons map[string]domain.ServiceConstraint, must, cant [][]string) (*domain.ClusterTemplate, Catalog) {
	var defs []*domain.Service
	for _, s := range services {
		defs = append(defs, svc(s))
	}
	tmpl := &domain.ClusterTemplate{Meta: domain.Meta{Name: "tiny"}, TemplateSections: domain.TemplateSections{
		Compatibility: domain.Compatibility{Services: services},
		Defaults:      domain.Defaults{Services: services, Provider: "aws"},
		Constraints: domain.Constraints{Services: cons,
			Layout: domain.LayoutConstraint{MustCoexist: must, CantCoexist: cant}},
	}}
	return tmpl, catalogOf(defs, []string{"small", "medium", "large"}, []string{"ubuntu"})
}

func TestCreateExplainsConflicts(t *testing.T) {
	t.Parallel()
	q := func(lo, hi int) domain.ServiceConstraint {
		return domain.ServiceConstraint{Quantities: domain.Quantity{Min: lo, Max: hi}}
	}
	tests := []struct {
		name     string
		services []string
		cons     map[string]domain.ServiceConstraint
		must     [][]string
		cant     [][]string
		size     int
		code     string
		message  string
	}{
		{
			name: "must coexist against hardware", services: []string{"namenode", "datanode"}, size: 3,
			cons: map[string]domain.ServiceConstraint{
				"namenode": {HardwareTypes: []string{"small", "medium"}},
				"datanode": {HardwareTypes: []string{"large"}},
			},
			must: [][]string{{"namenode", "datanode"}},
			code: CodeHardwareConflict, message: "datanode and namenode must coexist but datanode is limited to hardware type large, which namenode may not use",
		},
		{
			name: "restriction to unavailable types", services: []string{"a"}, size: 1,
			cons: map[string]domain.ServiceConstraint{"a": {HardwareTypes: []string{"xlarge"}}},
			code: CodeHardwareConflict, message: "a may only use hardware types xlarge, none of which is available to this cluster (compatible with the template and present on its provider)",
		},
		{
			name: "must and cant coexist", services: []string{"a", "b", "c"}, size: 2,
			must: [][]string{{"a", "b"}}, cant: [][]string{{"b", "a"}},
			code: CodeCoexistConflict, message: "a and b must coexist on every node, but a and b may not all be on one node",
		},
		{
			name: "quantities of coexisting services", services: []string{"a", "b"}, size: 5,
			cons: map[string]domain.ServiceConstraint{"a": q(3, 0), "b": q(0, 2)}, must: [][]string{{"a", "b"}},
			code: CodeQuantityConflict, message: "a needs at least 3 nodes, but b, which must coexist with it, may run on at most 2",
		},
		{
			name: "minimum above size", services: []string{"zookeeper"}, size: 2,
			cons: map[string]domain.ServiceConstraint{"zookeeper": q(3, 5)},
			code: CodeQuantityTooLarge, message: "zookeeper needs at least 3 nodes but the cluster has 2 nodes",
		},
		{
			name: "cant coexist leaves too few nodes", services: []string{"zookeeper", "kafka"}, size: 4,
			cons: map[string]domain.ServiceConstraint{"zookeeper": q(3, 0), "kafka": q(2, 0)}, cant: [][]string{{"zookeeper", "kafka"}},
			code:    CodeCannotShare,
			message: "zookeeper (at least 3 nodes) and kafka (at least 2 nodes) may not share a node (constraints.layout.cantCoexist[0] forbids zookeeper with kafka), so together they need at least 5 nodes but the cluster has 4 nodes",
		},
		{
			name: "hardware keeps services apart", services: []string{"a", "b"}, size: 3,
			cons: map[string]domain.ServiceConstraint{
				"a": {Quantities: domain.Quantity{Min: 2}, HardwareTypes: []string{"small"}},
				"b": {Quantities: domain.Quantity{Min: 2}, HardwareTypes: []string{"large"}},
			},
			code:    CodeCannotShare,
			message: "a (at least 2 nodes) and b (at least 2 nodes) may not share a node (a and b have no hardware type in common), so together they need at least 4 nodes but the cluster has 3 nodes",
		},
		{
			name: "maxima below size", services: []string{"a", "b"}, size: 5,
			cons: map[string]domain.ServiceConstraint{"a": q(1, 2), "b": q(1, 2)},
			code: CodeCapacity,
			message: "every service has a maximum number of nodes and together they can fill at most 4 nodes, but the cluster has 5 nodes; " +
				"raise a maximum or add a service that may run on any number of nodes",
		},
		{
			name: "three-way group", services: []string{"a", "b", "c"}, size: 2,
			cons: map[string]domain.ServiceConstraint{"a": q(2, 0), "b": q(2, 0), "c": q(2, 0)}, cant: [][]string{{"a", "b", "c"}},
			code: CodeCannotPack,
			message: "a (at least 2 nodes), b (at least 2 nodes) and c (at least 2 nodes) may not all be on one node (because of constraints.layout.cantCoexist[0]), " +
				"so a node holds at most 2 of them and together they need at least 3 nodes but the cluster has 2 nodes",
		},
		{
			name: "four-way group", services: []string{"a", "b", "c", "d"}, size: 2,
			cons: map[string]domain.ServiceConstraint{"a": q(2, 0), "b": q(2, 0), "c": q(2, 0), "d": q(2, 0)}, cant: [][]string{{"a", "b", "c", "d"}},
			code: CodeCannotPack,
			message: "a (at least 2 nodes), b (at least 2 nodes), c (at least 2 nodes) and d (at least 2 nodes) may not all be on one node (because of constraints.layout.cantCoexist[0]), " +
				"so a node holds at most 3 of them and together they need at least 3 nodes but the cluster has 2 nodes",
		},
		{
			// A ring of five: no three conflict pairwise and no group has
			// three members; only all five pairs together say that each node
			// holds at most two of them, so five need two and a half nodes.
			name: "odd ring", services: []string{"a", "b", "c", "d", "e"}, size: 2,
			cant: [][]string{{"a", "b"}, {"b", "c"}, {"c", "d"}, {"d", "e"}, {"e", "a"}},
			code: CodeCannotPack,
			message: "a (at least 1 node), b (at least 1 node), c (at least 1 node), d (at least 1 node) and e (at least 1 node) cannot all be placed: " +
				"constraints.layout.cantCoexist[0], constraints.layout.cantCoexist[1], constraints.layout.cantCoexist[2], constraints.layout.cantCoexist[3] and " +
				"constraints.layout.cantCoexist[4] keep them apart so that, sharing nodes as far as those constraints allow, they need at least 3 nodes but the cluster has 2 nodes; " +
				"add nodes or loosen those constraints",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tmpl, cat := tiny(tt.services, tt.cons, tt.must, tt.cant)
			_, err := Create(CreateRequest{ClusterID: "c", Template: tmpl, Catalog: cat, Size: tt.size})
			requireNoLayout(t, err, tt.code, tt.message)
			require.Contains(t, err.Error(), tt.message)
			// One node more (or fewer constraints) fixes the count problems;
			// the checker must accept whatever is then returned.
			if tt.code == CodeCannotShare || tt.code == CodeCannotPack {
				l, err := Create(CreateRequest{ClusterID: "c", Template: tmpl, Catalog: cat, Size: tt.size + 1})
				require.NoError(t, err)
				requireValid(t, clusterSpec{tmpl: tmpl, cat: cat, provider: "aws", services: uniqueSorted(tt.services)}, l.Nodes)
			}
		})
	}
}

func TestCreateFillsEveryNode(t *testing.T) {
	t.Parallel()
	// No service may run everywhere, so the dense placement (a and b on
	// the first nodes) would leave nodes empty; b, ranked last, moves off.
	tmpl, cat := tiny([]string{"a", "b"}, map[string]domain.ServiceConstraint{
		"a": {Quantities: domain.Quantity{Max: 2}}, "b": {Quantities: domain.Quantity{Max: 3}},
	}, nil, nil)
	l, err := Create(CreateRequest{ClusterID: "c", Template: tmpl, Catalog: cat, Size: 5})
	require.NoError(t, err)
	requireValid(t, clusterSpec{tmpl: tmpl, cat: cat, provider: "aws", services: []string{"a", "b"}}, l.Nodes)
	require.Equal(t, []Group{
		{Count: 2, NodeLayout: domain.NodeLayout{HardwareType: "large", ImageType: "ubuntu", Services: []string{"a"}}},
		{Count: 3, NodeLayout: domain.NodeLayout{HardwareType: "large", ImageType: "ubuntu", Services: []string{"b"}}},
	}, l.Groups)
}

func TestCreateReportsEveryIndependentConflict(t *testing.T) {
	t.Parallel()
	q := func(lo int) domain.ServiceConstraint {
		return domain.ServiceConstraint{Quantities: domain.Quantity{Min: lo}}
	}
	tmpl, cat := tiny([]string{"a", "b", "c", "d"}, map[string]domain.ServiceConstraint{"a": q(2), "b": q(2), "c": q(3), "d": q(2)}, nil, [][]string{{"a", "b"}, {"c", "d"}})
	_, err := Create(CreateRequest{ClusterID: "c", Template: tmpl, Catalog: cat, Size: 4})
	var nl *NoLayoutError
	require.ErrorAs(t, err, &nl)
	require.Len(t, nl.Reasons, 1, "a+b fit on 4 nodes; only c+d do not")
	require.Equal(t, []string{"c", "d"}, nl.Reasons[0].Services)
	require.Equal(t, []string{"constraints.layout.cantCoexist[1]"}, nl.Reasons[0].Constraints)
	_, err = Create(CreateRequest{ClusterID: "c", Template: tmpl, Catalog: cat, Size: 3})
	require.ErrorAs(t, err, &nl)
	require.Len(t, nl.Reasons, 2)
}

func TestCreateRequestErrors(t *testing.T) {
	t.Parallel()
	tmpl, cat := hadoop()
	rogue := svc("rogue")
	rogue.Dependencies.Conflicts = []string{"base"}
	cat.Services["rogue"] = rogue
	nosql := svc("nosql")
	nosql.Dependencies.Conflicts = []string{"sql-db"}
	cat.Services["nosql"] = nosql
	cat.Services["orphan"] = svc("orphan", "sql-db", "hdfs-namenode")
	cat.HardwareTypes["onprem"] = &domain.HardwareType{Meta: domain.Meta{Name: "onprem"}, ProviderMap: map[string]domain.HardwareFlavor{"local": {Flavor: "x"}}}
	tmpl.Compatibility.Services = append(tmpl.Compatibility.Services, "rogue", "orphan", "nosql")
	tmpl.Compatibility.HardwareTypes = append(tmpl.Compatibility.HardwareTypes, "onprem")
	tests := []struct {
		name    string
		mutate  func(*CreateRequest)
		code    string
		message string
	}{
		{"unknown service", func(r *CreateRequest) { r.Services = []string{"base", "nope"} }, CodeUnknownService, `service "nope" does not exist`},
		{"incompatible service", func(r *CreateRequest) {
			r.Services = []string{"base", "xlarge-svc"}
			cat.Services["xlarge-svc"] = svc("xlarge-svc")
		},
			CodeIncompatibleService, `service "xlarge-svc" is not compatible with template "hadoop"`},
		{"missing dependency", func(r *CreateRequest) { r.Services = []string{"hbase-master", "zookeeper-server", "base"} }, CodeMissingDependency,
			"hbase-master requires hdfs-namenode, which no service on the cluster is or provides; add hdfs-namenode or a service that provides it"},
		{"provided name missing", func(r *CreateRequest) { r.Services = []string{"orphan", "hdfs-namenode", "base"} }, CodeMissingDependency,
			"orphan requires sql-db, which no service on the cluster is or provides; add sql-db or a service that provides it"},
		{"conflict", func(r *CreateRequest) { r.Services = []string{"base", "rogue"} }, CodeServiceConflict, "base conflicts with rogue; they cannot be on the same cluster"},
		{"conflict with a provided name", func(r *CreateRequest) { r.Services = []string{"base", "nosql", "mysql-server"} }, CodeServiceConflict,
			"nosql conflicts with sql-db, which mysql-server provides; they cannot be on the same cluster"},
		{"unknown hardware", func(r *CreateRequest) { r.HardwareType = "huge" }, CodeUnknownHardwareType, `hardware type "huge" does not exist`},
		{"hardware not on provider", func(r *CreateRequest) { r.HardwareType = "onprem" }, CodeHardwareUnavailable, `hardware type "onprem" has no entry for provider "aws"`},
		{"hardware not compatible", func(r *CreateRequest) { r.HardwareType = "xlarge" }, CodeHardwareUnavailable, `hardware type "xlarge" is not compatible with template "hadoop"`},
		{"no hardware on provider", func(r *CreateRequest) { r.Provider = "gcp" }, CodeNoHardwareType, `no hardware types are available to use with template "hadoop" and provider "gcp"`},
		{"size", func(r *CreateRequest) { r.Size = 0 }, CodeInvalidSize, "size is 0; ask for 1 to 10000 nodes"},
		{"template", func(r *CreateRequest) { r.Template = nil }, CodeMissingTemplate, ""},
	}
	for _, tt := range tests {
		req := CreateRequest{ClusterID: "c", Template: tmpl, Catalog: cat, Size: 5}
		tt.mutate(&req)
		_, err := Create(req)
		requireRequestError(t, err, tt.code, tt.message)
	}
	// hive-metastore requires sql-db, which mysql-server provides.
	_, err := Create(CreateRequest{ClusterID: "c", Template: tmpl, Catalog: cat, Size: 5, Services: []string{"base", "hive-metastore", "mysql-server"}})
	require.NoError(t, err)
}

func TestBudgetTurnsPathologicalInputIntoAnError(t *testing.T) {
	t.Parallel()
	// Three-way groups over eight services: no two of them conflict, so only
	// the exhaustive search can decide, and it is given almost nothing.
	services := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
	cons := map[string]domain.ServiceConstraint{}
	for _, s := range services {
		cons[s] = domain.ServiceConstraint{Quantities: domain.Quantity{Min: 40}}
	}
	var cant [][]string
	for i := range services {
		cant = append(cant, []string{services[i], services[(i+1)%8], services[(i+3)%8]})
	}
	tmpl, cat := tiny(services, cons, nil, cant)
	_, err := Create(CreateRequest{ClusterID: "c", Template: tmpl, Catalog: cat, Size: 110, Budget: 200})
	require.ErrorIs(t, err, ErrTooComplex)
	var tc *TooComplexError
	require.True(t, errors.As(err, &tc))
	require.Equal(t, int64(200), tc.Budget)
}

// TestCreateOverlappingTriplesWithinBudget is a regression test: three
// cantCoexist triples around svc08 and svc03 made the exact search of an
// earlier version spend its whole budget on this 10-service template at 114
// nodes (while choosing how many nodes svc01 gets); no clique or group
// bound showed that svc03 and svc08 cannot both fit beside svc01.
func TestCreateOverlappingTriplesWithinBudget(t *testing.T) {
	t.Parallel()
	var names []string
	for i := 0; i < 10; i++ {
		names = append(names, fmt.Sprintf("svc%02d", i))
	}
	tmpl, _ := tiny(names, map[string]domain.ServiceConstraint{
		"svc02": {Quantities: domain.Quantity{Min: 4, Max: 24}},
		"svc04": {Quantities: domain.Quantity{Min: 1}},
		"svc06": {Quantities: domain.Quantity{Min: 1}},
		"svc08": {Quantities: domain.Quantity{Min: 3, Max: 7}, HardwareTypes: []string{"medium", "xlarge"}},
	}, nil, [][]string{
		{"svc01", "svc00", "svc08"}, {"svc01", "svc03", "svc00"}, {"svc08", "svc04", "svc09"},
		{"svc05", "svc03", "svc08"}, {"svc09", "svc02", "svc07"},
	})
	var defs []*domain.Service
	for _, n := range names {
		defs = append(defs, svc(n))
	}
	cat := catalogOf(defs, []string{"small", "medium", "large", "xlarge"}, []string{"debian"})
	l, err := Create(CreateRequest{ClusterID: "c", Template: tmpl, Catalog: cat, Size: 114})
	require.NoError(t, err)
	requireValid(t, clusterSpec{tmpl: tmpl, cat: cat, provider: "aws", services: names}, l.Nodes)
	require.Equal(t, 7, nodesRunning(l.Nodes, "svc08"), "svc08 gets its maximum")
}
