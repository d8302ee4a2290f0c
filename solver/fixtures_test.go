package solver

import (
	"fmt"
	"sort"

	"github.com/heddle-io/heddle/internal/domain"
)

// catalogOf builds a catalog where every hardware and image type exists on
// the providers "aws" and "local".
func catalogOf(services []*domain.Service, hardware, images []string) Catalog {
	cat := Catalog{Services: map[string]*domain.Service{}, HardwareTypes: map[string]*domain.HardwareType{}, ImageTypes: map[string]*domain.ImageType{}}
	for _, s := range services {
		cat.Services[s.Name] = s
	}
	for _, h := range hardware {
		cat.HardwareTypes[h] = &domain.HardwareType{Meta: domain.Meta{Name: h}, ProviderMap: map[string]domain.HardwareFlavor{
			"aws": {Flavor: "aws-" + h}, "local": {Flavor: "local-" + h}}}
	}
	for _, im := range images {
		cat.ImageTypes[im] = &domain.ImageType{Meta: domain.Meta{Name: im}, ProviderMap: map[string]domain.ImageRef{
			"aws": {Image: "ami-" + im, SSHUser: "admin"}, "local": {Image: "local-" + im, SSHUser: "root"}}}
	}
	return cat
}

func svc(name string, requires ...string) *domain.Service {
	return &domain.Service{Meta: domain.Meta{Name: name}, Dependencies: domain.ServiceDependencies{Runtime: domain.DependencySet{Requires: requires}}}
}

// hadoop is the 12-service Hadoop-like template of the tests and benchmarks.
func hadoop() (*domain.ClusterTemplate, Catalog) {
	mysql := svc("mysql-server")
	mysql.Dependencies.Provides = []string{"sql-db"}
	services := []*domain.Service{
		svc("base"),
		svc("hdfs-namenode", "base"),
		svc("hdfs-secondarynamenode", "hdfs-namenode"),
		svc("hdfs-datanode", "hdfs-namenode"),
		svc("yarn-resourcemanager", "hdfs-namenode"),
		svc("yarn-nodemanager", "yarn-resourcemanager"),
		svc("mapreduce-historyserver", "yarn-resourcemanager"),
		svc("zookeeper-server", "base"),
		svc("hbase-master", "hdfs-namenode", "zookeeper-server"),
		svc("hbase-regionserver", "hbase-master"),
		svc("hive-metastore", "sql-db"),
		mysql,
	}
	var names []string
	for _, s := range services {
		names = append(names, s.Name)
	}
	one := domain.Quantity{Min: 1, Max: 1}
	tmpl := &domain.ClusterTemplate{Meta: domain.Meta{Name: "hadoop", Version: 1}, TemplateSections: domain.TemplateSections{
		Compatibility: domain.Compatibility{Services: names, HardwareTypes: []string{"small", "medium", "large"}, ImageTypes: []string{"ubuntu", "centos"}},
		Defaults:      domain.Defaults{Services: names, Provider: "aws", HardwareType: "medium", ImageType: "ubuntu"},
		Constraints: domain.Constraints{
			Size: domain.SizeConstraint{Min: 1},
			Layout: domain.LayoutConstraint{
				MustCoexist: [][]string{{"hdfs-datanode", "yarn-nodemanager"}, {"hdfs-datanode", "hbase-regionserver"}},
				CantCoexist: [][]string{
					{"hdfs-namenode", "hdfs-secondarynamenode"},
					{"hdfs-namenode", "hdfs-datanode"},
					{"yarn-resourcemanager", "hdfs-datanode"},
					{"hbase-master", "hbase-regionserver"},
					{"mysql-server", "hdfs-datanode"},
				},
			},
			Services: map[string]domain.ServiceConstraint{
				"hdfs-namenode":           {Quantities: one, HardwareTypes: []string{"large"}},
				"hdfs-secondarynamenode":  {Quantities: one},
				"yarn-resourcemanager":    {Quantities: one, HardwareTypes: []string{"large"}},
				"mapreduce-historyserver": {Quantities: one},
				"zookeeper-server":        {Quantities: domain.Quantity{Min: 3, Max: 5}},
				"hbase-master":            {Quantities: domain.Quantity{Min: 1, Max: 2}},
				"hive-metastore":          {Quantities: one},
				"mysql-server":            {Quantities: one},
				"hdfs-datanode":           {HardwareTypes: []string{"medium", "large"}},
			},
		},
	}}
	return tmpl, catalogOf(services, []string{"small", "medium", "large", "xlarge"}, []string{"ubuntu", "centos"})
}

// adversarial is a template of 20 services that all carry quantity
// constraints, with a few cantCoexist pairs, sized so that layouts exist
// from 20 to 2,000 nodes but packing them is tight at 20.
func adversarial(pairs [][2]int) (*domain.ClusterTemplate, Catalog) {
	var services []*domain.Service
	var names []string
	cons := map[string]domain.ServiceConstraint{}
	for i := 0; i < 20; i++ {
		name := fmt.Sprintf("s%02d", i)
		names = append(names, name)
		services = append(services, svc(name))
		cons[name] = domain.ServiceConstraint{Quantities: domain.Quantity{Min: 1 + i%7, Max: 10 + 13*i}}
	}
	var cant [][]string
	for _, pr := range pairs {
		cant = append(cant, []string{names[pr[0]], names[pr[1]]})
	}
	sort.Strings(names)
	tmpl := &domain.ClusterTemplate{Meta: domain.Meta{Name: "adversarial", Version: 1}, TemplateSections: domain.TemplateSections{
		Compatibility: domain.Compatibility{Services: names},
		Defaults:      domain.Defaults{Services: names, Provider: "aws"},
		Constraints: domain.Constraints{
			Layout:   domain.LayoutConstraint{CantCoexist: cant},
			Services: cons,
		},
	}}
	return tmpl, catalogOf(services, []string{"standard"}, []string{"debian"})
}
