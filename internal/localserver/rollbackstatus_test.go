package localserver

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/domain"
)

// opsCatalog imports the operations model's catalog (template "ops", whose
// services' actions read a faults file) and returns that file, set to
// "ok" (a test writes "fail" or "hang" to it to make the actions do so),
// and the catalog document as imported.
func (b *bundle) opsCatalog() (faults, doc string) {
	b.t.Helper()
	faults = filepath.Join(b.t.TempDir(), "faults")
	require.NoError(b.t, os.WriteFile(faults, []byte("ok"), 0o600))
	raw, err := os.ReadFile("../opsmodel/testdata/catalog.yaml")
	require.NoError(b.t, err)
	doc = strings.ReplaceAll(string(raw), "@FAULTS@", faults)
	require.Equal(b.t, http.StatusOK, b.call(b.admin, "POST", "/v1/catalog", []byte(doc), nil))
	return faults, doc
}

// TestARolledBackExpandKeepsAnInconsistentCluster: an add-services that
// fails leaves the cluster INCONSISTENT, the new service in the nodes'
// layouts and never installed; an expand of it that fails and is rolled
// back deleted only its new nodes and repaired nothing, so the cluster
// stays INCONSISTENT (with the reason), and a plain delete ends it with
// the counters at zero. Before the fix the rollback made it ACTIVE, a
// node listing a service it never ran (the model's seed
// 5201566024625373651).
func TestARolledBackExpandKeepsAnInconsistentCluster(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.tenant(10)
	faults, _ := b.opsCatalog()

	var c result
	require.Equal(t, http.StatusAccepted, b.call(b.admin, "POST", "/v1/clusters", map[string]any{"name": "x", "template": "ops", "size": 1}, &c))
	id := c.Cluster.ID
	b.settleTo(b.admin, id, "ACTIVE")

	require.NoError(t, os.WriteFile(faults, []byte("fail"), 0o600))
	require.Equal(t, http.StatusAccepted, b.call(b.admin, "POST", "/v1/clusters/"+id+"/add-services", map[string]any{"services": []string{"extra"}}, nil))
	b.settleTo(b.admin, id, "INCONSISTENT")

	require.Equal(t, http.StatusAccepted, b.call(b.admin, "POST", "/v1/clusters/"+id+"/expand", map[string]any{"count": 1}, nil))
	v := b.settleTo(b.admin, id, "INCONSISTENT")
	require.Equal(t, "FAILED", v.Progress.Status)
	require.Contains(t, v.StatusMessage, "rolled back")
	require.Equal(t, 1, liveNodes(v), "the rollback deleted the new node")
	require.Equal(t, [2]int{1, 1}, b.usage("acme"))
	// The expand's revision never took effect: withdrawn, the cluster
	// back at add-services' (revisions.go).
	var cl domain.Cluster
	require.Equal(t, http.StatusOK, b.call(b.admin, "GET", "/v1/clusters/"+id, nil, &cl))
	require.EqualValues(t, 2, cl.Revision)
	require.EqualValues(t, 3, cl.LastRevision)
	var r3 domain.Revision
	require.Equal(t, http.StatusOK, b.call(b.admin, "GET", "/v1/clusters/"+id+"/revisions/3", nil, &r3))
	require.True(t, r3.Withdrawn)
	require.Equal(t, domain.OpExpand, r3.Operation)

	require.NoError(t, os.WriteFile(faults, []byte("ok"), 0o600))
	require.Equal(t, http.StatusAccepted, b.call(b.admin, "DELETE", "/v1/clusters/"+id, nil, nil))
	b.settleTo(b.admin, id, "TERMINATED")
	require.Equal(t, [2]int{0, 0}, b.usage("acme"))
}

// TestASuccessfulExpandKeepsAnInconsistentCluster: an add-services that
// fails on a 3-node cluster ends at its first failed install, so some
// nodes list the new service with no run state (never installed), and the
// cluster is INCONSISTENT. An expand that then succeeds builds only its
// new node: the cluster stays INCONSISTENT, with the add's reason, until
// the failed add is retried (which installs the service where it is
// missing and makes it ACTIVE, every node carrying its run states) or the
// cluster is deleted. Before the fix the expand's success made it ACTIVE
// (the operations model's expandAfterFailedAdd: "ACTIVE cluster ...: node
// ... carries no run state for extra").
func TestASuccessfulExpandKeepsAnInconsistentCluster(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.tenant(10)
	faults, _ := b.opsCatalog()

	var c result
	require.Equal(t, http.StatusAccepted, b.call(b.admin, "POST", "/v1/clusters", map[string]any{"name": "x", "template": "ops", "size": 3}, &c))
	id := c.Cluster.ID
	b.settleTo(b.admin, id, "ACTIVE")

	require.NoError(t, os.WriteFile(faults, []byte("fail"), 0o600))
	var add result
	require.Equal(t, http.StatusAccepted, b.call(b.admin, "POST", "/v1/clusters/"+id+"/add-services", map[string]any{"services": []string{"extra"}}, &add))
	failed := b.settleTo(b.admin, id, "INCONSISTENT")

	require.NoError(t, os.WriteFile(faults, []byte("ok"), 0o600))
	require.Equal(t, http.StatusAccepted, b.call(b.admin, "POST", "/v1/clusters/"+id+"/expand", map[string]any{"count": 1}, nil))
	v := b.settleTo(b.admin, id, "INCONSISTENT")
	require.Equal(t, "SUCCEEDED", v.Progress.Status)
	require.Equal(t, failed.StatusMessage, v.StatusMessage, "the reason is still the failed add's")
	require.Equal(t, 4, liveNodes(v))

	require.Equal(t, http.StatusAccepted, b.call(b.admin, "POST", "/v1/clusters/"+id+"/jobs/"+add.Job.ID+"/retry", nil, nil))
	b.settleTo(b.admin, id, "ACTIVE")
	var nodes struct {
		Items []struct {
			ID            string   `json:"id"`
			Status        string   `json:"status"`
			Services      []string `json:"services"`
			ServiceStates map[string]struct {
				State string `json:"state"`
			} `json:"serviceStates"`
		} `json:"items"`
	}
	require.Equal(t, http.StatusOK, b.call(b.admin, "GET", "/v1/clusters/"+id+"/nodes", nil, &nodes))
	require.Len(t, nodes.Items, 4)
	for _, n := range nodes.Items {
		require.Contains(t, n.Services, "extra", n.ID)
		for _, s := range n.Services {
			require.NotEmpty(t, n.ServiceStates[s].State, "node %s carries a run state for %s", n.ID, s)
		}
	}
}

// TestASuccessfulShrinkKeepsAnInconsistentCluster: as an expand, a shrink
// that succeeds on a cluster a failed add-services left INCONSISTENT
// repairs nothing on the nodes that stay, so the cluster stays
// INCONSISTENT with the add's reason, and a plain delete ends it. Before
// the fix the shrink made it ACTIVE over nodes listing a service they
// never ran (the operations model, a 100 x 100 run: "ACTIVE cluster ...:
// node ... carries no run state for extra" after add-services ABORTED and
// a shrink).
func TestASuccessfulShrinkKeepsAnInconsistentCluster(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.tenant(10)
	faults, _ := b.opsCatalog()

	var c result
	require.Equal(t, http.StatusAccepted, b.call(b.admin, "POST", "/v1/clusters", map[string]any{"name": "x", "template": "ops", "size": 3}, &c))
	id := c.Cluster.ID
	b.settleTo(b.admin, id, "ACTIVE")

	require.NoError(t, os.WriteFile(faults, []byte("fail"), 0o600))
	require.Equal(t, http.StatusAccepted, b.call(b.admin, "POST", "/v1/clusters/"+id+"/add-services", map[string]any{"services": []string{"extra"}}, nil))
	failed := b.settleTo(b.admin, id, "INCONSISTENT")

	require.NoError(t, os.WriteFile(faults, []byte("ok"), 0o600))
	require.Equal(t, http.StatusAccepted, b.call(b.admin, "POST", "/v1/clusters/"+id+"/shrink", map[string]any{"count": 1, "force": true}, nil))
	v := b.settleTo(b.admin, id, "INCONSISTENT")
	require.Equal(t, "SUCCEEDED", v.Progress.Status)
	require.Equal(t, failed.StatusMessage, v.StatusMessage, "the reason is still the failed add's")
	require.Equal(t, 2, liveNodes(v))

	require.Equal(t, http.StatusAccepted, b.call(b.admin, "DELETE", "/v1/clusters/"+id, nil, nil))
	b.settleTo(b.admin, id, "TERMINATED")
	require.Equal(t, [2]int{0, 0}, b.usage("acme"))
}

// TestASuccessfulSyncKeepsAnInconsistentCluster: a sync reconfigures the
// services the nodes run and installs none, so on a cluster a failed
// add-services left INCONSISTENT it repairs nothing: the cluster stays
// INCONSISTENT with the add's reason, and a plain delete ends it. Before
// the fix the sync made it ACTIVE over nodes listing a service they never
// ran (the operations model, a 100 x 100 run, seed 12014313697742399061).
func TestASuccessfulSyncKeepsAnInconsistentCluster(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.tenant(10)
	faults, doc := b.opsCatalog()

	var c result
	require.Equal(t, http.StatusAccepted, b.call(b.admin, "POST", "/v1/clusters", map[string]any{"name": "x", "template": "ops", "size": 3}, &c))
	id := c.Cluster.ID
	b.settleTo(b.admin, id, "ACTIVE")

	require.NoError(t, os.WriteFile(faults, []byte("fail"), 0o600))
	require.Equal(t, http.StatusAccepted, b.call(b.admin, "POST", "/v1/clusters/"+id+"/add-services", map[string]any{"services": []string{"extra"}}, nil))
	failed := b.settleTo(b.admin, id, "INCONSISTENT")

	require.NoError(t, os.WriteFile(faults, []byte("ok"), 0o600))
	next := strings.Replace(doc, "description: Local nodes running base (and extra when added).", "description: Local nodes, a later version.", 1)
	require.NotEqual(t, doc, next)
	require.Equal(t, http.StatusOK, b.call(b.admin, "POST", "/v1/catalog", []byte(next), nil))
	require.Equal(t, http.StatusAccepted, b.call(b.admin, "POST", "/v1/clusters/"+id+"/sync", map[string]any{}, nil))
	v := b.settleTo(b.admin, id, "INCONSISTENT")
	require.Equal(t, "SUCCEEDED", v.Progress.Status)
	require.Equal(t, failed.StatusMessage, v.StatusMessage, "the reason is still the failed add's")

	require.Equal(t, http.StatusAccepted, b.call(b.admin, "DELETE", "/v1/clusters/"+id, nil, nil))
	b.settleTo(b.admin, id, "TERMINATED")
	require.Equal(t, [2]int{0, 0}, b.usage("acme"))
}
