package localserver

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/demotest"
)

type healthView struct {
	Status   string         `json:"status"`
	JobID    string         `json:"jobId"`
	Counts   map[string]int `json:"counts"`
	Problems []struct {
		Node     string `json:"node"`
		Service  string `json:"service"`
		Status   string `json:"status"`
		Output   string `json:"output"`
		Duration int64  `json:"durationNs"`
	} `json:"problems"`
}

type eventView struct {
	ID        string         `json:"id"`
	Type      string         `json:"type"`
	Job       string         `json:"job"`
	Operation string         `json:"operation"`
	Status    string         `json:"status"`
	Previous  string         `json:"previous"`
	Counts    map[string]int `json:"counts"`
}

// healthAfter waits until the cluster's health comes from a job other than
// previous and returns it.
func (b *bundle) healthAfter(id, previous string) healthView {
	b.t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		var c struct {
			ActiveJobID string      `json:"activeJobId"`
			Health      *healthView `json:"health"`
		}
		require.Equal(b.t, http.StatusOK, b.call(b.admin, "GET", "/v1/clusters/"+id, nil, &c))
		if c.Health != nil && c.Health.JobID != previous && c.ActiveJobID == "" {
			return *c.Health
		}
		if time.Now().After(deadline) {
			b.t.Fatalf("cluster %s: no verification ended after %q", id, previous)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (b *bundle) events(id, since string) []eventView {
	b.t.Helper()
	var page struct {
		Items []eventView `json:"items"`
	}
	path := "/v1/clusters/" + id + "/events"
	if since != "" {
		path += "?since=" + since
	}
	require.Equal(b.t, http.StatusOK, b.call(b.admin, "GET", path, nil, &page))
	return page.Items
}

func TestVerificationFindsHealthyDegradedFailingAndHangingChecks(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.admin = demotest.TenantWithCatalog(t, b.srv.URL(), b.super, "acme", 10, "../../docs/examples/health-catalog.yaml")

	var created result
	require.Equal(t, http.StatusAccepted, b.call(b.admin, "POST", "/v1/clusters",
		map[string]any{"name": "probes", "template": "health", "size": 1, "services": []string{"steady", "tired", "broken", "stuck"}}, &created))
	id := created.Cluster.ID
	b.settleTo(b.admin, id, "ACTIVE")

	// The create succeeded, so the janitor verifies the cluster by itself.
	h := b.healthAfter(id, "")
	require.Equal(t, "RED", h.Status, "a failing check makes the cluster RED: %+v", h)
	require.Equal(t, map[string]int{"degraded": 2, "failing": 1}, map[string]int{"degraded": h.Counts["degraded"], "failing": h.Counts["failing"]})
	require.Equal(t, 1, h.Counts["healthy"])
	byService := map[string]string{}
	for _, p := range h.Problems {
		byService[p.Service] = p.Status
		switch p.Service {
		case "broken":
			require.Equal(t, "connection refused", p.Output, "the failing check shows what it printed, not the SSH layer's exit status: %+v", p)
		case "stuck":
			require.Contains(t, p.Output, "timed out", "the hanging check was cut at its timeout: %+v", p)
			require.Less(t, p.Duration, int64(25*time.Second), "cut at its 1 s timeout, not left to sleep 30 s")
		}
	}
	require.Equal(t, map[string]string{"tired": "degraded", "broken": "failing", "stuck": "degraded"}, byService)

	// Each check's full result is its task in the verification job.
	var task struct {
		Status   string `json:"status"`
		Attempts []struct {
			Health   string `json:"health"`
			ExitCode int    `json:"exitCode"`
			Stderr   string `json:"stderr"`
		} `json:"attempts"`
	}
	var nodes struct {
		Items []demotest.Node `json:"items"`
	}
	require.Equal(t, http.StatusOK, b.call(b.admin, "GET", "/v1/clusters/"+id+"/nodes", nil, &nodes))
	require.Len(t, nodes.Items, 1)
	node := nodes.Items[0].ID
	require.Equal(t, http.StatusOK, b.call(b.admin, "GET", "/v1/clusters/"+id+"/jobs/"+h.JobID+"/tasks/"+node+"%2Ftired%2Fcheck", nil, &task))
	require.Equal(t, "SUCCEEDED", task.Status, "a check that finds a fault has still done its work")
	require.Equal(t, "degraded", task.Attempts[0].Health)
	require.Equal(t, 75, task.Attempts[0].ExitCode)
	require.Contains(t, task.Attempts[0].Stderr, "900 ms")

	// On request too; the events tell the story in order.
	seen := b.events(id, "")
	last := seen[len(seen)-1]
	require.Equal(t, "cluster.verified", last.Type)
	require.Equal(t, "RED", last.Status)
	require.Equal(t, http.StatusAccepted, b.call(b.admin, "POST", "/v1/clusters/"+id+"/verify", nil, nil))
	again := b.healthAfter(id, h.JobID)
	require.Equal(t, "RED", again.Status)
	newer := b.events(id, last.ID)
	var kinds []string
	for _, ev := range newer {
		kinds = append(kinds, ev.Type+" "+ev.Status)
	}
	require.Equal(t, []string{"job.status PENDING", "job.status RUNNING", "job.status SUCCEEDED", "cluster.verified RED"}, kinds)

	var e errorBody
	require.Equal(t, http.StatusBadRequest, b.call(b.admin, "GET", "/v1/clusters/"+id+"/events?since=yesterday", nil, &e))
	require.Equal(t, "query.since", e.Error.Details[0].Field)
	require.Equal(t, http.StatusNotFound, b.call(b.admin, "POST", "/v1/clusters/c-nope/verify", nil, nil))
}

func TestHealthIsGreenWhenEveryCheckPassesAndYellowWhenOneIsDegraded(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.admin = demotest.TenantWithCatalog(t, b.srv.URL(), b.super, "acme", 10, "../../docs/examples/health-catalog.yaml")

	var green, yellow result
	require.Equal(t, http.StatusAccepted, b.call(b.admin, "POST", "/v1/clusters",
		map[string]any{"name": "fine", "template": "health", "size": 2, "services": []string{"steady"}}, &green))
	require.Equal(t, http.StatusAccepted, b.call(b.admin, "POST", "/v1/clusters",
		map[string]any{"name": "meh", "template": "health", "size": 1, "services": []string{"steady", "tired"}}, &yellow))
	b.settleTo(b.admin, green.Cluster.ID, "ACTIVE")
	b.settleTo(b.admin, yellow.Cluster.ID, "ACTIVE")
	g := b.healthAfter(green.Cluster.ID, "")
	require.Equal(t, "GREEN", g.Status)
	require.Equal(t, 2, g.Counts["healthy"], "one check per node that carries the service")
	require.Empty(t, g.Problems)
	y := b.healthAfter(yellow.Cluster.ID, "")
	require.Equal(t, "YELLOW", y.Status)
	require.Len(t, y.Problems, 1)

	evs := b.events(green.Cluster.ID, "")
	var kinds []string
	for _, ev := range evs {
		kinds = append(kinds, ev.Type+" "+ev.Previous+">"+ev.Status)
	}
	require.Equal(t, []string{
		"job.status >PENDING", "cluster.status >PENDING", "job.status PENDING>RUNNING", "job.status RUNNING>SUCCEEDED", "cluster.status PENDING>ACTIVE",
		"job.status >PENDING", "job.status PENDING>RUNNING", "job.status RUNNING>SUCCEEDED", "cluster.verified >GREEN",
	}, kinds)
	for i := 1; i < len(evs); i++ {
		require.Less(t, evs[i-1].ID, evs[i].ID, "ids sort in the order of the changes")
	}

	require.Equal(t, http.StatusAccepted, b.call(b.admin, "DELETE", "/v1/clusters/"+green.Cluster.ID, nil, nil))
	require.Equal(t, "TERMINATED", b.settle(b.admin, green.Cluster.ID).Status)
	require.Equal(t, http.StatusAccepted, b.call(b.admin, "DELETE", "/v1/clusters/"+yellow.Cluster.ID, nil, nil))
	require.Equal(t, "TERMINATED", b.settle(b.admin, yellow.Cluster.ID).Status)
}
