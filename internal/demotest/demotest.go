// Package demotest serves the tests that run the demo catalog
// (docs/examples/catalog.yaml) on local-provider nodes: the local server's,
// the CLI's and the Lambdas' end-to-end tests all check a cluster the same
// way, by asking its load balancer which web nodes answer.
package demotest

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// LBPort is the demo load balancer's port on its node.
const LBPort = "18000"

// Answerers sends n requests through the demo load balancer at the lb node's
// address and returns the web nodes that answered (each answers "hello from
// <host> (<ip>); visits so far: N").
func Answerers(t testing.TB, lbAddress string, n int) map[string]bool {
	t.Helper()
	require.NotEmpty(t, lbAddress, "the cluster has a load balancer node")
	client := &http.Client{Timeout: 10 * time.Second}
	seen := map[string]bool{}
	for range n {
		resp, err := client.Get("http://" + lbAddress + ":" + LBPort + "/")
		require.NoError(t, err)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
		fields := strings.Fields(string(body))
		require.GreaterOrEqual(t, len(fields), 3, "%s", body)
		seen[fields[2]] = true
	}
	return seen
}
