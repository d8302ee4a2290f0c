// Package demotest serves the tests that run the demo catalog
// (docs/examples/catalog.yaml) on local-provider nodes: the local server's,
// the CLI's and the Lambdas' end-to-end tests all check a cluster the same
// way, by asking its load balancer which web nodes answer.
package demotest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"slices"
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
	client := &http.Client{Timeout: 10 * time.Second, Transport: httpClient.Transport}
	seen := map[string]bool{}
	for range n {
		// A web node answers 502 through the load balancer when its own
		// call to kv times out (2 s), which a loaded machine can cause;
		// a second try tells that from a backend that is down.
		var body []byte
		for try := 1; ; try++ {
			resp, err := client.Get("http://" + lbAddress + ":" + LBPort + "/")
			require.NoError(t, err)
			body, _ = io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
			require.Less(t, try, 3, "the load balancer answered %d: %s", resp.StatusCode, body)
			time.Sleep(200 * time.Millisecond)
		}
		fields := strings.Fields(string(body))
		require.GreaterOrEqual(t, len(fields), 3, "%s", body)
		seen[fields[2]] = true
	}
	return seen
}

// Catalog is the demo catalog's path from a package two levels below the
// repository's root (internal/x, cmd/x, functions/x).
const Catalog = "../../docs/examples/catalog.yaml"

// Call sends one API request to baseURL with key (a []byte body goes as
// YAML, anything else as JSON), decodes the answer into out when out is not
// nil, and returns the status.
func Call(t testing.TB, baseURL, key, method, path string, body, out any) int {
	t.Helper()
	var rd io.Reader
	ct := "application/json"
	switch v := body.(type) {
	case nil:
	case []byte:
		rd, ct = bytes.NewReader(v), "application/yaml"
	default:
		data, err := json.Marshal(v)
		require.NoError(t, err)
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, baseURL+path, rd)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+key)
	if rd != nil {
		req.Header.Set("Content-Type", ct)
	}
	resp, err := httpClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	if out != nil {
		require.NoError(t, json.Unmarshal(data, out), "%s %s answered %d: %s", method, path, resp.StatusCode, data)
	}
	return resp.StatusCode
}

// Tenant creates tenant id (admin ann, 5 clusters, maxNodes nodes, 4
// workers) with the superadmin's key, applies the demo catalog as ann, and
// returns ann's key.
func Tenant(t testing.TB, baseURL, superKey, id string, maxNodes int) string {
	t.Helper()
	return TenantWithCatalog(t, baseURL, superKey, id, maxNodes, Catalog)
}

// BigCatalog is the path of the catalog whose template "big" allows 10,000
// nodes, like Catalog.
const BigCatalog = "../../docs/examples/big-catalog.yaml"

// TenantWithCatalog is Tenant with the catalog at path.
func TenantWithCatalog(t testing.TB, baseURL, superKey, id string, maxNodes int, path string) string {
	t.Helper()
	var created struct {
		AdminKey struct {
			Secret string `json:"secret"`
		} `json:"adminKey"`
	}
	require.Equal(t, http.StatusCreated, Call(t, baseURL, superKey, "POST", "/v1/tenants",
		map[string]any{"id": id, "maxClusters": 5, "maxNodes": maxNodes, "workers": 4, "admin": "ann"}, &created))
	doc, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, Call(t, baseURL, created.AdminKey.Secret, "POST", "/v1/catalog", doc, nil))
	return created.AdminKey.Secret
}

// Node is what the tests read of a cluster's node.
type Node struct {
	ID            string            `json:"id"`
	Hostname      string            `json:"hostname"`
	Services      []string          `json:"services"`
	Addresses     map[string]string `json:"addresses"`
	Status        string            `json:"status"`
	ServiceStates map[string]struct {
		State string `json:"state"`
	} `json:"serviceStates"`
}

// WebHosts returns the hostnames of the nodes that run web: the names web
// servers answer with.
func WebHosts(nodes []Node) map[string]bool {
	out := map[string]bool{}
	for _, n := range nodes {
		if slices.Contains(n.Services, "web") {
			out[n.Hostname] = true
		}
	}
	return out
}

// ReachesEveryWebNode requires that requests through the demo load balancer
// reach every web node of the cluster and no other: the load balancer is
// round-robin, so twice as many requests as web nodes reach each.
func ReachesEveryWebNode(t testing.TB, nodes []Node) {
	t.Helper()
	want := WebHosts(nodes)
	require.NotEmpty(t, want, "the cluster runs web")
	require.Equal(t, want, Answerers(t, LBAddress(nodes), 2*len(want)))
}

// States returns every service's recorded run state on every node, as
// "node/service" to state ("" when none was recorded).
func States(nodes []Node) map[string]string {
	out := map[string]string{}
	for _, n := range nodes {
		for _, s := range n.Services {
			out[n.ID+"/"+s] = n.ServiceStates[s].State
		}
	}
	return out
}

// KillProcessesUnder ends every process whose command line names a path
// under dir: what the local provider's nodes started (the demo's python3
// servers run from their node's home, inside the data directory). Node
// processes outlive heddle on purpose, as a machine's would, so a test
// registers this with t.Cleanup to leave nothing behind even when it fails.
func KillProcessesUnder(dir string) {
	_ = exec.Command("pkill", "-KILL", "-f", dir+"/").Run()
}

// LBAddress is the address of the node that runs the demo's load balancer
// alone ("" when there is none).
func LBAddress(nodes []Node) string {
	for _, n := range nodes {
		if len(n.Services) == 1 && n.Services[0] == "lb" {
			return n.Addresses["access_v4"]
		}
	}
	return ""
}

// FailedTasks summarises a job's answer (GET .../jobs/<id>): a line per
// failed task with its last attempt's error and stderr, for a test's failure
// message; the body itself when it is not a job.
func FailedTasks(jobBody []byte) string {
	var v struct {
		Tasks []struct {
			ID       string `json:"id"`
			Status   string `json:"status"`
			Attempts []struct {
				Error  string `json:"error"`
				Stderr string `json:"stderr"`
			} `json:"attempts"`
		} `json:"tasks"`
	}
	if err := json.Unmarshal(jobBody, &v); err != nil {
		return string(jobBody)
	}
	var sb strings.Builder
	for _, t := range v.Tasks {
		if t.Status == "FAILED" && len(t.Attempts) > 0 {
			a := t.Attempts[len(t.Attempts)-1]
			fmt.Fprintf(&sb, "%s: %s %s\n", t.ID, a.Error, a.Stderr)
		}
	}
	return sb.String()
}

// httpClient has a transport of its own: httptest.Server.Close in a parallel
// test closes http.DefaultTransport's idle connections and can break a
// request in flight.
var httpClient = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
