package localserver

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/access"
	"github.com/heddle-io/heddle/internal/demotest"
)

// slowCheckCatalog: a service whose check takes a few seconds, so a
// verification is still running when the user's next operation comes.
const slowCheckCatalog = `apiVersion: heddle/v1
providers:
  - name: local
    providerType: local
hardwareTypes:
  - name: small
    providerMap:
      local: {flavor: small}
imageTypes:
  - name: debian
    providerMap:
      local: {image: host}
services:
  - name: slowcheck
    actions:
      install: {type: shell, fields: {script: 'mkdir -p "$HOME/slowcheck"'}}
      check: {type: shell, fields: {script: 'sleep 3'}, timeout: 20s}
  - name: quickcheck
    actions:
      install: {type: shell, fields: {script: 'mkdir -p "$HOME/quickcheck"'}}
      check: {type: shell, fields: {script: 'true'}, timeout: 20s}
clusterTemplates:
  - name: checked
    compatibility: {services: [slowcheck, quickcheck]}
    defaults: {services: [quickcheck], provider: local, hardwareType: small, imageType: debian}
    constraints: {size: {min: 1, max: 4}}
`

// setupNoJanitor is setup whose janitor never runs by itself: the test
// runs its passes (RunJanitor) when it means to. Tenant acme gets the
// slow-check catalog.
func setupNoJanitor(t *testing.T) *bundle {
	t.Helper()
	b := &bundle{t: t, super: access.NewKeySecret()}
	dir := t.TempDir()
	srv, err := Start(context.Background(), Config{
		DataDir: dir, Listen: "127.0.0.1:0", BootstrapKey: b.super, Version: "test",
		Logger: testLogger(), JanitorPeriod: time.Hour,
	})
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		demotest.KillProcessesUnder(dir)
	})
	b.srv = srv
	catalog := filepath.Join(t.TempDir(), "catalog.yaml")
	require.NoError(t, os.WriteFile(catalog, []byte(slowCheckCatalog), 0o600))
	b.admin = demotest.TenantWithCatalog(t, srv.URL(), b.super, "acme", 10, catalog)
	return b
}

// TestAUserOperationEndsARunningVerification: a verification only reads;
// a user's operation that comes while one runs ends it and goes ahead
// instead of being refused (invariant 15), and a preview looks past it.
func TestAUserOperationEndsARunningVerification(t *testing.T) {
	t.Parallel()
	b := setupNoJanitor(t)
	var created result
	require.Equal(t, http.StatusAccepted, b.call(b.admin, "POST", "/v1/clusters",
		map[string]any{"name": "slow", "template": "checked", "size": 1, "services": []string{"slowcheck"}}, &created))
	id := created.Cluster.ID
	b.settleTo(b.admin, id, "ACTIVE")
	var nodes struct {
		Items []demotest.Node `json:"items"`
	}
	require.Equal(t, http.StatusOK, b.call(b.admin, "GET", "/v1/clusters/"+id+"/nodes", nil, &nodes))
	require.Len(t, nodes.Items, 1)

	var verify result
	require.Equal(t, http.StatusAccepted, b.call(b.admin, "POST", "/v1/clusters/"+id+"/verify", nil, &verify))
	check := "/v1/clusters/" + id + "/jobs/" + verify.Job.ID + "/tasks/" + nodes.Items[0].ID + "%2Fslowcheck%2Fcheck"
	deadline := time.Now().Add(60 * time.Second)
	for {
		var task struct {
			Status string `json:"status"`
		}
		require.Equal(t, http.StatusOK, b.call(b.admin, "GET", check, nil, &task))
		if task.Status == "RUNNING" {
			break
		}
		require.NotEqual(t, "SUCCEEDED", task.Status, "the check ended before the test looked; make it slower")
		require.True(t, time.Now().Before(deadline), "the check never ran")
		time.Sleep(20 * time.Millisecond)
	}

	var preview result
	require.Equal(t, http.StatusOK, b.call(b.admin, "POST", "/v1/clusters/"+id+"/expand?dryRun=true", map[string]any{"count": 1}, &preview),
		"a preview looks past the verification")
	var job struct {
		Status        string `json:"status"`
		StatusMessage string `json:"statusMessage"`
	}
	require.Equal(t, http.StatusOK, b.call(b.admin, "GET", "/v1/clusters/"+id+"/jobs/"+verify.Job.ID, nil, &job))
	require.Equal(t, "RUNNING", job.Status, "a preview changes nothing")
	require.Equal(t, http.StatusUnprocessableEntity, b.call(b.admin, "POST", "/v1/clusters/"+id+"/expand", map[string]any{"count": 0}, nil))
	require.Equal(t, http.StatusOK, b.call(b.admin, "GET", "/v1/clusters/"+id+"/jobs/"+verify.Job.ID, nil, &job))
	require.Equal(t, "RUNNING", job.Status, "a request refused for bad input changes nothing, the verification neither")

	var del result
	require.Equal(t, http.StatusAccepted, b.call(b.admin, "DELETE", "/v1/clusters/"+id, nil, &del), "the delete ends the verification")
	require.NotEqual(t, verify.Job.ID, del.Job.ID)
	require.Equal(t, http.StatusOK, b.call(b.admin, "GET", "/v1/clusters/"+id+"/jobs/"+verify.Job.ID, nil, &job))
	require.Equal(t, "ABORTED", job.Status)
	require.Contains(t, job.StatusMessage, "aborted by")
	b.settleTo(b.admin, id, "TERMINATED")
}

// TestADueVerificationIsDroppedWhenOneJustRan: the create made a
// verification due; the user's own verification ran first, so the
// janitor's next pass starts none (it would hold the cluster for nothing).
func TestADueVerificationIsDroppedWhenOneJustRan(t *testing.T) {
	t.Parallel()
	b := setupNoJanitor(t)
	var created result
	require.Equal(t, http.StatusAccepted, b.call(b.admin, "POST", "/v1/clusters",
		map[string]any{"name": "quick", "template": "checked", "size": 1}, &created))
	id := created.Cluster.ID
	b.settleTo(b.admin, id, "ACTIVE")

	require.Equal(t, http.StatusAccepted, b.call(b.admin, "POST", "/v1/clusters/"+id+"/verify", nil, nil))
	h := b.healthAfter(id, "")
	r, err := b.srv.engine.RunJanitor(context.Background())
	require.NoError(t, err)
	require.Zero(t, r.Verifications, "the verification that was due just ran")
	var c struct {
		ActiveJobID string      `json:"activeJobId"`
		Health      *healthView `json:"health"`
	}
	require.Equal(t, http.StatusOK, b.call(b.admin, "GET", "/v1/clusters/"+id, nil, &c))
	require.Empty(t, c.ActiveJobID)
	require.Equal(t, h.JobID, c.Health.JobID)

	require.Equal(t, http.StatusAccepted, b.call(b.admin, "DELETE", "/v1/clusters/"+id, nil, nil))
	b.settleTo(b.admin, id, "TERMINATED")
}
