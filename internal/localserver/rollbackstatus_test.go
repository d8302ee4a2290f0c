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
	faults := filepath.Join(t.TempDir(), "faults")
	require.NoError(t, os.WriteFile(faults, []byte("ok"), 0o600))
	doc, err := os.ReadFile("../opsmodel/testdata/catalog.yaml")
	require.NoError(t, err)
	doc = []byte(strings.ReplaceAll(string(doc), "@FAULTS@", faults))
	require.Equal(t, http.StatusOK, b.call(b.admin, "POST", "/v1/catalog", doc, nil))

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
