package localserver

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/access"
	"github.com/heddle-io/heddle/internal/demotest"
	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/store"
)

type driftView struct {
	JobID    string         `json:"jobId"`
	Drifted  int            `json:"drifted"`
	Nodes    int            `json:"nodes"`
	Counts   map[string]int `json:"counts"`
	Findings []struct {
		Node    string    `json:"node"`
		Service string    `json:"service"`
		Kind    string    `json:"kind"`
		Detail  string    `json:"detail"`
		Since   time.Time `json:"since"`
	} `json:"findings"`
}

// kinds is the findings as "node service kind" lines.
func (d driftView) kinds() []string {
	var out []string
	for _, f := range d.Findings {
		out = append(out, strings.TrimSpace(f.Node+" "+f.Service)+" "+f.Kind)
	}
	return out
}

// driftAfter waits until the cluster's drift report comes from a job other
// than previous and no job holds the cluster, and returns it.
func (b *bundle) driftAfter(id, previous string) driftView {
	b.t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		var c struct {
			ActiveJobID string     `json:"activeJobId"`
			Drift       *driftView `json:"drift"`
		}
		require.Equal(b.t, http.StatusOK, b.call(b.admin, "GET", "/v1/clusters/"+id, nil, &c))
		if c.Drift != nil && c.Drift.JobID != previous && c.ActiveJobID == "" {
			return *c.Drift
		}
		if time.Now().After(deadline) {
			b.t.Fatalf("cluster %s: no drift check ended after %q", id, previous)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// localNode is a local node's directory and what its node.json says.
type localNode struct {
	dir    string
	tenant string
}

// localNodes maps the node ids of the server's local nodes to their
// directories.
func localNodes(t *testing.T, dataDir string) map[string]localNode {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dataDir, "nodes", "nodes", "*", "node.json"))
	require.NoError(t, err)
	out := map[string]localNode{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		var st struct {
			Tenant string `json:"tenant"`
			NodeID string `json:"nodeId"`
		}
		require.NoError(t, json.Unmarshal(data, &st))
		out[st.NodeID] = localNode{dir: filepath.Dir(f), tenant: st.Tenant}
	}
	return out
}

func setupInDir(t *testing.T) (*bundle, string) {
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
		demotest.KillProcessesUnder(dir)
	})
	b.srv = srv
	return b, dir
}

// TestDriftFindsStoppedServicesDeadNodesAndStaleConfig: a clean cluster
// reports no drift; then a reconfigure of one service with a new config
// leaves the other's configuration stale on every node, a service stopped
// by hand fails its check on its node, and a node whose machine died is
// unreachable (its services' failures are not reported again).
func TestDriftFindsStoppedServicesDeadNodesAndStaleConfig(t *testing.T) {
	t.Parallel()
	b, dir := setupInDir(t)
	b.admin = demotest.TenantWithCatalog(t, b.srv.URL(), b.super, "acme", 10, "../../docs/examples/drift-catalog.yaml")

	var created result
	require.Equal(t, http.StatusAccepted, b.call(b.admin, "POST", "/v1/clusters",
		map[string]any{"name": "drifty", "template": "drift", "size": 3}, &created))
	id := created.Cluster.ID
	v := b.settleTo(b.admin, id, "ACTIVE")
	require.Len(t, v.Nodes, 3)
	var rt struct {
		Resolved struct {
			Administration struct {
				DriftEvery *string `json:"driftEvery"`
			} `json:"administration"`
		} `json:"resolvedTemplate"`
	}
	require.Equal(t, http.StatusOK, b.call(b.admin, "GET", "/v1/clusters/"+id, nil, &rt))
	require.NotNil(t, rt.Resolved.Administration.DriftEvery, "the cluster records the period it uses")
	require.Equal(t, "0s", *rt.Resolved.Administration.DriftEvery, "off by default on the local provider")
	// The create made a verification due (web has a check): let it end, so
	// the drift check finds the cluster free.
	require.Equal(t, "GREEN", b.healthAfter(id, "").Status)

	require.Equal(t, http.StatusAccepted, b.call(b.admin, "POST", "/v1/clusters/"+id+"/drift", nil, nil))
	clean := b.driftAfter(id, "")
	require.Equal(t, 0, clean.Drifted, "nothing differs yet: %v", clean.kinds())
	require.Equal(t, 3, clean.Nodes)
	evs := b.events(id, "")
	require.Equal(t, "cluster.drift", evs[len(evs)-1].Type)
	require.Equal(t, "clean", evs[len(evs)-1].Status)

	// A new config applied to cache alone: web's configuration is stale.
	require.Equal(t, http.StatusAccepted, b.call(b.admin, "POST", "/v1/clusters/"+id+"/reconfigure",
		map[string]any{"services": []string{"cache"}, "config": map[string]any{"size": 2}}, nil))
	b.settleTo(b.admin, id, "ACTIVE")
	var nv struct {
		Items []struct {
			ID            string `json:"id"`
			ServiceStates map[string]struct {
				Config string `json:"config"`
			} `json:"serviceStates"`
		} `json:"items"`
	}
	require.Equal(t, http.StatusOK, b.call(b.admin, "GET", "/v1/clusters/"+id+"/nodes", nil, &nv))
	for _, n := range nv.Items {
		require.NotEmpty(t, n.ServiceStates["web"].Config, "node %s records what web's configure applied", n.ID)
		require.NotEmpty(t, n.ServiceStates["cache"].Config)
		require.NotEqual(t, n.ServiceStates["web"].Config, n.ServiceStates["cache"].Config)
	}

	// web stopped by hand on the first node; the second node's machine dies.
	nodes := localNodes(t, dir)
	stopped, dead, fine := v.Nodes[0].ID, v.Nodes[1].ID, v.Nodes[2].ID
	pid, err := os.ReadFile(filepath.Join(nodes[stopped].dir, "home", "web", "pid"))
	require.NoError(t, err)
	n, err := strconv.Atoi(strings.TrimSpace(string(pid)))
	require.NoError(t, err)
	require.NoError(t, syscall.Kill(n, syscall.SIGKILL))
	require.NoError(t, b.srv.local.Crash(nodes[dead].tenant, id, dead))

	require.Equal(t, http.StatusAccepted, b.call(b.admin, "POST", "/v1/clusters/"+id+"/drift", nil, nil))
	d := b.driftAfter(id, clean.JobID)
	want := []string{
		stopped + " web configStale", stopped + " web serviceDown",
		dead + " unreachable",
		fine + " web configStale",
	}
	if !assertKinds(t, want, d.kinds()) {
		var raw json.RawMessage
		b.call(b.admin, "GET", "/v1/clusters/"+id+"/jobs/"+d.JobID+"/tasks", nil, &raw)
		var nv json.RawMessage
		b.call(b.admin, "GET", "/v1/clusters/"+id+"/nodes", nil, &nv)
		t.Fatalf("tasks: %s\nnodes: %s", raw, nv)
	}
	require.Equal(t, 3, d.Drifted)
	var list struct {
		Items []struct {
			ID    string     `json:"id"`
			Drift *driftView `json:"drift"`
		} `json:"items"`
	}
	require.Equal(t, http.StatusOK, b.call(b.admin, "GET", "/v1/clusters", nil, &list))
	require.Len(t, list.Items, 1)
	require.Equal(t, 3, list.Items[0].Drift.Drifted, "a listing keeps the counts")
	require.Empty(t, list.Items[0].Drift.Findings, "and leaves the findings to the cluster's own view")
	require.Equal(t, map[string]int{"configStale": 2, "serviceDown": 1, "unreachable": 1}, d.Counts)
	for _, f := range d.Findings {
		require.NotEmpty(t, f.Detail, "%+v says what was seen", f)
		require.False(t, f.Since.IsZero())
	}
	last := b.events(id, "")
	require.Equal(t, "cluster.drift", last[len(last)-1].Type)
	require.Equal(t, "drifted", last[len(last)-1].Status)
	require.Equal(t, 1, last[len(last)-1].Counts["unreachable"])

	// Found again, a finding keeps the time it was first seen.
	require.Equal(t, http.StatusAccepted, b.call(b.admin, "POST", "/v1/clusters/"+id+"/drift", nil, nil))
	again := b.driftAfter(id, d.JobID)
	require.ElementsMatch(t, want, again.kinds())
	for i := range again.Findings {
		require.True(t, again.Findings[i].Since.Equal(d.Findings[i].Since), "%+v keeps its first time", again.Findings[i])
	}
	require.Equal(t, http.StatusNotFound, b.call(b.admin, "POST", "/v1/clusters/c-nope/drift", nil, nil))
}

func assertKinds(t *testing.T, want, got []string) bool {
	return len(want) == len(got) && func() bool {
		m := map[string]int{}
		for _, w := range want {
			m[w]++
		}
		for _, g := range got {
			m[g]--
		}
		for _, n := range m {
			if n != 0 {
				return false
			}
		}
		return true
	}()
}

// TestAUserOperationEndsARunningDriftCheck: a drift check never stands in
// a user's way (invariant 15): an operation submitted while one runs ends
// it and is accepted; a dry run changes nothing and leaves it running.
func TestAUserOperationEndsARunningDriftCheck(t *testing.T) {
	t.Parallel()
	b, _ := setupInDir(t)
	catalog := filepath.Join(t.TempDir(), "slow.yaml")
	data, err := os.ReadFile("../../docs/examples/drift-catalog.yaml")
	require.NoError(t, err)
	// web's check takes a while: the drift check is still running when
	// the operation comes.
	slow := strings.Replace(string(data), `            pid=$(cat "$HOME/web/pid" 2>/dev/null)`, `            sleep 3; pid=$(cat "$HOME/web/pid" 2>/dev/null)`, 1)
	require.NotEqual(t, string(data), slow)
	require.NoError(t, os.WriteFile(catalog, []byte(slow), 0o600))
	b.admin = demotest.TenantWithCatalog(t, b.srv.URL(), b.super, "acme", 10, catalog)

	var created result
	require.Equal(t, http.StatusAccepted, b.call(b.admin, "POST", "/v1/clusters",
		map[string]any{"name": "busy", "template": "drift", "size": 1}, &created))
	id := created.Cluster.ID
	b.settleTo(b.admin, id, "ACTIVE")
	b.healthAfter(id, "")

	var drift result
	require.Equal(t, http.StatusAccepted, b.call(b.admin, "POST", "/v1/clusters/"+id+"/drift", nil, &drift))
	require.Equal(t, http.StatusOK, b.call(b.admin, "POST", "/v1/clusters/"+id+"/restart?dryRun=true", map[string]any{}, nil))
	var c struct {
		ActiveJobID string `json:"activeJobId"`
	}
	require.Equal(t, http.StatusOK, b.call(b.admin, "GET", "/v1/clusters/"+id, nil, &c))
	require.Equal(t, drift.Job.ID, c.ActiveJobID, "a dry run leaves the drift check running")

	var restart result
	require.Equal(t, http.StatusAccepted, b.call(b.admin, "POST", "/v1/clusters/"+id+"/restart", map[string]any{}, &restart),
		"the operation is accepted, not refused as busy")
	var job struct {
		Status        string `json:"status"`
		StatusMessage string `json:"statusMessage"`
	}
	require.Equal(t, http.StatusOK, b.call(b.admin, "GET", "/v1/clusters/"+id+"/jobs/"+drift.Job.ID, nil, &job))
	require.Equal(t, "ABORTED", job.Status)
	require.Contains(t, job.StatusMessage, "operation")
	b.settleTo(b.admin, id, "ACTIVE")
	var after struct {
		Drift *driftView `json:"drift"`
	}
	require.Equal(t, http.StatusOK, b.call(b.admin, "GET", "/v1/clusters/"+id, nil, &after))
	require.Nil(t, after.Drift, "an ended check leaves no partial report")
}

// TestStaleOnlyActsOnTheStaleNodesAlone: reconfigure --stale-only plans
// configure on the nodes whose recorded configure digest differs from what
// the cluster renders, and on no other; afterwards no config drift is left;
// with nothing stale it is refused and changes nothing.
func TestStaleOnlyActsOnTheStaleNodesAlone(t *testing.T) {
	t.Parallel()
	b, _ := setupInDir(t)
	b.admin = demotest.TenantWithCatalog(t, b.srv.URL(), b.super, "acme", 10, "../../docs/examples/drift-catalog.yaml")
	var created result
	require.Equal(t, http.StatusAccepted, b.call(b.admin, "POST", "/v1/clusters",
		map[string]any{"name": "stale", "template": "drift", "size": 3}, &created))
	id := created.Cluster.ID
	v := b.settleTo(b.admin, id, "ACTIVE")
	b.healthAfter(id, "")

	var e errorBody
	require.Equal(t, http.StatusUnprocessableEntity, b.call(b.admin, "POST", "/v1/clusters/"+id+"/reconfigure",
		map[string]any{"staleOnly": true}, &e), "nothing is stale yet")
	require.Equal(t, "staleOnly", e.Error.Details[0].Field)
	require.Equal(t, http.StatusUnprocessableEntity, b.call(b.admin, "POST", "/v1/clusters/"+id+"/reconfigure",
		map[string]any{"staleOnly": true, "config": map[string]any{"size": 3}}, &e))
	require.Equal(t, "staleOnly", e.Error.Details[0].Field)

	// The middle node's web applied something else than the cluster
	// renders (as a configure from an older definition would have).
	stale := v.Nodes[1].ID
	key := store.Key{PK: store.TenantPK("acme", "NODES#"+id), SK: stale}
	it, err := b.srv.db.Get(context.Background(), key)
	require.NoError(t, err)
	var n domain.Node
	require.NoError(t, json.Unmarshal(it.Data, &n))
	st := n.ServiceStates["web"]
	require.NotEmpty(t, st.Config)
	st.Config = "sha256:an-older-definition"
	n.ServiceStates["web"] = st
	data, err := json.Marshal(n)
	require.NoError(t, err)
	_, err = b.srv.db.Write(context.Background(), store.Update(key, store.Condition{Version: it.Version}, store.Changes{Data: data}))
	require.NoError(t, err)

	var preview struct {
		Preview struct {
			Tasks []struct {
				NodeID  string `json:"nodeId"`
				Service string `json:"service"`
				Action  string `json:"action"`
			} `json:"tasks"`
		} `json:"preview"`
	}
	require.Equal(t, http.StatusOK, b.call(b.admin, "POST", "/v1/clusters/"+id+"/reconfigure?dryRun=true",
		map[string]any{"staleOnly": true, "services": []string{"web"}}, &preview))
	touched := map[string]bool{}
	var configures []string
	for _, task := range preview.Preview.Tasks {
		if task.NodeID != "" {
			touched[task.NodeID] = true
		}
		if task.Action == "configure" {
			configures = append(configures, task.NodeID+" "+task.Service)
		}
	}
	require.Equal(t, map[string]bool{stale: true}, touched, "no task on a node whose configuration is current")
	require.Equal(t, []string{stale + " web"}, configures)

	require.Equal(t, http.StatusAccepted, b.call(b.admin, "POST", "/v1/clusters/"+id+"/reconfigure",
		map[string]any{"staleOnly": true, "services": []string{"web"}}, nil))
	b.settleTo(b.admin, id, "ACTIVE")
	require.Equal(t, http.StatusAccepted, b.call(b.admin, "POST", "/v1/clusters/"+id+"/drift", nil, nil))
	d := b.driftAfter(id, "")
	require.Zero(t, d.Drifted, "%v", d.kinds())
}

// killWeb ends web's process on node as someone logged in there would.
func killWeb(t *testing.T, dir, node string) {
	t.Helper()
	pid, err := os.ReadFile(filepath.Join(localNodes(t, dir)[node].dir, "home", "web", "pid"))
	require.NoError(t, err)
	n, err := strconv.Atoi(strings.TrimSpace(string(pid)))
	require.NoError(t, err)
	require.NoError(t, syscall.Kill(n, syscall.SIGKILL))
}

// jobOps lists the operations of the cluster's jobs, newest first.
func (b *bundle) jobOps(id string) []string {
	b.t.Helper()
	var page struct {
		Items []struct {
			Operation   string `json:"operation"`
			RequestedBy string `json:"requestedBy"`
		} `json:"items"`
	}
	require.Equal(b.t, http.StatusOK, b.call(b.admin, "GET", "/v1/clusters/"+id+"/jobs", nil, &page))
	var out []string
	for _, j := range page.Items {
		out = append(out, j.Operation)
	}
	return out
}

// TestAutoRepairWithinMaxUnhealthy: with repair auto and maxUnhealthy 1, a
// service stopped by hand on one node is restarted by a repair job the
// janitor starts after the drift check, and the next check finds nothing;
// with two nodes drifted nothing is repaired and cluster.repair_halted
// fires; with the default policy (report) drift is only reported.
func TestAutoRepairWithinMaxUnhealthy(t *testing.T) {
	t.Parallel()
	b, dir := setupInDir(t)
	b.admin = demotest.TenantWithCatalog(t, b.srv.URL(), b.super, "acme", 10, "../../docs/examples/drift-catalog.yaml")
	create := func(name, template string) (string, clusterView) {
		var created result
		require.Equal(t, http.StatusAccepted, b.call(b.admin, "POST", "/v1/clusters",
			map[string]any{"name": name, "template": template, "size": 3}, &created))
		v := b.settleTo(b.admin, created.Cluster.ID, "ACTIVE")
		b.healthAfter(created.Cluster.ID, "")
		return created.Cluster.ID, v
	}
	auto, av := create("auto", "drift-auto")
	report, rv := create("report", "drift")

	killWeb(t, dir, av.Nodes[0].ID)
	killWeb(t, dir, rv.Nodes[0].ID)
	for _, id := range []string{auto, report} {
		require.Equal(t, http.StatusAccepted, b.call(b.admin, "POST", "/v1/clusters/"+id+"/drift", nil, nil))
	}
	found := b.driftAfter(auto, "")
	require.Equal(t, []string{av.Nodes[0].ID + " web serviceDown"}, found.kinds())
	reported := b.driftAfter(report, "")
	require.Equal(t, []string{rv.Nodes[0].ID + " web serviceDown"}, reported.kinds())

	// The janitor repairs the auto cluster: a reconfigure with restart.
	require.Eventually(t, func() bool { return slices.Contains(b.jobOps(auto), "repair") }, 60*time.Second, 100*time.Millisecond)
	b.settleTo(b.admin, auto, "ACTIVE")
	require.Equal(t, http.StatusAccepted, b.call(b.admin, "POST", "/v1/clusters/"+auto+"/drift", nil, nil))
	repaired := b.driftAfter(auto, found.JobID)
	require.Zero(t, repaired.Drifted, "web runs again: %v", repaired.kinds())
	require.NotContains(t, b.jobOps(report), "repair", "report only: nothing repaired")

	// Two nodes drifted, more than maxUnhealthy 1: nothing is repaired.
	killWeb(t, dir, av.Nodes[1].ID)
	killWeb(t, dir, av.Nodes[2].ID)
	before := len(b.jobOps(auto))
	require.Equal(t, http.StatusAccepted, b.call(b.admin, "POST", "/v1/clusters/"+auto+"/drift", nil, nil))
	wide := b.driftAfter(auto, repaired.JobID)
	require.Equal(t, 2, wide.Drifted)
	require.Eventually(t, func() bool {
		for _, ev := range b.events(auto, "") {
			if ev.Type == "cluster.repair_halted" {
				return ev.Counts["drifted"] == 2 && ev.Counts["maxUnhealthy"] == 1
			}
		}
		return false
	}, 60*time.Second, 100*time.Millisecond, "the janitor's repair halts and says so")
	require.Len(t, b.jobOps(auto), before+1, "the drift check, and no repair")
	var e errorBody
	require.Equal(t, http.StatusConflict, b.call(b.admin, "POST", "/v1/clusters/"+auto+"/repair", map[string]any{}, &e))
	require.Equal(t, "repair_halted", e.Error.Code)
}
