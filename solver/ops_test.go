package solver

import (
	"fmt"
	"testing"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/stretchr/testify/require"
)

// hadoopCluster creates a Hadoop-like cluster of n nodes with services.
func hadoopCluster(t *testing.T, n int, services []string) (Cluster, clusterSpec) {
	t.Helper()
	sp := hadoopSpec()
	if services != nil {
		sp.services = uniqueSorted(services)
	}
	l, err := Create(CreateRequest{ClusterID: "c1", Template: sp.tmpl, Catalog: sp.cat, Size: n, Services: services})
	require.NoError(t, err)
	return Cluster{ID: "c1", Template: sp.tmpl, Provider: "aws", Services: sp.services, Nodes: l.Nodes}, sp
}

func TestExpand(t *testing.T) {
	t.Parallel()
	cl, sp := hadoopCluster(t, 3, nil)
	l, err := Expand(ExpandRequest{Cluster: cl, Catalog: sp.cat, Count: 4})
	require.NoError(t, err)
	requireValid(t, sp, l.Nodes)
	require.Equal(t, cl.Nodes, l.Nodes[:3], "existing nodes keep exactly what they have")
	require.Equal(t, []string{"c1-1003", "c1-1004", "c1-1005", "c1-1006"}, l.NewNodes)
	worker := []string{"base", "hbase-regionserver", "hdfs-datanode", "yarn-nodemanager"}
	// The worker layout with zookeeper is copied while zookeeper may grow
	// (to its maximum of 5); then workers without it.
	require.Equal(t, cl.Nodes[1].Services, l.Nodes[3].Services)
	require.Equal(t, cl.Nodes[1].Services, l.Nodes[4].Services)
	require.Equal(t, worker, l.Nodes[5].Services)
	require.Equal(t, worker, l.Nodes[6].Services)
	require.Equal(t, 5, nodesRunning(l.Nodes, "zookeeper-server"))

	again, err := Expand(ExpandRequest{Cluster: Cluster{ID: "c1", Template: sp.tmpl, Provider: "aws", Services: sp.services, Nodes: l.Nodes}, Catalog: sp.cat, Count: 1000})
	require.NoError(t, err)
	requireValid(t, sp, again.Nodes)
	require.Len(t, again.NewNodes, 1000)
	require.Equal(t, "c1-2006", again.NewNodes[999])
	for _, n := range again.Nodes[7:] {
		require.Equal(t, worker, n.Services)
	}
}

func TestExpandNewLayoutsWhenNoneCanBeCopied(t *testing.T) {
	t.Parallel()
	tmpl, cat := tiny([]string{"a", "b"}, map[string]domain.ServiceConstraint{
		"a": {Quantities: domain.Quantity{Min: 1, Max: 2}},
		"b": {Quantities: domain.Quantity{Min: 1, Max: 3}},
	}, nil, [][]string{{"a", "b"}})
	sp := clusterSpec{tmpl: tmpl, cat: cat, provider: "aws", services: []string{"a", "b"}}
	l, err := Create(CreateRequest{ClusterID: "c", Template: tmpl, Catalog: cat, Size: 2})
	require.NoError(t, err)
	cl := Cluster{ID: "c", Template: tmpl, Provider: "aws", Services: sp.services, Nodes: l.Nodes}
	ex, err := Expand(ExpandRequest{Cluster: cl, Catalog: cat, Count: 3})
	require.NoError(t, err)
	requireValid(t, sp, ex.Nodes)
	_, err = Expand(ExpandRequest{Cluster: cl, Catalog: cat, Count: 4})
	requireNoLayout(t, err, CodeCapacity, "every service has a maximum number of nodes and together they can fill at most 3 more nodes, "+
		"but the expansion adds 4 nodes; raise a maximum or add a service that may run on any number of nodes")
}

func TestExpandRefusals(t *testing.T) {
	t.Parallel()
	cl, sp := hadoopCluster(t, 5, nil)
	tmpl := *sp.tmpl
	tmpl.Constraints.Size.Max = 6
	c2 := cl
	c2.Template = &tmpl
	_, err := Expand(ExpandRequest{Cluster: c2, Catalog: sp.cat, Count: 2})
	requireNoLayout(t, err, CodeSizeOutOfRange, `template "hadoop" allows 1 to 6 nodes but 7 nodes were asked for`)

	tight, cat := hadoop()
	tight.Constraints.Services["zookeeper-server"] = domain.ServiceConstraint{Quantities: domain.Quantity{Min: 3, Max: 4}}
	c3 := cl
	c3.Template = tight
	_, err = Expand(ExpandRequest{Cluster: c3, Catalog: cat, Count: 1})
	requireNoLayout(t, err, CodeAboveMaximum, "zookeeper-server already runs on 5 nodes, more than its maximum of 4; "+
		"no expansion can fix that, shrink the cluster or sync it to a template that allows more")

	_, err = Expand(ExpandRequest{Cluster: cl, Catalog: sp.cat, Count: 0})
	requireRequestError(t, err, CodeInvalidCount, "count is 0; an expansion adds at least 1 node")
}

func TestShrink(t *testing.T) {
	t.Parallel()
	cl, sp := hadoopCluster(t, 6, nil)
	// Groups: three singletons (1000-1002: the secondary/worker node, the
	// master, the second hbase master) then workers with zookeeper
	// (1003-1005).
	require.Equal(t, 5, nodesRunning(cl.Nodes, "zookeeper-server"))
	l, err := Shrink(ShrinkRequest{Cluster: cl, Count: 2})
	require.NoError(t, err)
	require.Equal(t, []string{"c1-1004", "c1-1005"}, l.RemovedNodes, "highest first")
	requireValid(t, sp, l.Nodes)

	// A third would take zookeeper below 3: the newest node that can go is
	// the second hbase master.
	l, err = Shrink(ShrinkRequest{Cluster: cl, Count: 3})
	require.NoError(t, err)
	require.Equal(t, []string{"c1-1002", "c1-1004", "c1-1005"}, l.RemovedNodes)
	requireValid(t, sp, l.Nodes)

	_, err = Shrink(ShrinkRequest{Cluster: cl, Count: 4})
	requireNoLayout(t, err, CodeBelowMinimum, "")

	l, err = Shrink(ShrinkRequest{Cluster: cl, NodeIDs: []string{"c1-1003"}})
	require.NoError(t, err)
	require.Equal(t, []string{"c1-1003"}, l.RemovedNodes)
	require.Len(t, l.Nodes, 5)

	_, err = Shrink(ShrinkRequest{Cluster: cl, NodeIDs: []string{"c1-1001"}})
	requireNoLayout(t, err, CodeBelowMinimum, "removing c1-1001 leaves hdfs-namenode on 0 nodes, below its minimum of 1")

	_, err = Shrink(ShrinkRequest{Cluster: cl, NodeIDs: []string{"c1-999"}})
	requireRequestError(t, err, CodeUnknownNode, `node "c1-999" is not in the cluster`)
	_, err = Shrink(ShrinkRequest{Cluster: cl, Count: 6})
	requireRequestError(t, err, CodeInvalidCount, "")
}

func TestShrinkSkipsOnlyWhatItMust(t *testing.T) {
	t.Parallel()
	// Greedy newest-first would take 1002 (a and b) and then be stuck; the
	// solver sees that 1002 cannot go if two nodes must and takes 1001, 1000.
	tmpl, _ := tiny([]string{"a", "b"}, map[string]domain.ServiceConstraint{
		"a": {Quantities: domain.Quantity{Min: 1}}, "b": {Quantities: domain.Quantity{Min: 1}},
	}, nil, nil)
	node := func(num int, services ...string) domain.Node {
		return domain.Node{ID: fmt.Sprint("c-", num), Num: num, NodeLayout: domain.NodeLayout{HardwareType: "small", ImageType: "ubuntu", Services: services}}
	}
	cl := Cluster{ID: "c", Template: tmpl, Provider: "aws", Services: []string{"a", "b"},
		Nodes: []domain.Node{node(1000, "b"), node(1001, "a"), node(1002, "a", "b"), node(1003, "a"), node(1004, "b")}}
	l, err := Shrink(ShrinkRequest{Cluster: cl, Count: 4})
	require.NoError(t, err)
	require.Equal(t, []string{"c-1000", "c-1001", "c-1003", "c-1004"}, l.RemovedNodes)
	l, err = Shrink(ShrinkRequest{Cluster: cl, Count: 3})
	require.NoError(t, err)
	require.Equal(t, []string{"c-1002", "c-1003", "c-1004"}, l.RemovedNodes)
}

func TestAddServices(t *testing.T) {
	t.Parallel()
	var without []string
	for _, s := range hadoopSpec().services {
		if s != "hbase-master" && s != "hbase-regionserver" {
			without = append(without, s)
		}
	}
	cl, sp := hadoopCluster(t, 6, without)
	l, err := AddServices(AddServicesRequest{Cluster: cl, Catalog: sp.cat, Services: []string{"hbase-master", "hbase-regionserver"}})
	require.NoError(t, err)
	full := hadoopSpec()
	requireValid(t, full, l.Nodes)
	require.Len(t, l.Nodes, 6)
	require.Empty(t, l.NewNodes)
	for i, n := range l.Nodes {
		// Region servers must coexist with data nodes: exactly there.
		require.Equal(t, contains(n.Services, "hdfs-datanode"), contains(n.Services, "hbase-regionserver"))
		require.Subset(t, n.Services, cl.Nodes[i].Services)
		require.Equal(t, cl.Nodes[i].HardwareType, n.HardwareType)
	}
	// hbase-master may not go with region servers, so only the master node
	// (namenode, resource manager, mysql; no data node) can take it.
	require.Equal(t, 1, nodesRunning(l.Nodes, "hbase-master"))
	require.Len(t, l.Changed, 6)

	_, err = AddServices(AddServicesRequest{Cluster: cl, Catalog: sp.cat, Services: []string{"hdfs-namenode"}})
	requireRequestError(t, err, CodeServiceOnCluster, "hdfs-namenode is already on the cluster")
}

func TestAddServicesWithNewNodes(t *testing.T) {
	t.Parallel()
	tmpl, cat := tiny([]string{"db", "cache", "web"}, map[string]domain.ServiceConstraint{
		"cache": {Quantities: domain.Quantity{Min: 3, Max: 3}},
	}, nil, [][]string{{"db", "cache"}})
	sp := clusterSpec{tmpl: tmpl, cat: cat, provider: "aws", services: []string{"cache", "db", "web"}}
	l, err := Create(CreateRequest{ClusterID: "c", Template: tmpl, Catalog: cat, Size: 3, Services: []string{"db", "web"}})
	require.NoError(t, err)
	cl := Cluster{ID: "c", Template: tmpl, Provider: "aws", Services: []string{"db", "web"}, Nodes: l.Nodes}
	// db is on every node (free before cache arrived), so cache fits nowhere.
	_, err = AddServices(AddServicesRequest{Cluster: cl, Catalog: cat, Services: []string{"cache"}})
	requireNoLayout(t, err, CodeNoRoom, "cache needs at least 3 nodes but only 0 of the cluster's 3 nodes can run it: "+
		"the others run services it may not coexist with (db, web) or use a hardware or image type it may not use")
	l, err = AddServices(AddServicesRequest{Cluster: cl, Catalog: cat, Services: []string{"cache"}, MaxNewNodes: 5})
	require.NoError(t, err)
	requireValid(t, sp, l.Nodes)
	require.Equal(t, []string{"c-1003", "c-1004", "c-1005"}, l.NewNodes, "the fewest new nodes")
	for _, n := range l.Nodes[3:] {
		// web has no constraint at all, so it runs on every node, new ones too.
		require.Equal(t, []string{"cache", "web"}, n.Services)
	}
	require.Empty(t, l.Changed)
}

func TestRemoveServices(t *testing.T) {
	t.Parallel()
	cl, sp := hadoopCluster(t, 5, nil)
	_, err := RemoveServices(RemoveServicesRequest{Cluster: cl, Catalog: sp.cat, Services: []string{"mysql-server"}})
	requireRequestError(t, err, CodeRequiredByRemaining, "hive-metastore requires sql-db, which only mysql-server provides on the cluster; remove hive-metastore too or keep mysql-server")
	_, err = RemoveServices(RemoveServicesRequest{Cluster: cl, Catalog: sp.cat, Services: []string{"zookeeper-server"}})
	requireRequestError(t, err, CodeRequiredByRemaining, "hbase-master requires zookeeper-server; remove hbase-master too or keep zookeeper-server")
	_, err = RemoveServices(RemoveServicesRequest{Cluster: cl, Catalog: sp.cat, Services: []string{"nope"}})
	requireRequestError(t, err, CodeServiceNotOnCluster, "nope is not on the cluster")

	l, err := RemoveServices(RemoveServicesRequest{Cluster: cl, Catalog: sp.cat, Services: []string{"mysql-server", "hive-metastore"}})
	require.NoError(t, err)
	require.Len(t, l.Nodes, 5)
	require.Zero(t, nodesRunning(l.Nodes, "mysql-server")+nodesRunning(l.Nodes, "hive-metastore"))
	require.NotEmpty(t, l.Changed)
	for _, c := range l.Changed {
		require.Subset(t, []string{"hive-metastore", "mysql-server"}, c.Removed)
	}
	rest := sp
	rest.services = diff(sp.services, []string{"mysql-server", "hive-metastore"})
	requireValid(t, rest, l.Nodes)
}

func TestCheckSync(t *testing.T) {
	t.Parallel()
	cl, sp := hadoopCluster(t, 10, nil)
	require.NoError(t, CheckSync(SyncRequest{Cluster: cl, Template: sp.tmpl, Catalog: sp.cat}))

	v2, cat := hadoop()
	v2.Version = 2
	v2.Constraints.Services["zookeeper-server"] = domain.ServiceConstraint{Quantities: domain.Quantity{Min: 3, Max: 3}}
	v2.Constraints.Layout.CantCoexist = append(v2.Constraints.Layout.CantCoexist, []string{"hbase-master", "mysql-server"})
	v2.Compatibility.HardwareTypes = []string{"medium", "large", "small"}
	v2.Constraints.Services["hdfs-datanode"] = domain.ServiceConstraint{HardwareTypes: []string{"large"}}
	err := CheckSync(SyncRequest{Cluster: cl, Template: v2, Catalog: cat})
	requireNoLayout(t, err, CodeQuantityAboveMaximum, "zookeeper-server runs on 5 nodes but may run on at most 3")
	requireNoLayout(t, err, CodeCantCoexistBroken, "node c1-1001: hbase-master and mysql-server may not all be on one node")
	var nl *NoLayoutError
	require.ErrorAs(t, err, &nl)
	for _, r := range nl.Reasons {
		if r.Code == CodeServiceHardware {
			require.Len(t, r.Nodes, 8, "every data node on medium, grouped in one reason")
		}
	}
}

func TestAddServicesTiedToOldServices(t *testing.T) {
	t.Parallel()
	node := func(num int, services ...string) domain.Node {
		return domain.Node{ID: fmt.Sprint("c-", num), Num: num, NodeLayout: domain.NodeLayout{HardwareType: "small", ImageType: "ubuntu", Services: services}}
	}
	tests := []struct {
		name    string
		cons    map[string]domain.ServiceConstraint
		must    [][]string
		cant    [][]string
		nodes   []domain.Node
		old     []string
		adding  []string
		maxNew  int
		code    string // of the no-layout reason; "" when a layout exists
		message string
		newNode []string // services of every new node
	}{
		{
			// s3 ties s0 and s1 into one unit, which cantCoexist forbids.
			name: "new service ties old ones that must stay apart",
			must: [][]string{{"s3", "s0"}, {"s3", "s1"}}, cant: [][]string{{"s0", "s1"}},
			nodes: []domain.Node{node(1000, "s1"), node(1001, "s0")}, old: []string{"s0", "s1"}, adding: []string{"s3"},
			code: CodeCoexistConflict, message: "s0, s1 and s3 must coexist on every node, but s0 and s1 may not all be on one node",
		},
		{
			name: "tied service needs more nodes than its companion has",
			cons: map[string]domain.ServiceConstraint{"s1": {Quantities: domain.Quantity{Min: 2, Max: 3}}},
			must: [][]string{{"s0", "s1"}}, nodes: []domain.Node{node(1000, "s0", "web"), node(1001, "web")}, old: []string{"s0", "web"}, adding: []string{"s1"},
			code: CodeQuantityConflict, message: "s1 must coexist with s0, which runs on 1 node, but s1 needs 2 to 3 nodes",
		},
		{
			name: "companions go onto new nodes together",
			cons: map[string]domain.ServiceConstraint{"s1": {Quantities: domain.Quantity{Min: 3, Max: 3}}},
			must: [][]string{{"s0", "s1"}}, nodes: []domain.Node{node(1000, "s0", "web"), node(1001, "web")}, old: []string{"s0", "web"}, adding: []string{"s1"}, maxNew: 5,
			newNode: []string{"s0", "s1", "web"},
		},
		{
			name: "too few new nodes allowed for the companions",
			cons: map[string]domain.ServiceConstraint{"s1": {Quantities: domain.Quantity{Min: 4}}},
			must: [][]string{{"s0", "s1"}}, nodes: []domain.Node{node(1000, "s0", "web"), node(1001, "web")}, old: []string{"s0", "web"}, adding: []string{"s1"}, maxNew: 2,
			code: CodeNoRoom, message: "s1 must coexist with s0, which runs on 1 node, and needs at least 4, so 3 more nodes must run s0 and s1, but at most 2 new nodes are allowed",
		},
		{
			name:  "the cluster already breaks the template",
			cons:  map[string]domain.ServiceConstraint{"s0": {Quantities: domain.Quantity{Max: 1}}},
			nodes: []domain.Node{node(1000, "s0"), node(1001, "s0")}, old: []string{"s0"}, adding: []string{"s1"},
			code: CodeAboveMaximum, message: "s0 runs on 2 nodes, above its maximum of 1; adding services cannot fix that, shrink the cluster first",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			all := uniqueSorted(append(append([]string(nil), tt.old...), tt.adding...))
			tmpl, cat := tiny(all, tt.cons, tt.must, tt.cant)
			cl := Cluster{ID: "c", Template: tmpl, Provider: "aws", Services: tt.old, Nodes: tt.nodes}
			l, err := AddServices(AddServicesRequest{Cluster: cl, Catalog: cat, Services: tt.adding, MaxNewNodes: tt.maxNew})
			if tt.code != "" {
				requireNoLayout(t, err, tt.code, tt.message)
				return
			}
			require.NoError(t, err)
			requireValid(t, clusterSpec{tmpl: tmpl, cat: cat, provider: "aws", services: all}, l.Nodes)
			require.NotEmpty(t, l.NewNodes)
			for _, n := range l.Nodes[len(tt.nodes):] {
				require.Equal(t, tt.newNode, n.Services)
			}
		})
	}
}
