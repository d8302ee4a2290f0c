package api

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// GET .../jobs/{job}/graph answers the job's task graph by groups: every
// work task of the plan asked for in exactly one group, counted by status,
// and the critical path marked on groups and on the edges between them; a
// dry run's preview carries the same graph without statuses.
func TestJobGraphGroupsTheJobsTasks(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.importExample(t, b.acmeKey)

	status, body := b.do(t, b.acmeKey, http.MethodPost, "/v1/clusters?dryRun=true", map[string]any{"name": "shop", "template": "web", "size": 3})
	require.Equal(t, http.StatusOK, status, "%v", body)
	preview := body["preview"].(map[string]any)
	pg := preview["graph"].(map[string]any)
	require.NotEmpty(t, pg["groups"])
	require.EqualValues(t, preview["summary"].(map[string]any)["stages"], pg["stages"])
	require.Equal(t, preview["criticalPath"].(map[string]any)["tasks"], pg["criticalPath"].(map[string]any)["tasks"])

	resp := b.raw(t, b.acmeKey, http.MethodPost, "/v1/clusters", map[string]any{"name": "shop", "template": "web", "size": 3})
	resp.Body.Close()
	require.Equal(t, http.StatusAccepted, resp.StatusCode)
	job := resp.Header.Get("Location")

	for _, rollback := range []bool{false, true} {
		suffix := "?rollback=false"
		if rollback {
			suffix = "?rollback=true"
		}
		// The work tasks of the plan, from the listing.
		work := map[string]string{}
		status, page := b.do(t, b.acmeKey, http.MethodGet, job+"/tasks?limit=500&"+suffix[1:], nil)
		require.Equal(t, http.StatusOK, status, "%v", page)
		require.Empty(t, page["nextCursor"])
		for _, it := range page["items"].([]any) {
			task := it.(map[string]any)
			if task["join"] != true {
				work[task["id"].(string)] = task["status"].(string)
			}
		}
		require.NotEmpty(t, work)

		status, g := b.do(t, b.acmeKey, http.MethodGet, job+"/graph"+suffix, nil)
		require.Equal(t, http.StatusOK, status, "%v", g)
		groups := g["groups"].([]any)
		total := 0
		byStatus := map[string]int{}
		critical := map[int]bool{}
		for i, it := range groups {
			grp := it.(map[string]any)
			require.EqualValues(t, i, grp["id"])
			n := int(grp["tasks"].(float64))
			total += n
			counted := 0
			for st, c := range grp["status"].(map[string]any) {
				byStatus[st] += int(c.(float64))
				counted += int(c.(float64))
			}
			require.Equal(t, n, counted, "a group's statuses count its tasks")
			if grp["critical"] == true {
				critical[i] = true
			}
		}
		require.Equal(t, len(work), total, "every work task in one group (rollback %v)", rollback)
		want := map[string]int{}
		for _, st := range work {
			want[st]++
		}
		require.Equal(t, want, byStatus)
		path := g["criticalPath"].(map[string]any)["tasks"].([]any)
		require.NotEmpty(t, path)
		for _, id := range path {
			require.Contains(t, work, id, "the path runs through work tasks of this plan")
		}
		require.NotEmpty(t, critical)
		criticalEdges := 0
		for _, it := range g["edges"].([]any) {
			e := it.(map[string]any)
			from, to := int(e["from"].(float64)), int(e["to"].(float64))
			require.Less(t, groups[from].(map[string]any)["stage"].(float64), groups[to].(map[string]any)["stage"].(float64), "edges go forward")
			if e["critical"] == true {
				criticalEdges++
				require.True(t, critical[from] && critical[to])
			}
		}
		require.Equal(t, len(critical)-1, criticalEdges, "the critical groups are one chain")
	}

	for _, c := range []struct {
		key, path string
		status    int
	}{
		{b.acmeKey, job + "/graph?rollback=perhaps", http.StatusBadRequest},
		{b.otherKey, job + "/graph", http.StatusNotFound},
		{b.otherKey, job + "/graph?rollback=perhaps", http.StatusNotFound},
		{b.acmeKey, job + "x/graph", http.StatusNotFound},
	} {
		status, body := b.do(t, c.key, http.MethodGet, c.path, nil)
		require.Equal(t, c.status, status, "%s: %v", c.path, body)
		_, e := errorOf(t, body)
		require.NotEmpty(t, e["message"])
	}
}
