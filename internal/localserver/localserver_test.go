package localserver

import (
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/heddle-io/heddle/internal/demotest"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/access"
)

type bundle struct {
	t     *testing.T
	srv   *Server
	super string // the superadmin's key
	admin string // tenant acme's admin key
}

func setup(t *testing.T) *bundle {
	t.Helper()
	b := &bundle{t: t, super: access.NewKeySecret()}
	dir := t.TempDir()
	srv, err := Start(context.Background(), Config{
		DataDir: dir, Listen: "127.0.0.1:0", BootstrapKey: b.super, Version: "test",
		Logger: testLogger(), JanitorPeriod: 200 * time.Millisecond,
	})
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		// A test that failed before deleting its cluster leaves the
		// services its nodes started: end them.
		demotest.KillProcessesUnder(dir)
	})
	b.srv = srv
	return b
}

// call sends an API request to the server (see demotest.Call).
func (b *bundle) call(key, method, path string, body any, out any) int {
	b.t.Helper()
	return demotest.Call(b.t, b.srv.URL(), key, method, path, body, out)
}

// tenant creates tenant acme with the given node quota and applies the demo
// catalog as its admin.
func (b *bundle) tenant(maxNodes int) {
	b.t.Helper()
	b.admin = demotest.Tenant(b.t, b.srv.URL(), b.super, "acme", maxNodes)
}

type clusterView struct {
	ID            string          `json:"id"`
	Status        string          `json:"status"`
	StatusMessage string          `json:"statusMessage"`
	NodeCount     int             `json:"nodeCount"`
	Nodes         []demotest.Node `json:"nodes"`
	Progress      *struct {
		JobID  string `json:"jobId"`
		Status string `json:"status"`
		Done   int    `json:"done"`
		Total  int    `json:"total"`
		Stages []struct {
			Total int `json:"total"`
			Done  int `json:"done"`
		} `json:"stages"`
	} `json:"progress"`
}

type result struct {
	Cluster struct {
		ID string `json:"id"`
	} `json:"cluster"`
	Job struct {
		ID string `json:"id"`
	} `json:"job"`
	Preview map[string]any `json:"preview"`
}

// settle waits until the cluster's latest job has ended and returns the
// cluster.
func (b *bundle) settle(key, id string) clusterView {
	b.t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		var v clusterView
		require.Equal(b.t, http.StatusOK, b.call(key, "GET", "/v1/clusters/"+id, nil, &v))
		if v.Progress != nil && (v.Progress.Status == "SUCCEEDED" || v.Progress.Status == "FAILED" || v.Progress.Status == "ABORTED") {
			return v
		}
		if time.Now().After(deadline) {
			b.t.Fatalf("cluster %s: job did not end: %+v", id, v)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// settleTo waits until the cluster's latest job has ended and requires the
// cluster to be in status want, naming the failed tasks when it is not.
func (b *bundle) settleTo(key, id, want string) clusterView {
	b.t.Helper()
	v := b.settle(key, id)
	var failed string
	if v.Status != want {
		failed = b.jobFailure(id, v.Progress.JobID)
	}
	require.Equal(b.t, want, v.Status, "%s\n%s", v.StatusMessage, failed)
	return v
}

// jobFailure describes the job's failed tasks, for messages.
func (b *bundle) jobFailure(id, job string) string {
	var raw json.RawMessage
	b.call(b.admin, "GET", "/v1/clusters/"+id+"/jobs/"+job, nil, &raw)
	return demotest.FailedTasks(raw)
}

// through asks the cluster's load balancer n times and returns which web
// nodes answered.
func through(t *testing.T, v clusterView, n int) map[string]bool {
	t.Helper()
	return demotest.Answerers(t, demotest.LBAddress(v.Nodes), n)
}

// TestDemoClusterThroughEveryOperation drives the demo cluster through every
// operation in a row, as a user would, and after each checks that requests
// through the load balancer reach every web node and that the nodes'
// recorded run states say what runs.
func TestDemoClusterThroughEveryOperation(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.tenant(20)
	create := map[string]any{"name": "shop", "template": "web", "size": 4}

	// A dry run plans and changes nothing.
	var dry result
	require.Equal(t, http.StatusOK, b.call(b.admin, "POST", "/v1/clusters?dryRun=true", create, &dry))
	require.NotEmpty(t, dry.Preview["tasks"])
	var list struct {
		Items []clusterView `json:"items"`
	}
	require.Equal(t, http.StatusOK, b.call(b.admin, "GET", "/v1/clusters", nil, &list))
	require.Empty(t, list.Items, "a dry run creates nothing")

	scraped := b.scrape()
	var created result
	require.Equal(t, http.StatusAccepted, b.call(b.admin, "POST", "/v1/clusters", create, &created))
	id := created.Cluster.ID
	v := b.settleTo(b.admin, id, "ACTIVE")
	require.Len(t, v.Nodes, 4)
	// The metrics moved as the cluster was built.
	rescraped := b.scrape()
	require.Greater(t, sum(rescraped, "heddle_task_attempts_total", "outcome", "succeeded"), sum(scraped, "heddle_task_attempts_total", "outcome", "succeeded"))
	require.Equal(t, 1.0, sum(rescraped, "heddle_jobs_total", "operation", "create")-sum(scraped, "heddle_jobs_total", "operation", "create"))
	require.Greater(t, sum(rescraped, "heddle_api_requests_total", "route", "/v1/clusters/{cluster}"), 0.0)
	require.Greater(t, sum(rescraped, "heddle_store_calls_total", "call", "transact"), sum(scraped, "heddle_store_calls_total", "call", "transact"))
	require.Contains(t, rescraped, "heddle_queue_messages")
	require.Greater(t, sum(rescraped, "heddle_janitor_pass_seconds", "", ""), 0.0)
	require.Equal(t, v.Progress.Total, v.Progress.Done)
	for _, st := range v.Progress.Stages {
		require.Equal(t, st.Total, st.Done)
	}
	allRunning := func(v clusterView) {
		t.Helper()
		for k, st := range demotest.States(v.Nodes) {
			require.Equal(t, "running", st, k)
		}
		demotest.ReachesEveryWebNode(t, v.Nodes)
	}
	allRunning(v)
	lb := demotest.LBAddress(v.Nodes)
	op := func(name string, body any) clusterView {
		t.Helper()
		var res result
		require.Equal(t, http.StatusAccepted, b.call(b.admin, "POST", "/v1/clusters/"+id+"/"+name, body, &res), name)
		return b.settleTo(b.admin, id, "ACTIVE")
	}
	lbOnly := map[string]any{"services": []string{"lb"}}

	// Stop one service: only it stops.
	v = op("stop", lbOnly)
	states := demotest.States(v.Nodes)
	for k, st := range states {
		if strings.HasSuffix(k, "/lb") {
			require.Equal(t, "stopped", st, k)
		} else {
			require.Equal(t, "running", st, k)
		}
	}
	_, err := net.DialTimeout("tcp", net.JoinHostPort(lb, demotest.LBPort), 2*time.Second)
	require.Error(t, err, "the load balancer is stopped")

	// Start it again: the preview says kv and web run already, and the job
	// starts lb alone.
	var preview struct {
		Preview struct {
			Skipped []struct {
				Service string `json:"service"`
				Action  string `json:"action"`
				Reason  string `json:"reason"`
			} `json:"skipped"`
			Summary struct {
				WorkTasks int `json:"workTasks"`
			} `json:"summary"`
		} `json:"preview"`
	}
	require.Equal(t, http.StatusOK, b.call(b.admin, "POST", "/v1/clusters/"+id+"/start?dryRun=true", lbOnly, &preview))
	require.Equal(t, 1, preview.Preview.Summary.WorkTasks)
	skipped := map[string]string{}
	for _, s := range preview.Preview.Skipped {
		skipped[s.Service+"/"+s.Action] = s.Reason
	}
	require.Equal(t, map[string]string{"kv/start": "already running", "web/start": "already running"}, skipped)
	allRunning(op("start", lbOnly))

	// Starting what runs is a job with nothing to do, which succeeds.
	var again result
	require.Equal(t, http.StatusAccepted, b.call(b.admin, "POST", "/v1/clusters/"+id+"/start", lbOnly, &again))
	var job struct {
		Status        string `json:"status"`
		StatusMessage string `json:"statusMessage"`
	}
	require.Equal(t, http.StatusOK, b.call(b.admin, "GET", "/v1/clusters/"+id+"/jobs/"+again.Job.ID, nil, &job))
	require.Equal(t, "SUCCEEDED", job.Status)
	require.Contains(t, job.StatusMessage, "lb start skipped on 1 node")

	allRunning(op("restart", lbOnly))
	allRunning(op("restart", map[string]any{}))
	allRunning(op("rolling-restart", map[string]any{"services": []string{"web"}, "batchSize": 1}))
	allRunning(op("reconfigure", map[string]any{"services": []string{"lb"}, "config": map[string]any{"greeting": "reconfigured"}}))
	allRunning(op("reconfigure", map[string]any{"services": []string{"web"}, "restart": true}))

	v = op("remove-services", lbOnly)
	for _, n := range v.Nodes {
		require.NotContains(t, n.Services, "lb")
	}
	v = op("add-services", map[string]any{"services": []string{"lb"}, "maxNewNodes": 1})
	allRunning(v)

	webs := len(demotest.WebHosts(v.Nodes))
	v = op("expand", map[string]any{"count": 2})
	require.Len(t, demotest.WebHosts(v.Nodes), webs+2, "the new nodes run web")
	allRunning(v)
	v = op("shrink", map[string]any{"count": 1})
	require.Len(t, demotest.WebHosts(v.Nodes), webs+1, "the removed web node is no longer a backend")
	require.Equal(t, len(v.Nodes), v.NodeCount, "the count quotas are checked against follows the nodes")
	allRunning(v)

	// A new template version; the cluster syncs to it.
	var tmpl map[string]any
	require.Equal(t, http.StatusOK, b.call(b.admin, "GET", "/v1/clustertemplates/web", nil, &tmpl))
	tmpl["description"] = "version two"
	for _, k := range []string{"version", "createdAt", "updatedAt"} {
		delete(tmpl, k)
	}
	require.Equal(t, http.StatusOK, b.call(b.admin, "PUT", "/v1/clustertemplates/web", tmpl, nil))
	allRunning(op("sync", map[string]any{}))

	var before, after struct {
		ExpiresAt time.Time `json:"expiresAt"`
	}
	require.Equal(t, http.StatusOK, b.call(b.admin, "GET", "/v1/clusters/"+id, nil, &before))
	require.Equal(t, http.StatusOK, b.call(b.admin, "POST", "/v1/clusters/"+id+"/lease", map[string]any{"by": "24h"}, &after))
	require.Equal(t, http.StatusOK, b.call(b.admin, "GET", "/v1/clusters/"+id, nil, &after))
	require.True(t, after.ExpiresAt.After(before.ExpiresAt), "the lease was extended: %s, then %s", before.ExpiresAt, after.ExpiresAt)

	var jobs struct {
		Items []struct {
			Operation string `json:"operation"`
			Status    string `json:"status"`
		} `json:"items"`
	}
	require.Equal(t, http.StatusOK, b.call(b.admin, "GET", "/v1/clusters/"+id+"/jobs", nil, &jobs))
	require.Equal(t, "sync-template", jobs.Items[0].Operation, "newest first")
	for _, j := range jobs.Items {
		require.Equal(t, "SUCCEEDED", j.Status, j.Operation)
	}

	require.Equal(t, http.StatusAccepted, b.call(b.admin, "DELETE", "/v1/clusters/"+id, nil, nil))
	v = b.settleTo(b.admin, id, "TERMINATED")
	require.Empty(t, v.Nodes)
	require.Zero(t, b.srv.local.Nodes(), "no node is left")
	var tenant access.TenantView
	require.Equal(t, http.StatusOK, b.call(b.super, "GET", "/v1/tenants/acme", nil, &tenant))
	require.Zero(t, tenant.Usage.Clusters)
	require.Zero(t, tenant.Usage.Nodes)
}

// scrape reads /metrics with the superadmin's key, parsed as Prometheus
// parses it.
func (b *bundle) scrape() map[string]*dto.MetricFamily {
	b.t.Helper()
	req, err := http.NewRequest("GET", b.srv.URL()+"/metrics", nil)
	require.NoError(b.t, err)
	req.Header.Set("Authorization", "Bearer "+b.super)
	resp, err := testHTTP.Do(req)
	require.NoError(b.t, err)
	defer resp.Body.Close()
	require.Equal(b.t, http.StatusOK, resp.StatusCode)
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	require.NoError(b.t, err)
	return families
}

// sum adds a family's samples whose label has value (every sample when
// label is ""): counters' values, histograms' counts.
func sum(families map[string]*dto.MetricFamily, name, label, value string) float64 {
	total := 0.0
	for _, m := range families[name].GetMetric() {
		match := label == ""
		for _, l := range m.GetLabel() {
			if l.GetName() == label && l.GetValue() == value {
				match = true
			}
		}
		if !match {
			continue
		}
		switch {
		case m.Counter != nil:
			total += m.GetCounter().GetValue()
		case m.Histogram != nil:
			total += float64(m.GetHistogram().GetSampleCount())
		case m.Gauge != nil:
			total += m.GetGauge().GetValue()
		}
	}
	return total
}

func TestMetricsAreForTheSuperadmin(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.tenant(4)
	require.Equal(t, http.StatusUnauthorized, b.call("", "GET", "/v1/metrics", nil, nil))
	require.Equal(t, http.StatusForbidden, b.call(b.admin, "GET", "/v1/metrics", nil, nil), "labels name every tenant")
	require.Contains(t, b.scrape(), "heddle_api_requests_total")
}

type errorBody struct {
	Error struct {
		Status  int    `json:"status"`
		Code    string `json:"code"`
		Message string `json:"message"`
		Details []struct {
			Field   string `json:"field"`
			Message string `json:"message"`
		} `json:"details"`
	} `json:"error"`
}

func TestRefusalsExplainThemselvesAndChangeNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.tenant(4)

	cases := []struct {
		name   string
		body   map[string]any
		status int
		code   string
		says   string
	}{
		{"too small for the template", map[string]any{"name": "x", "template": "web", "size": 1}, 422, "", "2"},
		{"no such template", map[string]any{"name": "x", "template": "nope", "size": 3}, 422, "validation_failed", "nope"},
		{"quota", map[string]any{"name": "x", "template": "web", "size": 5}, 409, "quota_exceeded", "maxNodes allows 4"},
		{"unknown field", map[string]any{"name": "x", "template": "web", "size": 3, "colour": "red"}, 400, "invalid_body", "colour"},
		{"a lease longer than the template allows", map[string]any{"name": "x", "template": "web", "size": 3, "lease": "48h"}, 422, "validation_failed", "24h"},
	}
	for _, c := range cases {
		var e errorBody
		got := b.call(b.admin, "POST", "/v1/clusters", c.body, &e)
		require.Equal(t, c.status, got, "%s: %+v", c.name, e)
		if c.code != "" {
			require.Equal(t, c.code, e.Error.Code, c.name)
		}
		text := e.Error.Message
		for _, d := range e.Error.Details {
			text += " " + d.Field + ": " + d.Message
		}
		require.Contains(t, text, c.says, c.name)
	}
	var list struct {
		Items []clusterView `json:"items"`
	}
	require.Equal(t, http.StatusOK, b.call(b.admin, "GET", "/v1/clusters?all=true", nil, &list))
	require.Empty(t, list.Items)
	var tenant access.TenantView
	require.Equal(t, http.StatusOK, b.call(b.super, "GET", "/v1/tenants/acme", nil, &tenant))
	require.Zero(t, tenant.Usage.Nodes)

	var e errorBody
	require.Equal(t, http.StatusNotFound, b.call(b.admin, "GET", "/v1/clusters/c0000000000000000", nil, &e))
	require.Equal(t, http.StatusNotFound, b.call(b.admin, "POST", "/v1/clusters/c0000000000000000/expand", map[string]any{"count": 1}, &e))
}

func TestUsersSeeTheirOwnClustersAndAdminsAll(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.tenant(20)
	keyOf := func(user string) string {
		require.Equal(t, http.StatusCreated, b.call(b.admin, "POST", "/v1/users", map[string]any{"name": user, "role": "user"}, nil))
		var k struct {
			Secret string `json:"secret"`
		}
		require.Equal(t, http.StatusCreated, b.call(b.admin, "POST", "/v1/users/"+user+"/keys", nil, &k))
		return k.Secret
	}
	bob, carol := keyOf("bob"), keyOf("carol")
	var created result
	require.Equal(t, http.StatusAccepted, b.call(bob, "POST", "/v1/clusters", map[string]any{"name": "bobs", "template": "web", "size": 2}, &created))
	id := created.Cluster.ID

	var e errorBody
	require.Equal(t, http.StatusNotFound, b.call(carol, "GET", "/v1/clusters/"+id, nil, &e), "another user's cluster does not exist for carol")
	require.Equal(t, http.StatusNotFound, b.call(carol, "DELETE", "/v1/clusters/"+id, nil, &e))
	var list struct {
		Items []clusterView `json:"items"`
	}
	require.Equal(t, http.StatusOK, b.call(carol, "GET", "/v1/clusters", nil, &list))
	require.Empty(t, list.Items)
	require.Equal(t, http.StatusOK, b.call(b.admin, "GET", "/v1/clusters", nil, &list))
	require.Len(t, list.Items, 1, "admins see every cluster of the tenant")

	// The other tenant's admin sees nothing of acme's cluster.
	var other struct {
		AdminKey struct {
			Secret string `json:"secret"`
		} `json:"adminKey"`
	}
	require.Equal(t, http.StatusCreated, b.call(b.super, "POST", "/v1/tenants",
		map[string]any{"id": "globex", "maxClusters": 1, "maxNodes": 5, "workers": 2, "admin": "gus"}, &other))
	require.Equal(t, http.StatusNotFound, b.call(other.AdminKey.Secret, "GET", "/v1/clusters/"+id, nil, &e))
	require.Equal(t, http.StatusNotFound, b.call(other.AdminKey.Secret, "GET", "/v1/clusters/"+id+"/jobs", nil, &e))

	b.settleTo(bob, id, "ACTIVE")
	// A service the catalog uses cannot be deleted while a live cluster runs it.
	require.Equal(t, http.StatusConflict, b.call(b.admin, "DELETE", "/v1/services/kv", nil, &e))
	require.Contains(t, e.Error.Message, "kv")

	require.Equal(t, http.StatusAccepted, b.call(bob, "DELETE", "/v1/clusters/"+id, nil, nil))
	require.Equal(t, "TERMINATED", b.settle(bob, id).Status)
}

func TestServicesComeAndGoAndTheTemplateSyncs(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.tenant(20)

	var created result
	require.Equal(t, http.StatusAccepted, b.call(b.admin, "POST", "/v1/clusters",
		map[string]any{"name": "shop", "template": "web", "size": 3, "services": []string{"web", "kv"}}, &created))
	id := created.Cluster.ID
	v := b.settleTo(b.admin, id, "ACTIVE")

	// lb may not share a node with web, and every node runs web: adding it
	// needs a new node, which the request allows.
	var e errorBody
	require.Equal(t, http.StatusUnprocessableEntity, b.call(b.admin, "POST", "/v1/clusters/"+id+"/add-services",
		map[string]any{"services": []string{"lb"}}, &e), "without new nodes lb has nowhere to go: %+v", e)
	require.Equal(t, http.StatusAccepted, b.call(b.admin, "POST", "/v1/clusters/"+id+"/add-services",
		map[string]any{"services": []string{"lb"}, "maxNewNodes": 1}, nil))
	v = b.settleTo(b.admin, id, "ACTIVE")
	require.Len(t, v.Nodes, 4)
	require.Len(t, through(t, v, 6), 3, "the added load balancer reaches every web node")

	// kv cannot go while web needs it at runtime.
	require.Equal(t, http.StatusUnprocessableEntity, b.call(b.admin, "POST", "/v1/clusters/"+id+"/remove-services",
		map[string]any{"services": []string{"kv"}}, &e))
	require.Contains(t, e.Error.Message, "web")
	require.Equal(t, http.StatusAccepted, b.call(b.admin, "POST", "/v1/clusters/"+id+"/remove-services",
		map[string]any{"services": []string{"lb"}}, nil))
	v = b.settleTo(b.admin, id, "ACTIVE")
	for _, n := range v.Nodes {
		require.NotContains(t, n.Services, "lb")
	}

	// A new template version; the cluster moves to it.
	var tmpl map[string]any
	require.Equal(t, http.StatusOK, b.call(b.admin, "GET", "/v1/clustertemplates/web", nil, &tmpl))
	tmpl["description"] = "version two"
	delete(tmpl, "version")
	delete(tmpl, "createdAt")
	delete(tmpl, "updatedAt")
	require.Equal(t, http.StatusOK, b.call(b.admin, "PUT", "/v1/clustertemplates/web", tmpl, nil))
	require.Equal(t, http.StatusAccepted, b.call(b.admin, "POST", "/v1/clusters/"+id+"/sync", map[string]any{}, nil))
	v = b.settleTo(b.admin, id, "ACTIVE")
	var synced struct {
		Template struct {
			Version int `json:"version"`
		} `json:"template"`
	}
	require.Equal(t, http.StatusOK, b.call(b.admin, "GET", "/v1/clusters/"+id, nil, &synced))
	require.Equal(t, 2, synced.Template.Version)

	require.Equal(t, http.StatusAccepted, b.call(b.admin, "DELETE", "/v1/clusters/"+id, nil, nil))
	require.Equal(t, "TERMINATED", b.settle(b.admin, id).Status)
	require.Zero(t, b.srv.local.Nodes())
}

// testLogger discards the server's log unless HEDDLE_TEST_LOG is set.
func testLogger() *slog.Logger {
	if os.Getenv("HEDDLE_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	return slog.New(slog.DiscardHandler)
}

func TestLeaseExtendsWithinTheTemplatePolicy(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.tenant(20)
	// The demo template's lease: initial 24h, step 24h, max 168h.
	var created result
	require.Equal(t, http.StatusAccepted, b.call(b.admin, "POST", "/v1/clusters",
		map[string]any{"name": "shop", "template": "web", "size": 2, "lease": "1h"}, &created))
	id := created.Cluster.ID
	type leased struct {
		CreatedAt time.Time `json:"createdAt"`
		ExpiresAt time.Time `json:"expiresAt"`
	}
	var c leased
	require.Equal(t, http.StatusOK, b.call(b.admin, "GET", "/v1/clusters/"+id, nil, &c))
	require.Equal(t, time.Hour, c.ExpiresAt.Sub(c.CreatedAt), "the shorter first lease asked for")

	var e errorBody
	require.Equal(t, http.StatusUnprocessableEntity, b.call(b.admin, "POST", "/v1/clusters/"+id+"/lease", map[string]any{"by": "48h"}, &e))
	require.Contains(t, e.Error.Message, "at most 24h0m0s per extension")
	for i := range 6 {
		var after leased
		require.Equal(t, http.StatusOK, b.call(b.admin, "POST", "/v1/clusters/"+id+"/lease", map[string]any{"by": "24h"}, &after), "extension %d", i)
		require.Equal(t, 24*time.Hour, after.ExpiresAt.Sub(c.ExpiresAt))
		c = after
	}
	// 1h + 6 x 24h = 145h; another 24h would pass the 168h maximum.
	require.Equal(t, http.StatusUnprocessableEntity, b.call(b.admin, "POST", "/v1/clusters/"+id+"/lease", map[string]any{"by": "24h"}, &e))
	require.Contains(t, e.Error.Message, "at most 168h0m0s from its creation")
	require.Equal(t, http.StatusBadRequest, b.call(b.admin, "POST", "/v1/clusters/"+id+"/lease", map[string]any{"by": "soon"}, &e))

	require.Equal(t, "ACTIVE", b.settle(b.admin, id).Status)
	require.Equal(t, http.StatusAccepted, b.call(b.admin, "DELETE", "/v1/clusters/"+id, nil, nil))
	require.Equal(t, "TERMINATED", b.settle(b.admin, id).Status)
}

func TestAnExpiredLeaseDeletesTheCluster(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.tenant(20)
	var created result
	require.Equal(t, http.StatusAccepted, b.call(b.admin, "POST", "/v1/clusters",
		map[string]any{"name": "brief", "template": "web", "size": 2, "lease": "1s"}, &created))
	id := created.Cluster.ID
	deadline := time.Now().Add(90 * time.Second)
	for {
		var v struct {
			Status   string `json:"status"`
			Progress struct {
				Operation string `json:"operation"`
				Status    string `json:"status"`
			} `json:"progress"`
		}
		require.Equal(t, http.StatusOK, b.call(b.admin, "GET", "/v1/clusters/"+id, nil, &v))
		if v.Status == "TERMINATED" {
			require.Equal(t, "delete", v.Progress.Operation, "the janitor deleted it with an ordinary delete job")
			require.Equal(t, "SUCCEEDED", v.Progress.Status)
			break
		}
		require.True(t, time.Now().Before(deadline), "the cluster outlived its lease: %+v", v)
		time.Sleep(100 * time.Millisecond)
	}
	require.Zero(t, b.srv.local.Nodes())

	// The janitor's delete closed the nodes' lifetimes: their node-hours
	// stop growing.
	report := func() (total float64) {
		var r struct {
			Rows []struct {
				Group string  `json:"group"`
				Total float64 `json:"total"`
			} `json:"rows"`
		}
		require.Equal(t, http.StatusOK, b.call(b.admin, "GET", "/v1/usage?groupBy=cluster&step=hour&from="+
			time.Now().Add(-time.Hour).UTC().Format(time.RFC3339), nil, &r))
		require.Len(t, r.Rows, 1)
		require.Equal(t, id, r.Rows[0].Group)
		return r.Rows[0].Total
	}
	first := report()
	require.Positive(t, first)
	time.Sleep(50 * time.Millisecond)
	require.Equal(t, first, report(), "a deleted node uses nothing more")
}

// TestLatencyProviderFromTheCatalog: the example catalog of the latency
// provider applies, and a cluster of its nodes is created (each confirm
// parked until the modeled boot and SSH are over) and deleted through the
// API.
func TestLatencyProviderFromTheCatalog(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.tenant(50)
	doc, err := os.ReadFile("../../docs/examples/latency-catalog.yaml")
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, b.call(b.admin, "POST", "/v1/catalog", doc, nil))
	var created result
	require.Equal(t, http.StatusAccepted, b.call(b.admin, "POST", "/v1/clusters", map[string]any{"name": "sim", "template": "sim", "size": 10}, &created))
	v := b.settleTo(b.admin, created.Cluster.ID, "ACTIVE")
	require.Len(t, v.Nodes, 10)
	for _, n := range v.Nodes {
		require.Regexp(t, `^198\.1[89]\.`, n.Addresses["access_v4"])
	}
	require.Equal(t, http.StatusAccepted, b.call(b.admin, "DELETE", "/v1/clusters/"+created.Cluster.ID, nil, nil))
	b.settleTo(b.admin, created.Cluster.ID, "TERMINATED")
}
