package localserver

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/access"
	"github.com/heddle-io/heddle/internal/demotest"
	"github.com/heddle-io/heddle/internal/webhooks"
)

// usage reads the tenant's quota counters as its superadmin sees them.
func (b *bundle) usage(tenant string) [2]int {
	b.t.Helper()
	var v access.TenantView
	require.Equal(b.t, http.StatusOK, b.call(b.super, "GET", "/v1/tenants/"+tenant, nil, &v))
	return [2]int{v.Usage.Clusters, v.Usage.Nodes}
}

// liveNodes counts the cluster's nodes that are not DELETED.
func liveNodes(v clusterView) int {
	n := 0
	for _, node := range v.Nodes {
		if node.Status != "DELETED" {
			n++
		}
	}
	return n
}

// setupWithVetoHook is a server with a tenant of maxNodes nodes whose
// pre-start hook refuses every job while refuse is set.
func setupWithVetoHook(t *testing.T, tenant string, maxNodes int) (b *bundle, refuse *atomic.Bool) {
	t.Helper()
	b = setupWithWebhooks(t, webhooks.Config{})
	b.admin = demotest.Tenant(t, b.srv.URL(), b.super, tenant, maxNodes)
	return b, b.vetoHook()
}

// vetoHook registers, for the bundle's admin, a pre-start hook that
// refuses every job while refuse is set.
func (b *bundle) vetoHook() (refuse *atomic.Bool) {
	b.t.Helper()
	refuse = &atomic.Bool{}
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if refuse.Load() {
			http.Error(w, "change freeze", http.StatusForbidden)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	b.t.Cleanup(hook.Close)
	require.Equal(b.t, http.StatusCreated, b.call(b.admin, "POST", "/v1/webhooks", map[string]any{"url": hook.URL, "preStart": true}, nil))
	return refuse
}

// TestAVetoedExpandRetriedCannotBypassTheQuota is issue 28 as it was found,
// through the API: tenant tiny (3 nodes) with a 2-node demo cluster; a
// pre-start hook answers 403 to an expand by one (the job fails, its quota
// goes back), then 200 to the retry of that job, which takes the quota
// again; a second expand by one is refused, and deleting the cluster
// leaves the counters at 0. Before the fix the second expand was accepted
// (4 nodes built, usage 3) and the counters read -1 after the delete.
func TestAVetoedExpandRetriedCannotBypassTheQuota(t *testing.T) {
	t.Parallel()
	b, refuse := setupWithVetoHook(t, "tiny", 3)

	var c result
	require.Equal(t, http.StatusAccepted, b.call(b.admin, "POST", "/v1/clusters", map[string]any{"name": "C", "template": "web", "size": 2}, &c))
	id := c.Cluster.ID
	b.settleTo(b.admin, id, "ACTIVE")
	require.Equal(t, [2]int{1, 2}, b.usage("tiny"))

	refuse.Store(true)
	var vetoed result
	require.Equal(t, http.StatusAccepted, b.call(b.admin, "POST", "/v1/clusters/"+id+"/expand", map[string]any{"count": 1}, &vetoed))
	v := b.settleTo(b.admin, id, "ACTIVE")
	require.Equal(t, "FAILED", v.Progress.Status)
	require.Equal(t, [2]int{1, 2}, b.usage("tiny"), "the veto gave the node back")
	require.Equal(t, 2, liveNodes(v), "the vetoed node left the layout")

	refuse.Store(false)
	require.Equal(t, http.StatusAccepted, b.call(b.admin, "POST", "/v1/clusters/"+id+"/jobs/"+vetoed.Job.ID+"/retry", nil, nil))
	require.Equal(t, [2]int{1, 3}, b.usage("tiny"), "the retry took the node again")
	v = b.settleTo(b.admin, id, "ACTIVE")
	require.Equal(t, "SUCCEEDED", v.Progress.Status)
	require.Equal(t, 3, liveNodes(v))
	require.Equal(t, 3, v.NodeCount)

	var e errorBody
	require.Equal(t, http.StatusConflict, b.call(b.admin, "POST", "/v1/clusters/"+id+"/expand", map[string]any{"count": 1}, &e))
	require.Equal(t, "quota_exceeded", e.Error.Code)
	require.Equal(t, "quota.maxNodes", e.Error.Details[0].Field)
	require.Contains(t, e.Error.Message, "maxNodes allows 3 nodes; 3 are in use and this asks for 1 more")

	require.Equal(t, http.StatusAccepted, b.call(b.admin, "DELETE", "/v1/clusters/"+id, nil, nil))
	b.settleTo(b.admin, id, "TERMINATED")
	require.Equal(t, [2]int{0, 0}, b.usage("tiny"), "deleting everything gives everything back, once")
	require.Zero(t, b.srv.local.Nodes(), "no node is left")
}

// TestConcurrentCreatesOfOneNameOneWins: creates of one name sent at once
// (two `heddle apply` of one document) make one cluster; the others are
// refused with 409 name_taken on the field name, and the name is free
// again once that cluster is deleted.
func TestConcurrentCreatesOfOneNameOneWins(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.tenant(20)
	const racers = 4
	codes := make([]int, racers)
	bodies := make([]errorBody, racers)
	results := make([]result, racers)
	var wg sync.WaitGroup
	for i := range racers {
		wg.Go(func() {
			var raw struct {
				result
				errorBody
			}
			codes[i] = b.call(b.admin, "POST", "/v1/clusters", map[string]any{"name": "racer", "template": "web", "size": 2}, &raw)
			results[i], bodies[i] = raw.result, raw.errorBody
		})
	}
	wg.Wait()
	winner := ""
	for i, code := range codes {
		if code == http.StatusAccepted {
			require.Empty(t, winner, "two creates of racer were accepted")
			winner = results[i].Cluster.ID
			continue
		}
		require.Equal(t, http.StatusConflict, code, "%+v", bodies[i])
		require.Equal(t, "name_taken", bodies[i].Error.Code)
		require.Equal(t, "name", bodies[i].Error.Details[0].Field)
	}
	require.NotEmpty(t, winner)
	b.settleTo(b.admin, winner, "ACTIVE")
	require.Equal(t, [2]int{1, 2}, b.usage("acme"), "the refused creates took nothing")

	var e errorBody
	require.Equal(t, http.StatusConflict, b.call(b.admin, "POST", "/v1/clusters", map[string]any{"name": "racer", "template": "web", "size": 2}, &e))
	require.Contains(t, e.Error.Message, "cluster "+winner+" is named racer")

	require.Equal(t, http.StatusAccepted, b.call(b.admin, "DELETE", "/v1/clusters/"+winner, nil, nil))
	b.settleTo(b.admin, winner, "TERMINATED")
	var again result
	require.Equal(t, http.StatusAccepted, b.call(b.admin, "POST", "/v1/clusters", map[string]any{"name": "racer", "template": "web", "size": 2}, &again))
	b.settleTo(b.admin, again.Cluster.ID, "ACTIVE")
}
