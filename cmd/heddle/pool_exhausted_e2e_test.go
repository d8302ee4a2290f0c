package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/demotest"
	"github.com/heddle-io/heddle/internal/provider/providertest"
	"github.com/heddle-io/heddle/internal/provider/static"
	"github.com/heddle-io/heddle/internal/webhooks"
)

// TestStaticPoolThatRunsOutOfHosts is issue 28 from outside: a 4-node
// web-static cluster on a pool of 6 OpenSSH hosts, one drained, asked to
// expand by 2.
//
// The expand is refused in the dry run and at submission, naming the
// pool, and changes nothing. Then the pool runs out after the submission
// (a pre-start hook drains a host while the job waits for it, and the
// wipe script fails while a marker file exists): one new node finds no
// host, the rollback's wipe of the other fails, and the cluster is
// INCONSISTENT with a node that never got an address. A plain retry
// repairs it once the wipe works again (the rollback reconfigures the
// load balancer against the nodes that exist), and so does a plain
// delete (nothing is stopped or removed on the node that was never
// made). Before the fixes the rollback failed on "layout incomplete",
// every retry the same, and only `delete --force` got out.
func TestStaticPoolThatRunsOutOfHosts(t *testing.T) {
	t.Parallel()
	openssh := providertest.StartOpenSSH(t)
	claimed := openssh.Claim(t, 6, 5*time.Minute)
	s := newServer(t)
	admin := s.tenant("acme")
	s.must(admin, "apply", "-f", "../../docs/examples/catalog.yaml")

	// The demo pool, its wipe failing while the marker exists (the
	// servers run as another user: the marker's directory is readable).
	// The servers' user makes the node homes: under a directory of the
	// test's own, not the shared /var/tmp/heddle-nodes, so that nothing
	// another test left there (or its permissions) matters.
	homes := providertest.NodeHomes(t)
	dir := filepath.Dir(homes)
	// Whatever the test did, nothing the nodes' services started outlives
	// it (the wipe stops them; a failed test may not get there).
	t.Cleanup(func() { demotest.KillProcessesUnder(homes) })
	marker := filepath.Join(dir, "wipe-fails")
	raw, err := os.ReadFile("../../docs/examples/static-pool.yaml")
	require.NoError(t, err)
	doc := strings.ReplaceAll(string(raw), "/var/tmp/heddle-nodes", homes)
	const first = `        home="$HEDDLE_NODE_HOME"`
	require.Contains(t, doc, first)
	pool := filepath.Join(dir, "static-pool.yaml")
	writeFile(t, pool, strings.Replace(doc, first,
		`        if [ -e `+marker+` ]; then echo "wipe: held by the test" >&2; exit 1; fi`+"\n"+first, 1))
	s.must(admin, "apply", "-f", pool)

	invPath := filepath.Join(dir, "hosts.yaml")
	writeFile(t, invPath, openssh.Inventory(t, claimed))
	require.Contains(t, s.must(admin, "hosts", "import", "pool", invPath, "--known-hosts", os.Getenv("HEDDLE_SSH_KNOWN_HOSTS")), "6 created")

	id, job := s.createdID(s.must(admin, "clusters", "create", "shop", "--template", "web-static", "--size", "4", "-o", "json"))
	require.Contains(t, s.must(admin, "jobs", "watch", id, job), "SUCCEEDED")
	free := func() []string {
		var out []string
		for _, h := range s.hosts(admin, "pool") {
			if h.Status == static.StatusFree && !h.Drained {
				out = append(out, h.ID)
			}
		}
		return out
	}
	idle := free()
	require.Len(t, idle, 2)
	s.must(admin, "hosts", "drain", "pool", idle[0])

	// Foreseen by the dry run (exit 0, or 2 with --fail-on-refusal) and
	// refused at submission, with the reason; nothing changes.
	r := s.cli(admin, "clusters", "expand", id, "--count", "2", "--dry-run")
	require.Zero(t, r.code, r.stderr)
	require.Contains(t, r.stdout, "refused if sent for real (pool_exhausted): pool `pool` has 1 free host, 2 needed")
	r = s.cli(admin, "clusters", "expand", id, "--count", "2", "--dry-run", "--fail-on-refusal")
	require.Equal(t, 2, r.code, r.stdout)
	r = s.cli(admin, "clusters", "expand", id, "--count", "2", "--wait")
	require.Equal(t, 1, r.code, r.stdout)
	require.Contains(t, r.stderr, "pool `pool` has 1 free host, 2 needed")
	c := s.show(admin, id)
	require.Equal(t, "ACTIVE", c.Status)
	require.Equal(t, 4, liveNodes(c))
	require.Equal(t, job, c.Progress.JobID, "no job was submitted")
	require.Equal(t, []string{idle[1]}, free())

	// The pool runs out after the submission: the pre-start hook drains
	// one of the two free hosts while the expand waits for it.
	s.must(admin, "hosts", "readmit", "pool", idle[0])
	var mu sync.Mutex
	drain := ""
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var b webhooks.Body
		_ = json.Unmarshal(body, &b)
		mu.Lock()
		host := drain
		if b.Event.Operation == "expand" {
			drain = ""
		}
		mu.Unlock()
		if b.Event.Operation == "expand" && host != "" {
			if res := s.cli(admin, "hosts", "drain", "pool", host); res.code != 0 {
				http.Error(w, res.stderr, http.StatusInternalServerError)
				return
			}
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(hook.Close)
	s.must(admin, "webhooks", "add", hook.URL, "--pre-start")
	inconsistent := func() (job string) {
		mu.Lock()
		drain = idle[0]
		mu.Unlock()
		writeFile(t, marker, "")
		r := s.cli(admin, "clusters", "expand", id, "--count", "2", "--wait")
		require.NotZero(t, r.code, r.stdout)
		c := s.show(admin, id)
		require.Equal(t, "INCONSISTENT", c.Status, "the rollback's wipe failed")
		// Of the two new nodes, the one that found no host is gone: its
		// rollback delete had nothing to do and marked it DELETED at once.
		// The one whose wipe failed is left, with its host.
		planned := 0
		for _, n := range c.Nodes {
			if n.Status == "PLANNED" {
				planned++
				require.NotEmpty(t, n.Addresses, "the node left is the one that got a host: %+v", n)
			}
		}
		require.Equal(t, 1, planned, "%+v", c.Nodes)
		require.Len(t, c.Nodes, 5, "the 4 nodes from before and the one whose wipe failed")
		return c.Progress.JobID
	}

	expand := inconsistent()
	require.NoError(t, os.Remove(marker))
	// The retry continues the rollback: the job ends FAILED, rolled back.
	r = s.cli(admin, "jobs", "retry", id, expand, "--wait")
	require.Contains(t, r.stderr, "rolled back", r.stdout)
	require.Contains(t, r.stdout, "SUCCEEDED rollback:"+id+"-1001/lb/configure")
	c = s.show(admin, id)
	require.Equal(t, "ACTIVE", c.Status, "a plain retry finished the rollback")
	require.Equal(t, 4, liveNodes(c), "the new nodes are deleted")
	require.Len(t, answerers(t, c, 12), webNodes(c), "the load balancer was reconfigured for the nodes that stay")

	s.must(admin, "hosts", "readmit", "pool", idle[0])
	inconsistent()
	require.NoError(t, os.Remove(marker))
	s.must(admin, "clusters", "delete", id, "--wait")
	require.Equal(t, "TERMINATED", s.show(admin, id).Status, "a plain delete repaired it")
	for _, h := range s.hosts(admin, "pool") {
		require.Equal(t, static.StatusFree, h.Status, "host %s is back in the pool", h.ID)
	}
	require.NoError(t, s.kill(syscall.SIGTERM))
}

func liveNodes(c shownCluster) int {
	n := 0
	for _, node := range c.Nodes {
		if node.Status != "DELETED" {
			n++
		}
	}
	return n
}
