package localserver

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/demotest"
	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/webhooks"
)

// TestAVetoedJobsRevisionIsWithdrawn: a job a pre-start hook refuses
// never took effect, so its revision is kept but marked withdrawn, the
// cluster goes back to the revision before, and a rollback to it is
// refused with 409 on the field revision; the retry, accepted, records a
// new revision with the same definition (numbers are never given twice).
// Then a rollback to revision 1 brings the config back and records one
// more, and the revisions page with cursors.
func TestAVetoedJobsRevisionIsWithdrawn(t *testing.T) {
	t.Parallel()
	var refuse atomic.Bool
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if refuse.Load() {
			http.Error(w, "change freeze", http.StatusForbidden)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(hook.Close)
	b := setupWithWebhooks(t, webhooks.Config{})
	b.admin = demotest.Tenant(t, b.srv.URL(), b.super, "revs", 6)
	require.Equal(t, http.StatusCreated, b.call(b.admin, "POST", "/v1/webhooks", map[string]any{"url": hook.URL, "preStart": true}, nil))

	var c result
	require.Equal(t, http.StatusAccepted, b.call(b.admin, "POST", "/v1/clusters", map[string]any{"name": "R", "template": "web", "size": 2}, &c))
	id := c.Cluster.ID
	b.settleTo(b.admin, id, "ACTIVE")
	cluster := func() domain.Cluster {
		var v domain.Cluster
		require.Equal(t, http.StatusOK, b.call(b.admin, "GET", "/v1/clusters/"+id, nil, &v))
		return v
	}
	revision := func(n int64) domain.Revision {
		var r domain.Revision
		require.Equal(t, http.StatusOK, b.call(b.admin, "GET", fmt.Sprintf("/v1/clusters/%s/revisions/%d", id, n), nil, &r))
		return r
	}
	require.EqualValues(t, 1, cluster().Revision)
	r1 := revision(1)
	require.Equal(t, domain.OpCreate, r1.Operation)
	require.Equal(t, 2, r1.Def.Size)

	refuse.Store(true)
	var vetoed result
	require.Equal(t, http.StatusAccepted, b.call(b.admin, "POST", "/v1/clusters/"+id+"/reconfigure", map[string]any{"config": map[string]any{"greeting": "vetoed"}}, &vetoed))
	v := b.settleTo(b.admin, id, "ACTIVE")
	require.Equal(t, "FAILED", v.Progress.Status)
	now := cluster()
	require.EqualValues(t, 1, now.Revision, "the veto put the cluster back at revision 1")
	require.EqualValues(t, 2, now.LastRevision)
	r2 := revision(2)
	require.True(t, r2.Withdrawn)
	require.EqualValues(t, 1, r2.Previous)
	require.Equal(t, vetoed.Job.ID, r2.JobID)
	var e errorBody
	require.Equal(t, http.StatusConflict, b.call(b.admin, "POST", "/v1/clusters/"+id+"/rollback", map[string]any{"revision": 2}, &e))
	require.Equal(t, "revision", e.Error.Details[0].Field)
	require.Contains(t, e.Error.Message, "withdrawn")
	require.EqualValues(t, 1, cluster().Revision, "the refused rollback changed nothing")

	refuse.Store(false)
	require.Equal(t, http.StatusAccepted, b.call(b.admin, "POST", "/v1/clusters/"+id+"/jobs/"+vetoed.Job.ID+"/retry", nil, nil))
	require.Equal(t, "SUCCEEDED", b.settleTo(b.admin, id, "ACTIVE").Progress.Status)
	require.EqualValues(t, 3, cluster().Revision)
	r3 := revision(3)
	require.False(t, r3.Withdrawn)
	require.Equal(t, r2.Digest, r3.Digest, "the retry records the withdrawn definition again")
	require.Equal(t, vetoed.Job.ID, r3.JobID)
	require.True(t, revision(2).Withdrawn, "the withdrawn revision stays as it was")

	// Back to revision 1: one step, the config.
	var rb struct {
		result
		Rollback struct {
			Steps []struct {
				Operation string `json:"operation"`
			} `json:"steps"`
			Done bool `json:"done"`
		} `json:"rollback"`
	}
	require.Equal(t, http.StatusOK, b.call(b.admin, "POST", "/v1/clusters/"+id+"/rollback?dryRun=true", map[string]any{"revision": 1}, &rb))
	require.Len(t, rb.Rollback.Steps, 1)
	require.Equal(t, "reconfigure", rb.Rollback.Steps[0].Operation)
	require.NotNil(t, rb.Preview, "the step's plan preview")
	require.EqualValues(t, 3, cluster().Revision, "the dry run changed nothing")
	require.Equal(t, http.StatusAccepted, b.call(b.admin, "POST", "/v1/clusters/"+id+"/rollback", map[string]any{"revision": 1}, &rb))
	require.Equal(t, "SUCCEEDED", b.settleTo(b.admin, id, "ACTIVE").Progress.Status)
	now = cluster()
	require.EqualValues(t, 4, now.Revision)
	require.Equal(t, r1.Digest, domain.ClusterDefinition{Template: now.Template, Services: now.Services, Config: now.Config, Size: now.NodeCount}.Digest())
	require.EqualValues(t, 1, revision(4).RollbackOf)
	rb.Rollback.Steps, rb.Rollback.Done = nil, false
	require.Equal(t, http.StatusOK, b.call(b.admin, "POST", "/v1/clusters/"+id+"/rollback", map[string]any{"revision": 1}, &rb))
	require.True(t, rb.Rollback.Done)
	require.EqualValues(t, 4, cluster().Revision, "nothing left to do records nothing")

	// The history pages newest first.
	var page struct {
		Items      []domain.Revision `json:"items"`
		NextCursor string            `json:"nextCursor"`
	}
	require.Equal(t, http.StatusOK, b.call(b.admin, "GET", "/v1/clusters/"+id+"/revisions?limit=3", nil, &page))
	require.Len(t, page.Items, 3)
	require.EqualValues(t, []int64{4, 3, 2}, []int64{page.Items[0].Number, page.Items[1].Number, page.Items[2].Number})
	require.NotEmpty(t, page.NextCursor)
	next := page.NextCursor
	page.NextCursor = ""
	require.Equal(t, http.StatusOK, b.call(b.admin, "GET", "/v1/clusters/"+id+"/revisions?limit=3&cursor="+next, nil, &page))
	require.Len(t, page.Items, 1)
	require.EqualValues(t, 1, page.Items[0].Number)
	require.Empty(t, page.NextCursor)
	require.Equal(t, http.StatusBadRequest, b.call(b.admin, "GET", "/v1/clusters/"+id+"/revisions?bogus=1", nil, &e))
}

// TestRollbackAcrossASyncAndTheQuota: a rollback to a revision of an
// older template version and more nodes is refused while the quota does
// not cover the nodes (409 quota_exceeded, nothing changed, no job), and
// once it does runs two steps, a sync back to version 1 and an expand,
// after which the cluster has that revision's definition.
func TestRollbackAcrossASyncAndTheQuota(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.tenant(6)
	var c result
	require.Equal(t, http.StatusAccepted, b.call(b.admin, "POST", "/v1/clusters", map[string]any{"name": "S", "template": "web", "size": 2}, &c))
	id := c.Cluster.ID
	b.settleTo(b.admin, id, "ACTIVE")
	require.Equal(t, http.StatusAccepted, b.call(b.admin, "POST", "/v1/clusters/"+id+"/expand", map[string]any{"count": 2}, nil))
	b.settleTo(b.admin, id, "ACTIVE") // revision 2: four nodes on version 1
	var tmpl map[string]any
	require.Equal(t, http.StatusOK, b.call(b.admin, "GET", "/v1/clustertemplates/web", nil, &tmpl))
	tmpl["description"] = "version two"
	delete(tmpl, "version")
	delete(tmpl, "createdAt")
	delete(tmpl, "updatedAt")
	require.Equal(t, http.StatusOK, b.call(b.admin, "PUT", "/v1/clustertemplates/web", tmpl, nil))
	require.Equal(t, http.StatusAccepted, b.call(b.admin, "POST", "/v1/clusters/"+id+"/sync", map[string]any{}, nil))
	b.settleTo(b.admin, id, "ACTIVE") // revision 3: version 2
	require.Equal(t, http.StatusAccepted, b.call(b.admin, "POST", "/v1/clusters/"+id+"/shrink", map[string]any{"count": 2}, nil))
	b.settleTo(b.admin, id, "ACTIVE") // revision 4: two nodes

	var other result
	require.Equal(t, http.StatusAccepted, b.call(b.admin, "POST", "/v1/clusters", map[string]any{"name": "O", "template": "web", "size": 3}, &other))
	b.settleTo(b.admin, other.Cluster.ID, "ACTIVE") // 5 of 6 nodes in use

	cluster := func() domain.Cluster {
		var v domain.Cluster
		require.Equal(t, http.StatusOK, b.call(b.admin, "GET", "/v1/clusters/"+id, nil, &v))
		return v
	}
	before := cluster()
	require.EqualValues(t, 4, before.Revision)
	require.Equal(t, 2, before.Template.Version)
	// The dry run previews the first step (the sync) and answers the
	// expand's refusal, as any dry run does; the real request is refused.
	var foreseen struct {
		Refusal struct {
			Code  string `json:"code"`
			Asked int    `json:"asked"`
		} `json:"refusal"`
	}
	require.Equal(t, http.StatusOK, b.call(b.admin, "POST", "/v1/clusters/"+id+"/rollback?dryRun=true", map[string]any{"revision": 2}, &foreseen))
	require.Equal(t, "quota_exceeded", foreseen.Refusal.Code)
	require.Equal(t, 2, foreseen.Refusal.Asked)
	var e errorBody
	require.Equal(t, http.StatusConflict, b.call(b.admin, "POST", "/v1/clusters/"+id+"/rollback", map[string]any{"revision": 2}, &e))
	require.Equal(t, "quota_exceeded", e.Error.Code)
	after := cluster()
	require.Equal(t, before.Version, after.Version, "the refusal changed nothing, not even the sync step")
	require.Equal(t, before.LatestJobID, after.LatestJobID)

	require.Equal(t, http.StatusAccepted, b.call(b.admin, "DELETE", "/v1/clusters/"+other.Cluster.ID, nil, nil))
	b.settle(b.admin, other.Cluster.ID)
	type plan struct {
		result
		Rollback struct {
			Steps []struct {
				Operation       string `json:"operation"`
				TemplateVersion int    `json:"templateVersion"`
				Count           int    `json:"count"`
			} `json:"steps"`
			Done bool `json:"done"`
		} `json:"rollback"`
	}
	var dry plan
	require.Equal(t, http.StatusOK, b.call(b.admin, "POST", "/v1/clusters/"+id+"/rollback?dryRun=true", map[string]any{"revision": 2}, &dry))
	require.Len(t, dry.Rollback.Steps, 2)
	require.Equal(t, "sync-template", dry.Rollback.Steps[0].Operation)
	require.Equal(t, 1, dry.Rollback.Steps[0].TemplateVersion)
	require.Equal(t, "expand", dry.Rollback.Steps[1].Operation)
	require.Equal(t, 2, dry.Rollback.Steps[1].Count)
	for step := 0; ; step++ {
		require.Less(t, step, 3, "two steps, then done")
		var p plan
		code := b.call(b.admin, "POST", "/v1/clusters/"+id+"/rollback", map[string]any{"revision": 2}, &p)
		if code == http.StatusOK {
			require.True(t, p.Rollback.Done)
			break
		}
		require.Equal(t, http.StatusAccepted, code)
		require.Equal(t, "SUCCEEDED", b.settleTo(b.admin, id, "ACTIVE").Progress.Status)
	}
	now := cluster()
	require.EqualValues(t, 6, now.Revision)
	require.Equal(t, 1, now.Template.Version)
	require.Equal(t, 4, now.NodeCount)
	var r2 domain.Revision
	require.Equal(t, http.StatusOK, b.call(b.admin, "GET", "/v1/clusters/"+id+"/revisions/2", nil, &r2))
	require.Equal(t, r2.Digest, domain.ClusterDefinition{Template: now.Template, Services: now.Services, Config: now.Config, Size: now.NodeCount}.Digest())
}
