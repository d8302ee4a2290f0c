package automator

import (
	"testing"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/stretchr/testify/require"
)

func TestEnv(t *testing.T) {
	t.Parallel()
	n := &domain.Node{ID: "c1-1000", Num: 1000, Hostname: "h1", Addresses: map[string]string{"access_v4": "1.2.3.4", "bind_v4": "10.0.0.1"},
		NodeLayout: domain.NodeLayout{Services: []string{"hdfs", "zk"}}}
	c := TaskContext{Tenant: "acme", ClusterID: "c1", JobID: "j", TaskID: "t", Attempt: 2, Action: domain.ActionStart, Service: "zk",
		Fields: map[string]string{"zk.port": "2181", "--": "ignored", "nul": "a\x00b"}, Node: NewNodeInfo(n)}
	env := c.Env()
	require.Equal(t, "2", env["HEDDLE_ATTEMPT"])
	require.Equal(t, "1000", env["HEDDLE_NODE_NUM"])
	require.Equal(t, "1.2.3.4", env["HEDDLE_ACCESS_IP"])
	require.Equal(t, "10.0.0.1", env["HEDDLE_BIND_IP"])
	require.Equal(t, "hdfs,zk", env["HEDDLE_SERVICES"])
	require.Equal(t, "2181", env["HEDDLE_FIELD_ZK_PORT"])
	require.NotContains(t, env, "HEDDLE_FIELD___")
	require.NotContains(t, env, "HEDDLE_FIELD_NUL", "a NUL byte cannot travel in the environment")
	require.NotContains(t, env, "HOME", "scripts keep the login's HOME unless the provider gives the node one")
	c.Node.Properties = map[string]string{PropHome: "/var/tmp/homes/acme/c1/c1-1000"}
	require.Equal(t, "/var/tmp/homes/acme/c1/c1-1000", c.Env()["HOME"])

	// NodeInfo copies: changing the node later does not change the context.
	n.Addresses["access_v4"] = "9.9.9.9"
	require.Equal(t, "1.2.3.4", c.Node.Addresses["access_v4"])
}
