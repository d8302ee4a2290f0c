package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/demotest"
	"github.com/heddle-io/heddle/internal/provider/providertest"
)

// TestStaticDemoOnLocalAWS: the demo in one document
// (docs/examples/static-demo.yaml), applied through the front door as the
// README's local-aws section says, on OpenSSH hosts imported with the CLI:
// a web-static cluster reaches ACTIVE and every web node answers through
// its load balancer. The hosts are claimed, because the services listen
// on their addresses, and the node homes are this test's own.
func TestStaticDemoOnLocalAWS(t *testing.T) {
	t.Parallel()
	d := setup(t)
	need(t, "HEDDLE_SSH_HOSTS", "scripts/sshd-hosts.sh")
	d.createTenant("2", "10", "4")
	openssh := providertest.StartOpenSSH(t)
	claimed := openssh.Claim(t, 3, 5*time.Minute)

	homes := providertest.NodeHomes(t)
	t.Cleanup(func() { demotest.KillProcessesUnder(homes) })
	example, err := os.ReadFile("../../docs/examples/static-demo.yaml")
	require.NoError(t, err)
	doc := filepath.Join(t.TempDir(), "static-demo.yaml")
	require.NoError(t, os.WriteFile(doc, []byte(strings.ReplaceAll(string(example), "/var/tmp/heddle-nodes", homes)), 0o600))
	require.Contains(t, d.mustHeddle("apply", "-f", doc), "created")

	invPath := filepath.Join(t.TempDir(), "hosts.yaml")
	require.NoError(t, os.WriteFile(invPath, []byte(openssh.Inventory(t, claimed)), 0o600))
	require.Contains(t, d.mustHeddle("hosts", "import", "pool", invPath, "--known-hosts", os.Getenv("HEDDLE_SSH_KNOWN_HOSTS")), "3 created")

	out := d.mustHeddle("clusters", "create", "shop", "--template", "web-static", "--size", "3", "-o", "json")
	var res struct {
		Cluster struct {
			ID string `json:"id"`
		} `json:"cluster"`
		Job struct {
			ID string `json:"id"`
		} `json:"job"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &res), out)
	require.Contains(t, d.mustHeddle("jobs", "watch", res.Cluster.ID, res.Job.ID), "SUCCEEDED")
	var c struct {
		Status string          `json:"status"`
		Nodes  []demotest.Node `json:"nodes"`
	}
	shown := d.mustHeddle("clusters", "show", res.Cluster.ID, "-o", "json")
	require.NoError(t, json.Unmarshal([]byte(shown), &c), shown)
	require.Equal(t, "ACTIVE", c.Status)
	web := 0
	for _, n := range c.Nodes {
		for _, s := range n.Services {
			if s == "web" {
				web++
			}
		}
	}
	require.Len(t, demotest.Answerers(t, demotest.LBAddress(c.Nodes), 3*web), web, "every web node answers through the load balancer")
	d.mustHeddle("clusters", "delete", res.Cluster.ID, "--wait")
	require.Equal(t, "TERMINATED", d.clusterStatus(res.Cluster.ID))
}
