package localserver

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/audit"
	"github.com/heddle-io/heddle/internal/cluster"
	"github.com/heddle-io/heddle/internal/demotest"
)

// jobTaskIDs lists a job's task ids.
func (b *bundle) jobTaskIDs(id, job string) []string {
	b.t.Helper()
	var out []string
	cursor := ""
	for {
		var page struct {
			Items []struct {
				ID string `json:"id"`
			} `json:"items"`
			Next string `json:"next"`
		}
		path := "/v1/clusters/" + id + "/jobs/" + job + "/tasks"
		if cursor != "" {
			path += "?cursor=" + cursor
		}
		require.Equal(b.t, http.StatusOK, b.call(b.admin, "GET", path, nil, &page))
		for _, t := range page.Items {
			out = append(out, t.ID)
		}
		if page.Next == "" {
			return out
		}
		cursor = page.Next
	}
}

// repairJobs lists the cluster's repair jobs (id and who asked), newest
// first.
func (b *bundle) repairJobs(id string) [][2]string {
	b.t.Helper()
	var page struct {
		Items []struct {
			ID          string `json:"id"`
			Operation   string `json:"operation"`
			RequestedBy string `json:"requestedBy"`
		} `json:"items"`
	}
	require.Equal(b.t, http.StatusOK, b.call(b.admin, "GET", "/v1/clusters/"+id+"/jobs", nil, &page))
	var out [][2]string
	for _, j := range page.Items {
		if j.Operation == "repair" {
			out = append(out, [2]string{j.ID, j.RequestedBy})
		}
	}
	return out
}

// TestAutoRepairReplacesALostNode: a node whose machine died (its SSH
// server and processes killed) is found unreachable, and under repair auto
// the janitor replaces it: the lost node's record and machine are deleted,
// a new node with its services is made, set up and started, and web, whose
// configure reads the layout, is reconfigured and restarted on the nodes
// kept; cache, which reads nothing of it, is left alone. The quota the new
// node took at submission is given back by the lost node's delete, so the
// tenant counts the three nodes it has; the repair is a job of operation
// repair with an audit record whose actor is the policy; the next check
// finds nothing.
func TestAutoRepairReplacesALostNode(t *testing.T) {
	t.Parallel()
	b, dir := setupInDir(t)
	b.admin = demotest.TenantWithCatalog(t, b.srv.URL(), b.super, "acme", 10, "../../docs/examples/drift-catalog.yaml")
	var created result
	require.Equal(t, http.StatusAccepted, b.call(b.admin, "POST", "/v1/clusters",
		map[string]any{"name": "lossy", "template": "drift-auto", "size": 3}, &created))
	id := created.Cluster.ID
	v := b.settleTo(b.admin, id, "ACTIVE")
	first := b.healthAfter(id, "")
	require.Equal(t, [2]int{1, 3}, b.usage("acme"))

	lost, kept := v.Nodes[1].ID, []string{v.Nodes[0].ID, v.Nodes[2].ID}
	nodes := localNodes(t, dir)
	require.NoError(t, b.srv.local.Crash(nodes[lost].tenant, id, lost))
	require.Equal(t, http.StatusAccepted, b.call(b.admin, "POST", "/v1/clusters/"+id+"/drift", nil, nil))
	found := b.driftAfter(id, "")
	require.Equal(t, []string{lost + " unreachable"}, found.kinds())

	require.Eventually(t, func() bool { return len(b.repairJobs(id)) == 1 }, 60*time.Second, 100*time.Millisecond,
		"the janitor repairs the cluster: %v", b.jobOps(id))
	repair := b.repairJobs(id)[0]
	require.Equal(t, cluster.RepairPolicyActor, repair[1], "the policy asked for it, not the owner")
	after := b.settleTo(b.admin, id, "ACTIVE")
	var fresh string
	for _, n := range after.Nodes {
		switch {
		case n.ID == lost:
			require.Equal(t, "DELETED", n.Status, "the lost node's record goes")
		case !slices.Contains(kept, n.ID):
			require.Empty(t, fresh, "one node replaces one: %+v", after.Nodes)
			fresh = n.ID
			require.Equal(t, "ACTIVE", n.Status)
			require.Equal(t, []string{"cache", "web"}, n.Services, "the lost node's services")
			require.Equal(t, "running", n.ServiceStates["web"].State)
		}
	}
	require.NotEmpty(t, fresh)
	require.Equal(t, 3, liveNodes(after))
	_, err := os.Stat(nodes[lost].dir)
	require.True(t, os.IsNotExist(err), "the lost machine is deleted: %v", err)
	require.Equal(t, [2]int{1, 3}, b.usage("acme"), "the new node's quota is the lost node's, given back by its delete")

	tasks := b.jobTaskIDs(id, repair[0])
	for _, want := range []string{lost + "/delete", fresh + "/create", fresh + "/web/install", fresh + "/web/start", fresh + "/cache/configure"} {
		require.Contains(t, tasks, want)
	}
	for _, k := range kept {
		require.Contains(t, tasks, k+"/web/configure", "web's configure reads %%num.service.web%%")
		require.Contains(t, tasks, k+"/web/start")
		require.NotContains(t, tasks, k+"/cache/configure", "cache reads nothing of the layout")
	}
	require.NotContains(t, tasks, lost+"/web/stop", "nothing is there to stop")

	var records struct {
		Items []audit.Record `json:"items"`
	}
	require.Equal(t, http.StatusOK, b.call(b.admin, "GET", "/v1/audit", nil, &records))
	i := slices.IndexFunc(records.Items, func(r audit.Record) bool { return r.User == cluster.RepairPolicyActor })
	require.GreaterOrEqual(t, i, 0, "the janitor's repair has an audit record: %+v", records.Items)
	rec := records.Items[i]
	require.Equal(t, map[string]string{"cluster": id, "job": repair[0]}, rec.Target)
	require.Equal(t, audit.Done, rec.Outcome)
	require.Equal(t, "/v1/clusters/{cluster}/repair", rec.Route)

	// The repair's end makes a verification due (web has a check).
	require.Equal(t, "GREEN", b.healthAfter(id, first.JobID).Status)
	require.Equal(t, http.StatusAccepted, b.call(b.admin, "POST", "/v1/clusters/"+id+"/drift", nil, nil))
	clean := b.driftAfter(id, found.JobID)
	require.Zero(t, clean.Drifted, "the replacement runs everything: %v", clean.kinds())
}

// TestRepairByHandReplacesTheNodesNamed: under repair report nothing is
// repaired by itself, and a repair by hand names the node to replace. A
// dry run previews the replacement and takes nothing. The submission takes
// the new node's quota (the tenant counts 4 nodes: 3 and the replacement); an
// abort right away rolls the job back, and the rollback's delete of the new
// node gives its quota back (the lost node, whose delete waits for its
// replacement, still counts), so the tenant counts exactly the nodes not
// DELETED whichever way the abort met the job; a forced delete of the
// cluster then gives every node back.
func TestRepairByHandReplacesTheNodesNamed(t *testing.T) {
	t.Parallel()
	b, dir := setupInDir(t)
	b.admin = demotest.TenantWithCatalog(t, b.srv.URL(), b.super, "acme", 10, "../../docs/examples/drift-catalog.yaml")
	var created result
	require.Equal(t, http.StatusAccepted, b.call(b.admin, "POST", "/v1/clusters",
		map[string]any{"name": "manual", "template": "drift", "size": 3}, &created))
	id := created.Cluster.ID
	v := b.settleTo(b.admin, id, "ACTIVE")
	b.healthAfter(id, "")
	lostA, lostB := v.Nodes[0].ID, v.Nodes[2].ID
	nodes := localNodes(t, dir)
	require.NoError(t, b.srv.local.Crash(nodes[lostA].tenant, id, lostA))
	require.Equal(t, http.StatusAccepted, b.call(b.admin, "POST", "/v1/clusters/"+id+"/drift", nil, nil))
	found := b.driftAfter(id, "")
	require.Equal(t, []string{lostA + " unreachable"}, found.kinds())
	time.Sleep(time.Second) // several janitor passes: report only starts nothing
	require.Empty(t, b.repairJobs(id))

	var e errorBody
	require.Equal(t, http.StatusUnprocessableEntity, b.call(b.admin, "POST", "/v1/clusters/"+id+"/repair",
		map[string]any{"nodes": []string{lostB}}, &e), "a node with no finding")
	require.Equal(t, "nodes[0]", e.Error.Details[0].Field)

	var preview result
	require.Equal(t, http.StatusOK, b.call(b.admin, "POST", "/v1/clusters/"+id+"/repair?dryRun=true",
		map[string]any{"nodes": []string{lostA}}, &preview))
	require.NotEmpty(t, preview.Preview)
	require.Equal(t, [2]int{1, 3}, b.usage("acme"), "a dry run takes nothing")
	require.Empty(t, b.repairJobs(id))

	var res result
	require.Equal(t, http.StatusAccepted, b.call(b.admin, "POST", "/v1/clusters/"+id+"/repair",
		map[string]any{"nodes": []string{lostA}}, &res))
	require.Equal(t, [2]int{1, 4}, b.usage("acme"), "the new node takes its quota at submission, as an expand's does")
	code := b.call(b.admin, "POST", "/v1/clusters/"+id+"/jobs/"+res.Job.ID+"/abort", nil, nil)
	require.Contains(t, []int{http.StatusOK, http.StatusAccepted, http.StatusConflict}, code, "conflict: it ended first")
	after := b.settle(b.admin, id)
	require.Equal(t, [2]int{1, liveNodes(after)}, b.usage("acme"), "after the abort the tenant counts the nodes there are: %+v", after.Nodes)
	jobs := b.repairJobs(id)
	require.Len(t, jobs, 1)
	require.NotEqual(t, cluster.RepairPolicyActor, jobs[0][1], "asked by a user, in the user's name")

	require.Equal(t, http.StatusAccepted, b.call(b.admin, "DELETE", "/v1/clusters/"+id+"?force=true", nil, nil))
	b.settleTo(b.admin, id, "TERMINATED")
	require.Equal(t, [2]int{0, 0}, b.usage("acme"), "a delete gives every node back")
}

// TestAutoRepairStopsWhatRunsWhereHeddleStoppedIt: web stopped through
// heddle and then started by hand on one node is found as serviceRunning
// there, and the automatic repair stops it on that node alone (its record
// said stopped, which would have made a plain stop look needless); the
// next check finds nothing.
func TestAutoRepairStopsWhatRunsWhereHeddleStoppedIt(t *testing.T) {
	t.Parallel()
	b, dir := setupInDir(t)
	b.admin = demotest.TenantWithCatalog(t, b.srv.URL(), b.super, "acme", 10, "../../docs/examples/drift-catalog.yaml")
	var created result
	require.Equal(t, http.StatusAccepted, b.call(b.admin, "POST", "/v1/clusters",
		map[string]any{"name": "stopped", "template": "drift-auto", "size": 2}, &created))
	id := created.Cluster.ID
	v := b.settleTo(b.admin, id, "ACTIVE")
	b.healthAfter(id, "")
	require.Equal(t, http.StatusAccepted, b.call(b.admin, "POST", "/v1/clusters/"+id+"/stop", map[string]any{"services": []string{"web"}}, nil))
	b.settleTo(b.admin, id, "ACTIVE")

	node := v.Nodes[0].ID
	home := filepath.Join(localNodes(t, dir)[node].dir, "home", "web")
	sleeper := exec.Command("sleep", "3600")
	require.NoError(t, sleeper.Start())
	t.Cleanup(func() {
		_ = sleeper.Process.Kill()
		_ = sleeper.Wait()
	})
	require.NoError(t, os.WriteFile(filepath.Join(home, "pid"), []byte(strconv.Itoa(sleeper.Process.Pid)), 0o644))

	require.Equal(t, http.StatusAccepted, b.call(b.admin, "POST", "/v1/clusters/"+id+"/drift", nil, nil))
	found := b.driftAfter(id, "")
	require.Equal(t, []string{node + " web serviceRunning"}, found.kinds())
	require.Eventually(t, func() bool { return len(b.repairJobs(id)) == 1 }, 60*time.Second, 100*time.Millisecond)
	b.settleTo(b.admin, id, "ACTIVE")
	require.Equal(t, []string{node + "/bootstrap", node + "/web/stop"}, b.jobTaskIDs(id, b.repairJobs(id)[0][0]))

	require.Equal(t, http.StatusAccepted, b.call(b.admin, "POST", "/v1/clusters/"+id+"/drift", nil, nil))
	clean := b.driftAfter(id, found.JobID)
	require.Zero(t, clean.Drifted, "web is stopped again: %v", clean.kinds())
}
