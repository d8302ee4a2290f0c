package planner

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/domain"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

type scenario struct {
	name string
	req  Request
}

// scenarios are the operations the golden files and property checks cover:
// each operation on a Hadoop-like cluster and on a three-tier web application.
func scenarios() []scenario {
	hs, hr := hadoopServices(), hadoopReferences()
	hadoop := func(op domain.Operation, old, new []domain.Node) Request {
		return Request{Operation: op, Old: old, New: new, Services: hs, ConfigReferences: hr}
	}
	ws, wr := webServices(), webReferences()
	web := func(op domain.Operation, old, new []domain.Node) Request {
		return Request{Operation: op, Old: old, New: new, Services: ws, ConfigReferences: wr}
	}
	with := func(r Request, edit func(*Request)) Request { edit(&r); return r }
	h6 := hadoopNodes(0)
	hbase := []string{"hbase-master", "hbase-regionserver"}
	return []scenario{
		{"hadoop-create", hadoop(domain.OpCreate, nil, h6)},
		{"hadoop-create-unknown-references", with(hadoop(domain.OpCreate, nil, h6), func(r *Request) { r.ConfigReferences = nil })},
		{"hadoop-delete", hadoop(domain.OpDelete, h6, nil)},
		{"hadoop-delete-force", with(hadoop(domain.OpDelete, h6, nil), func(r *Request) { r.Force = true })},
		{"hadoop-expand", hadoop(domain.OpExpand, h6, hadoopNodes(2))},
		{"hadoop-expand-restart", with(hadoop(domain.OpExpand, h6, hadoopNodes(2)), func(r *Request) { r.Restart = true })},
		{"hadoop-shrink", hadoop(domain.OpShrink, h6, without(h6, "hadoop-1003"))},
		{"hadoop-shrink-restart", with(hadoop(domain.OpShrink, h6, without(h6, "hadoop-1003")), func(r *Request) { r.Restart = true })},
		{"hadoop-reconfigure", hadoop(domain.OpReconfigure, h6, nil)},
		{"hadoop-reconfigure-restart-zookeeper", with(hadoop(domain.OpReconfigure, h6, nil), func(r *Request) {
			r.Restart, r.Selected = true, []string{"zookeeper-server"}
		})},
		{"hadoop-add-services", hadoop(domain.OpAddServices, stripServices(h6, hbase...), h6)},
		{"hadoop-remove-services", hadoop(domain.OpRemoveServices, h6, stripServices(h6, hbase...))},
		{"hadoop-start-regionserver", with(hadoop(domain.OpStartServices, h6, nil), func(r *Request) { r.Selected = []string{"hbase-regionserver"} })},
		{"hadoop-stop-namenode", with(hadoop(domain.OpStopServices, h6, nil), func(r *Request) { r.Selected = []string{"hadoop-hdfs-namenode"} })},
		{"hadoop-restart-zookeeper", with(hadoop(domain.OpRestartServices, h6, nil), func(r *Request) { r.Selected = []string{"zookeeper-server"} })},
		{"hadoop-rolling-restart-workers", with(hadoop(domain.OpRollingRestart, h6, nil), func(r *Request) {
			r.Selected, r.BatchSize = []string{"hadoop-hdfs-datanode", "hbase-regionserver"}, 2
		})},
		{"hadoop-sync-template", hadoop(domain.OpSyncTemplate, h6, h6)},
		{"hadoop-start-all", hadoop(domain.OpStartServices, h6, nil)},
		{"hadoop-stop-all", hadoop(domain.OpStopServices, h6, nil)},

		{"web-create", web(domain.OpCreate, nil, webNodes(3))},
		{"web-delete", web(domain.OpDelete, webNodes(3), nil)},
		{"web-expand", web(domain.OpExpand, webNodes(3), webNodes(5))},
		{"web-expand-large", with(web(domain.OpExpand, webNodes(3), webNodes(20)), func(r *Request) {
			r.Limits = Limits{MaxDependsOn: 6, MaxDependents: 6}
		})},
		{"web-shrink", web(domain.OpShrink, webNodes(3), webNodes(2))},
		{"web-shrink-force", with(web(domain.OpShrink, webNodes(3), webNodes(2)), func(r *Request) { r.Force = true })},
		{"web-delete-force", with(web(domain.OpDelete, webNodes(3), nil), func(r *Request) { r.Force = true })},
		{"web-reconfigure", web(domain.OpReconfigure, webNodes(3), nil)},
		{"web-start-all", web(domain.OpStartServices, webNodes(3), nil)},
		{"web-stop-all", web(domain.OpStopServices, webNodes(3), nil)},
		{"web-reconfigure-restart", with(web(domain.OpReconfigure, webNodes(3), nil), func(r *Request) { r.Restart = true })},
		{"web-add-services", with(web(domain.OpAddServices, webNodes(3), webNodes(3, "memcached")), func(r *Request) { r.Restart = true })},
		{"web-remove-services", web(domain.OpRemoveServices, webNodes(3, "memcached"), webNodes(3))},
		{"web-start-haproxy", with(web(domain.OpStartServices, webNodes(3), nil), func(r *Request) { r.Selected = []string{"haproxy"} })},
		{"web-stop-mysql", with(web(domain.OpStopServices, webNodes(3), nil), func(r *Request) { r.Selected = []string{"mysql"} })},
		{"web-restart-all", web(domain.OpRestartServices, webNodes(3), nil)},
		{"web-rolling-restart", with(web(domain.OpRollingRestart, webNodes(5), nil), func(r *Request) {
			r.Selected, r.BatchSize = []string{"nginx", "php-fpm"}, 2
		})},
		{"web-sync-template", with(web(domain.OpSyncTemplate, webNodes(3), webNodes(3, "memcached")), func(r *Request) { r.Restart = true })},
	}
}

func TestGoldenPlans(t *testing.T) {
	t.Parallel()
	for _, sc := range scenarios() {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			plan, err := Build(sc.req)
			require.NoError(t, err)
			pv, err := NewPreview(plan, estimates)
			require.NoError(t, err)
			got := pv.String()

			path := filepath.Join("testdata", sc.name+".golden")
			if *update {
				require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
			}
			want, err := os.ReadFile(path)
			require.NoError(t, err, "run go test ./planner -run TestGoldenPlans -update to create it")
			require.Equal(t, string(want), got, "plan changed; if on purpose, rerun with -update and review the diff")
		})
	}
}
