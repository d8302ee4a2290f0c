package macros

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/heddle-io/heddle/internal/domain"
)

// bigLayout is a 1,000-node cluster: 5 zookeepers, 3 masters, every node a
// datanode.
func bigLayout() ([]domain.Node, *domain.Node) {
	nodes := make([]domain.Node, 1000)
	for i := range nodes {
		services := []string{"datanode", "base"}
		if i < 5 {
			services = append(services, "zookeeper")
		}
		if i >= 5 && i < 8 {
			services = append(services, "master")
		}
		nodes[i] = domain.Node{
			ID: fmt.Sprintf("node-%04d", i), Num: 1000 + (i*7919)%1000,
			Hostname:   fmt.Sprintf("host-%04d.cluster.example.com", i),
			Addresses:  map[string]string{AccessV4: fmt.Sprintf("54.1.%d.%d", i/256, i%256), BindV4: fmt.Sprintf("10.1.%d.%d", i/256, i%256)},
			NodeLayout: domain.NodeLayout{Services: services},
		}
	}
	return nodes, &nodes[500]
}

var benchConfig = json.RawMessage(`{
  "hbase": {"zookeeper.quorum": "%join(map(host.service.zookeeper,'$:2181'),',')%", "rootdir": "hdfs://%host.service.master[0]%:8020/hbase"},
  "hdfs": {"slaves": "%join(host.service.datanode,'\n')%", "count": "%num.service.datanode%", "bind": "%ip.self%:50010"},
  "zookeeper": {"myid": "%instance.self.service.zookeeper%", "servers": "%join(map(ip.service.zookeeper,'server.$:2888:3888'),' ')%"},
  "cluster": "%cluster.id% owned by %cluster.owner% on %host.self%", "plain": "no macros here", "port": 8080
}`)

func BenchmarkNewLayout1000(b *testing.B) {
	nodes, _ := bigLayout()
	b.ReportAllocs()
	for b.Loop() {
		NewLayout("c-1", "alice", nodes)
	}
}

func BenchmarkExpandJSON1000(b *testing.B) {
	nodes, self := bigLayout()
	layout := NewLayout("c-1", "alice", nodes)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ExpandJSON(benchConfig, layout, self); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTaskExpansion1000 is one task's whole cost: index the layout, then
// expand the cluster config and an action field.
func BenchmarkTaskExpansion1000(b *testing.B) {
	nodes, self := bigLayout()
	b.ReportAllocs()
	for b.Loop() {
		layout := NewLayout("c-1", "alice", nodes)
		if _, err := ExpandJSON(benchConfig, layout, self); err != nil {
			b.Fatal(err)
		}
		if _, err := Expand("start --peers %join(host.service.datanode,',')%", layout, self); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkExpandParsedListOf1000(b *testing.B) {
	nodes, self := bigLayout()
	layout := NewLayout("c-1", "alice", nodes)
	tmpl, err := Parse("%join(map(ip.service.datanode,'$:50010'),',')%")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tmpl.Expand(layout, self); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParse(b *testing.B) {
	text := "hdfs://%host.service.master[0]%:8020/x %join(map(host.service.zookeeper,'$:2181'),',')% %instance.self.service.zookeeper%"
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(text); err != nil {
			b.Fatal(err)
		}
	}
}
