package localserver

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/access"
	"github.com/heddle-io/heddle/internal/demotest"
)

// modeledCatalog is a latency-provider cluster whose drift is repaired
// automatically; fields are the provider's timings ("" : its defaults,
// EC2's).
func modeledCatalog(fields string) string {
	return `apiVersion: heddle/v1
providers:
  - name: sim
    description: Modeled machines.
    providerType: latency
` + fields + `
hardwareTypes:
  - {name: small, providerMap: {sim: {flavor: small}}}
imageTypes:
  - {name: debian, providerMap: {sim: {image: model, sshUser: admin}}}
services:
  - name: placeholder
    description: No actions; the latency provider's nodes cannot run any.
clusterTemplates:
  - name: modeled
    compatibility: {services: [placeholder]}
    defaults: {services: [placeholder], provider: sim, hardwareType: small, imageType: debian}
    constraints: {size: {min: 1, max: 10}}
    administration:
      repair: {mode: auto, maxUnhealthy: "1", backoff: 1m}
`
}

// replacement is how long each stage from a node's loss to its
// replacement being ACTIVE took.
type replacement struct {
	found, submitted, active time.Duration // from the loss
}

// modeledWorld is a local server with one 3-node latency cluster.
type modeledWorld struct {
	tb          testing.TB
	srv         *Server
	admin, id   string
	lostBefore  []string
	janitorTick time.Duration
}

func newModeledWorld(tb testing.TB, fields string, janitor time.Duration) *modeledWorld {
	tb.Helper()
	super := access.NewKeySecret()
	dir := tb.TempDir()
	srv, err := Start(context.Background(), Config{DataDir: dir, Listen: "127.0.0.1:0", BootstrapKey: super, Version: "test",
		Logger: testLogger(), JanitorPeriod: janitor})
	require.NoError(tb, err)
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	})
	path := filepath.Join(dir, "catalog.yaml")
	require.NoError(tb, os.WriteFile(path, []byte(modeledCatalog(fields)), 0o600))
	w := &modeledWorld{tb: tb, srv: srv, janitorTick: janitor}
	w.admin = demotest.TenantWithCatalog(tb, srv.URL(), super, "acme", 10, path)
	var created result
	require.Equal(tb, http.StatusAccepted, demotest.Call(tb, srv.URL(), w.admin, "POST", "/v1/clusters",
		map[string]any{"name": "modeled", "template": "modeled", "size": 3}, &created))
	w.id = created.Cluster.ID
	w.waitIdle(10 * time.Minute)
	return w
}

type modeledNode struct {
	ID         string `json:"id"`
	Status     string `json:"status"`
	ProviderID string `json:"providerId"`
}

func (w *modeledWorld) nodes() []modeledNode {
	var v struct {
		Nodes []modeledNode `json:"nodes"`
	}
	require.Equal(w.tb, http.StatusOK, demotest.Call(w.tb, w.srv.URL(), w.admin, "GET", "/v1/clusters/"+w.id, nil, &v))
	return v.Nodes
}

// waitIdle waits until no job holds the cluster and it is ACTIVE.
func (w *modeledWorld) waitIdle(limit time.Duration) {
	deadline := time.Now().Add(limit)
	for {
		var c struct {
			Status      string `json:"status"`
			ActiveJobID string `json:"activeJobId"`
		}
		require.Equal(w.tb, http.StatusOK, demotest.Call(w.tb, w.srv.URL(), w.admin, "GET", "/v1/clusters/"+w.id, nil, &c))
		if c.ActiveJobID == "" && c.Status == "ACTIVE" {
			return
		}
		if time.Now().After(deadline) {
			w.tb.Fatalf("cluster %s is %s with job %q after %s", w.id, c.Status, c.ActiveJobID, limit)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// loseAndReplace loses the cluster's first ACTIVE node, asks for a drift
// check at once (a scheduled one comes driftEvery/2 later on average),
// and times the finding, the janitor's repair and the replacement being
// ACTIVE.
func (w *modeledWorld) loseAndReplace(limit time.Duration) replacement {
	tb := w.tb
	var lost modeledNode
	var before []string
	for _, n := range w.nodes() {
		if n.Status != "DELETED" {
			before = append(before, n.ID)
			if lost.ID == "" && n.Status == "ACTIVE" {
				lost = n
			}
		}
	}
	require.NotEmpty(tb, lost.ProviderID)
	var r replacement
	start := time.Now()
	w.srv.LoseModeledNode(lost.ProviderID)
	require.Equal(tb, http.StatusAccepted, demotest.Call(tb, w.srv.URL(), w.admin, "POST", "/v1/clusters/"+w.id+"/drift", nil, nil))
	deadline := start.Add(limit)
	for {
		var c struct {
			Drift *struct {
				Findings []struct {
					Node string `json:"node"`
					Kind string `json:"kind"`
				} `json:"findings"`
			} `json:"drift"`
		}
		require.Equal(tb, http.StatusOK, demotest.Call(tb, w.srv.URL(), w.admin, "GET", "/v1/clusters/"+w.id, nil, &c))
		if r.found == 0 && c.Drift != nil && slices.ContainsFunc(c.Drift.Findings, func(f struct {
			Node string `json:"node"`
			Kind string `json:"kind"`
		}) bool {
			return f.Node == lost.ID && f.Kind == "machineGone"
		}) {
			r.found = time.Since(start)
		}
		if r.submitted == 0 {
			var jobs struct {
				Items []struct {
					Operation string    `json:"operation"`
					CreatedAt time.Time `json:"createdAt"`
				} `json:"items"`
			}
			require.Equal(tb, http.StatusOK, demotest.Call(tb, w.srv.URL(), w.admin, "GET", "/v1/clusters/"+w.id+"/jobs", nil, &jobs))
			for _, j := range jobs.Items {
				if j.Operation == "repair" && j.CreatedAt.After(start) {
					r.submitted = j.CreatedAt.Sub(start)
				}
			}
		}
		for _, n := range w.nodes() {
			if !slices.Contains(before, n.ID) && n.Status == "ACTIVE" && r.submitted > 0 {
				r.active = time.Since(start)
			}
		}
		if r.active > 0 {
			break
		}
		if time.Now().After(deadline) {
			tb.Fatalf("node %s lost %s ago: found %s, repair submitted %s, no replacement ACTIVE: %+v", lost.ID, limit, r.found, r.submitted, w.nodes())
		}
		time.Sleep(50 * time.Millisecond)
	}
	w.waitIdle(limit)
	return r
}

// TestALostModeledMachineIsReplaced: on the latency provider (short
// timings) a node terminated outside heddle is found gone by the
// provider's answer alone (its addresses lead nowhere and are never
// dialed) and replaced by the janitor's repair.
func TestALostModeledMachineIsReplaced(t *testing.T) {
	t.Parallel()
	w := newModeledWorld(t, `    fields: {create_latency: 10ms, boot: 100ms, ssh_after: 50ms, delete_after: 50ms, poll_interval: 20ms}`, 100*time.Millisecond)
	var clean struct {
		Drift *struct {
			Drifted int `json:"drifted"`
		} `json:"drift"`
	}
	require.Equal(t, http.StatusAccepted, demotest.Call(t, w.srv.URL(), w.admin, "POST", "/v1/clusters/"+w.id+"/drift", nil, nil))
	w.waitIdle(time.Minute)
	require.Equal(t, http.StatusOK, demotest.Call(t, w.srv.URL(), w.admin, "GET", "/v1/clusters/"+w.id, nil, &clean))
	require.NotNil(t, clean.Drift)
	require.Zero(t, clean.Drift.Drifted, "nothing lost yet, and no probe dialed the modeled addresses")
	r := w.loseAndReplace(time.Minute)
	require.Positive(t, r.found)
	live := 0
	for _, n := range w.nodes() {
		if n.Status != "DELETED" {
			live++
		}
	}
	require.Equal(t, 3, live)
}

// BenchmarkLossToReplacementActive: the time from a node's loss to its
// replacement being ACTIVE, on the latency provider at its default (EC2)
// timings: create 1 s, boot 75 s, SSH 15 s, terminate 30 s, polled every
// 5 s, with the janitor every 10 s. The drift check is asked at the loss;
// a scheduled one adds half its period on average. Each run loses one
// node of a 3-node cluster; it prints every run and the medians.
//
//	go test -run '^$' -bench LossToReplacementActive -benchtime 3x -timeout 30m ./internal/localserver/
func BenchmarkLossToReplacementActive(b *testing.B) {
	w := newModeledWorld(b, "", 10*time.Second)
	var runs []replacement
	for b.Loop() {
		r := w.loseAndReplace(10 * time.Minute)
		runs = append(runs, r)
		fmt.Printf("loss to: drift found %s, repair submitted %s, replacement ACTIVE %s\n",
			r.found.Round(time.Millisecond), r.submitted.Round(time.Millisecond), r.active.Round(time.Millisecond))
	}
	median := func(get func(replacement) time.Duration) time.Duration {
		ds := make([]time.Duration, len(runs))
		for i, r := range runs {
			ds[i] = get(r)
		}
		sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
		return ds[len(ds)/2]
	}
	act := median(func(r replacement) time.Duration { return r.active })
	fmt.Printf("median of %d: drift found %s, repair submitted %s, replacement ACTIVE %s\n", len(runs),
		median(func(r replacement) time.Duration { return r.found }).Round(time.Millisecond),
		median(func(r replacement) time.Duration { return r.submitted }).Round(time.Millisecond), act.Round(time.Millisecond))
	b.ReportMetric(act.Seconds(), "s-to-active")
}
