package localserver

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestAVetoedAddServicesPutsTheClusterServicesBack: a pre-start hook vetoes
// an add-services; its withdrawal puts back the nodes it changed and, with
// them, the cluster record's services. Then a remove-services of the
// service is refused as bad input (422: not on the cluster) instead of
// failing the server (500: the planner found nothing to remove from the
// nodes, as the record still listed it), and the vetoed job's retry, once
// the hook agrees, lists it again and installs it on every node. Found by
// the operations model (a 500 on remove-services, seed
// 12887536352612011669 of a 100 x 100 run).
func TestAVetoedAddServicesPutsTheClusterServicesBack(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.tenant(10)
	b.opsCatalog()
	veto := b.vetoHook()

	var c result
	require.Equal(t, http.StatusAccepted, b.call(b.admin, "POST", "/v1/clusters", map[string]any{"name": "x", "template": "ops", "size": 2}, &c))
	id := c.Cluster.ID
	b.settleTo(b.admin, id, "ACTIVE")

	veto.Store(true)
	var add result
	require.Equal(t, http.StatusAccepted, b.call(b.admin, "POST", "/v1/clusters/"+id+"/add-services", map[string]any{"services": []string{"extra"}}, &add))
	v := b.settleTo(b.admin, id, "ACTIVE")
	require.Equal(t, "FAILED", v.Progress.Status, "vetoed")
	var shown struct {
		Services []string `json:"services"`
	}
	require.Equal(t, http.StatusOK, b.call(b.admin, "GET", "/v1/clusters/"+id, nil, &shown))
	require.Equal(t, []string{"base"}, shown.Services, "the withdrawal put the cluster's services back")

	var refusal struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	require.Equal(t, http.StatusUnprocessableEntity, b.call(b.admin, "POST", "/v1/clusters/"+id+"/remove-services", map[string]any{"services": []string{"extra"}}, &refusal))
	require.NotEmpty(t, refusal.Error.Code)

	veto.Store(false)
	require.Equal(t, http.StatusAccepted, b.call(b.admin, "POST", "/v1/clusters/"+id+"/jobs/"+add.Job.ID+"/retry", nil, nil))
	b.settleTo(b.admin, id, "ACTIVE")
	require.Equal(t, http.StatusOK, b.call(b.admin, "GET", "/v1/clusters/"+id, nil, &shown))
	require.ElementsMatch(t, []string{"base", "extra"}, shown.Services, "the retry added it again")
	var nodes struct {
		Items []struct {
			ID            string   `json:"id"`
			Services      []string `json:"services"`
			ServiceStates map[string]struct {
				State string `json:"state"`
			} `json:"serviceStates"`
		} `json:"items"`
	}
	require.Equal(t, http.StatusOK, b.call(b.admin, "GET", "/v1/clusters/"+id+"/nodes", nil, &nodes))
	require.Len(t, nodes.Items, 2)
	for _, n := range nodes.Items {
		require.Contains(t, n.Services, "extra", n.ID)
		require.Equal(t, "running", n.ServiceStates["extra"].State, n.ID)
	}
}
