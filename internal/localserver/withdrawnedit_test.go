package localserver

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestAVetoedReconfigureLeavesTheConfigAsItWas: a withdrawn job leaves the
// cluster's definition as it was, not only its nodes. A pre-start hook
// refuses a reconfigure with a new config: the cluster keeps its config
// (before the fix it carried the refused one, which no node ran, and a
// vetoed add-services likewise left its service in the cluster's list, so
// that removing it planned a change of no node and answered 500). The
// retry, accepted, writes the new config again; the retry of a second
// refused reconfigure after another one succeeded is refused with 409
// job_state, since it would undo that one's config, and changes nothing.
func TestAVetoedReconfigureLeavesTheConfigAsItWas(t *testing.T) {
	t.Parallel()
	b, refuse := setupWithVetoHook(t, "edits", 6)

	var c result
	require.Equal(t, http.StatusAccepted, b.call(b.admin, "POST", "/v1/clusters", map[string]any{"name": "C", "template": "web", "size": 2}, &c))
	id := c.Cluster.ID
	b.settleTo(b.admin, id, "ACTIVE")
	config := func() string {
		var v struct {
			Config json.RawMessage `json:"config"`
		}
		require.Equal(t, http.StatusOK, b.call(b.admin, "GET", "/v1/clusters/"+id, nil, &v))
		return string(v.Config)
	}
	original := config()

	refuse.Store(true)
	var vetoed result
	require.Equal(t, http.StatusAccepted, b.call(b.admin, "POST", "/v1/clusters/"+id+"/reconfigure", map[string]any{"config": map[string]any{"greeting": "vetoed"}}, &vetoed))
	v := b.settleTo(b.admin, id, "ACTIVE")
	require.Equal(t, "FAILED", v.Progress.Status)
	require.Equal(t, original, config(), "the veto put the config back")

	refuse.Store(false)
	require.Equal(t, http.StatusAccepted, b.call(b.admin, "POST", "/v1/clusters/"+id+"/jobs/"+vetoed.Job.ID+"/retry", nil, nil))
	v = b.settleTo(b.admin, id, "ACTIVE")
	require.Equal(t, "SUCCEEDED", v.Progress.Status)
	require.JSONEq(t, `{"greeting":"vetoed"}`, config(), "the retry wrote the job's config again")

	refuse.Store(true)
	var second result
	require.Equal(t, http.StatusAccepted, b.call(b.admin, "POST", "/v1/clusters/"+id+"/reconfigure", map[string]any{"config": map[string]any{"greeting": "second"}}, &second))
	b.settleTo(b.admin, id, "ACTIVE")
	refuse.Store(false)
	require.Equal(t, http.StatusAccepted, b.call(b.admin, "POST", "/v1/clusters/"+id+"/reconfigure", map[string]any{"config": map[string]any{"greeting": "third"}}, nil))
	b.settleTo(b.admin, id, "ACTIVE")
	var e errorBody
	require.Equal(t, http.StatusConflict, b.call(b.admin, "POST", "/v1/clusters/"+id+"/jobs/"+second.Job.ID+"/retry", nil, &e))
	require.Equal(t, "job_state", e.Error.Code)
	require.Contains(t, e.Error.Message, "submit the operation again")
	require.JSONEq(t, `{"greeting":"third"}`, config(), "the refused retry changed nothing")
}
