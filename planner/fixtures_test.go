package planner

import (
	"fmt"
	"slices"
	"time"

	"github.com/heddle-io/heddle/internal/domain"
)

// The fixtures describe two catalogs in the shape Coopr's example templates
// had: a Hadoop stack and a three-tier web application.

// svc builds a service. actions lists the actions it defines; timeouts and
// retries keep their defaults unless a test sets them.
func svc(name string, actions string, install, runtime []string, provides ...string) *domain.Service {
	s := &domain.Service{
		Meta: domain.Meta{Name: name},
		Dependencies: domain.ServiceDependencies{
			Provides: provides,
			Install:  domain.DependencySet{Requires: install},
			Runtime:  domain.DependencySet{Requires: runtime},
		},
		Actions: map[domain.Action]domain.ServiceAction{},
	}
	for _, a := range actionLetters(actions) {
		s.Actions[a] = domain.ServiceAction{Type: "shell", Fields: map[string]string{"script": name + "-" + string(a) + ".sh"}}
	}
	return s
}

// actionLetters reads "icsxtr" as install, configure, initialize (s: setup),
// start (x: execute), stop (t), remove (r).
func actionLetters(s string) []domain.Action {
	m := map[rune]domain.Action{
		'i': domain.ActionInstall, 'c': domain.ActionConfigure, 's': domain.ActionInitialize,
		'x': domain.ActionStart, 't': domain.ActionStop, 'r': domain.ActionRemove,
	}
	var out []domain.Action
	for _, r := range s {
		out = append(out, m[r])
	}
	return out
}

func usesAtRuntime(s *domain.Service, names ...string) *domain.Service {
	s.Dependencies.Runtime.Uses = append(s.Dependencies.Runtime.Uses, names...)
	return s
}

func catalog(services ...*domain.Service) map[string]*domain.Service {
	out := map[string]*domain.Service{}
	for _, s := range services {
		out[s.Name] = s
	}
	return out
}

func withTimeout(s *domain.Service, a domain.Action, timeout time.Duration, retries int) *domain.Service {
	sa := s.Actions[a]
	sa.Timeout = domain.Duration(timeout)
	sa.Retries = &retries
	s.Actions[a] = sa
	return s
}

func hadoopServices() map[string]*domain.Service {
	base := []string{"base"}
	return catalog(
		svc("base", "icr", nil, nil),
		withTimeout(svc("hadoop-hdfs-namenode", "icsxtr", base, nil), domain.ActionInitialize, 20*time.Minute, 1),
		svc("hadoop-hdfs-secondarynamenode", "icxtr", base, []string{"hadoop-hdfs-namenode"}),
		svc("hadoop-hdfs-datanode", "icxtr", base, []string{"hadoop-hdfs-namenode"}),
		svc("hadoop-yarn-resourcemanager", "icxtr", base, []string{"hadoop-hdfs-namenode"}),
		svc("hadoop-yarn-nodemanager", "icxtr", base, []string{"hadoop-yarn-resourcemanager", "hadoop-hdfs-datanode"}),
		// Other services name the ensemble by what it provides.
		svc("zookeeper-server", "icsxtr", base, nil, "zookeeper"),
		svc("hbase-master", "icsxtr", base, []string{"hadoop-hdfs-namenode", "zookeeper"}),
		svc("hbase-regionserver", "icxtr", base, []string{"hbase-master", "hadoop-hdfs-datanode"}),
	)
}

// hadoopReferences is what the Hadoop services' scripts and cluster config
// name through macros.
func hadoopReferences() map[string][]string {
	return map[string][]string{
		ClusterConfigKey:              {"hadoop-hdfs-namenode", "hadoop-yarn-resourcemanager"},
		"hadoop-hdfs-namenode":        {"hadoop-hdfs-datanode"},
		"hadoop-yarn-resourcemanager": {"hadoop-yarn-nodemanager"},
		"zookeeper-server":            {"zookeeper-server"},
		"hbase-master":                {"zookeeper"},
		"hbase-regionserver":          {"zookeeper", "hbase-master"},
	}
}

func mkNode(id string, num int, services ...string) domain.Node {
	slices.Sort(services)
	return domain.Node{ID: id, Num: num, NodeLayout: domain.NodeLayout{HardwareType: "large", ImageType: "debian-12", Services: services}}
}

var (
	hadoopMaster   = []string{"base", "hadoop-hdfs-namenode", "hadoop-yarn-resourcemanager", "hbase-master"}
	hadoopMaster2  = []string{"base", "hadoop-hdfs-secondarynamenode", "zookeeper-server"}
	hadoopWorkerZK = []string{"base", "hadoop-hdfs-datanode", "hadoop-yarn-nodemanager", "hbase-regionserver", "zookeeper-server"}
	hadoopWorker   = []string{"base", "hadoop-hdfs-datanode", "hadoop-yarn-nodemanager", "hbase-regionserver"}
)

// hadoopNodes is a six-node Hadoop cluster: two masters, two workers that
// also run ZooKeeper, two plain workers, plus extra plain workers.
func hadoopNodes(extraWorkers int) []domain.Node {
	nodes := []domain.Node{
		mkNode("hadoop-1000", 1000, hadoopMaster...),
		mkNode("hadoop-1001", 1001, hadoopMaster2...),
		mkNode("hadoop-1002", 1002, hadoopWorkerZK...),
		mkNode("hadoop-1003", 1003, hadoopWorkerZK...),
		mkNode("hadoop-1004", 1004, hadoopWorker...),
		mkNode("hadoop-1005", 1005, hadoopWorker...),
	}
	for i := 0; i < extraWorkers; i++ {
		nodes = append(nodes, mkNode(fmt.Sprintf("hadoop-%d", 1006+i), 1006+i, hadoopWorker...))
	}
	return nodes
}

func webServices() map[string]*domain.Service {
	base := []string{"base"}
	return catalog(
		svc("base", "ic", nil, nil),
		svc("haproxy", "icxtr", base, []string{"http-backend"}),
		svc("nginx", "icxtr", base, []string{"php-fpm"}, "http-backend"),
		usesAtRuntime(svc("php-fpm", "icxtr", base, []string{"sql-db", "kv-store"}), "cache"),
		svc("memcached", "icxtr", base, nil, "cache"),
		withTimeout(svc("mysql", "icsxtr", base, nil, "sql-db"), domain.ActionInstall, 30*time.Minute, 2),
		svc("redis", "icxtr", base, nil, "kv-store"),
	)
}

func webReferences() map[string][]string {
	return map[string][]string{
		"haproxy": {"http-backend"},
		"php-fpm": {"sql-db", "kv-store", "cache"},
	}
}

// webNodes is a load balancer, one data node and web servers, which run
// extra services (memcached) if asked.
func webNodes(webServers int, extra ...string) []domain.Node {
	nodes := []domain.Node{
		mkNode("lb-1000", 1000, "base", "haproxy"),
		mkNode("db-1001", 1001, "base", "mysql", "redis"),
	}
	for i := 0; i < webServers; i++ {
		services := append([]string{"base", "nginx", "php-fpm"}, extra...)
		nodes = append(nodes, mkNode(fmt.Sprintf("web-%d", 1002+i), 1002+i, services...))
	}
	return nodes
}

// without returns nodes minus the named ones.
func without(nodes []domain.Node, ids ...string) []domain.Node {
	var out []domain.Node
	for _, n := range nodes {
		if !slices.Contains(ids, n.ID) {
			out = append(out, n)
		}
	}
	return out
}

// stripServices returns nodes with the named services taken off.
func stripServices(nodes []domain.Node, services ...string) []domain.Node {
	out := make([]domain.Node, len(nodes))
	for i, n := range nodes {
		n.Services = slices.DeleteFunc(slices.Clone(n.Services), func(s string) bool { return slices.Contains(services, s) })
		out[i] = n
	}
	return out
}

// estimates are rough per-action durations, used for critical paths.
var estimates = ActionEstimates(map[domain.Action]time.Duration{
	domain.ActionCreate:     90 * time.Second,
	domain.ActionConfirm:    20 * time.Second,
	domain.ActionBootstrap:  30 * time.Second,
	domain.ActionInstall:    120 * time.Second,
	domain.ActionConfigure:  15 * time.Second,
	domain.ActionInitialize: 40 * time.Second,
	domain.ActionStart:      10 * time.Second,
	domain.ActionStop:       10 * time.Second,
	domain.ActionRemove:     30 * time.Second,
	domain.ActionDelete:     30 * time.Second,
}, time.Minute)
