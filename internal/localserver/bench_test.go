package localserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/access"
)

// localTypes are the local provider and the hardware and image types the
// bench catalogs share.
const localTypes = `apiVersion: heddle/v1
providers:
  - {name: local, providerType: local}
hardwareTypes:
  - {name: small, providerMap: {local: {flavor: small}}}
imageTypes:
  - {name: debian, providerMap: {local: {image: host}}}
`

// benchCatalog is the demo's three services with a template that allows
// large clusters.
const benchCatalog = localTypes + `services:
  - {name: kv, actions: {install: {type: shell, fields: {script: "true"}}, start: {type: shell, fields: {script: "true"}}}}
  - name: web
    dependencies: {runtime: {requires: [kv]}}
    actions:
      install: {type: shell, fields: {script: "true"}}
      configure: {type: shell, fields: {script: "echo %ip.service.kv%"}}
      start: {type: shell, fields: {script: "true"}}
  - name: lb
    dependencies: {runtime: {uses: [web]}}
    actions:
      configure: {type: shell, fields: {script: "echo %join(map(ip.service.web,'$:8080'),',')%"}}
      start: {type: shell, fields: {script: "true"}}
clusterTemplates:
  - name: big
    compatibility: {services: [lb, web, kv]}
    defaults: {services: [lb, web, kv], provider: local, hardwareType: small, imageType: debian}
    constraints:
      size: {min: 3, max: 1000}
      layout: {cantCoexist: [[lb, web]]}
      services:
        lb: {quantities: {min: 1, max: 1}}
        kv: {quantities: {min: 1, max: 1}}
`

// benchServer is a local server whose jobs wait: it measures the API's own
// path, not the nodes being built.
func benchServer(b *testing.B) (url, admin string) {
	b.Helper()
	srv, admin := startBenchServer(b, true, 4, benchCatalog)
	return srv.URL(), admin
}

// startBenchServer starts a local server (with worker pools unless
// noWorkers) with tenant bench, whose pool has workers workers, and
// applies catalog; it returns the server and the tenant admin's key.
func startBenchServer(b *testing.B, noWorkers bool, workers int, catalog string) (*Server, string) {
	b.Helper()
	super := access.NewKeySecret()
	srv, err := Start(context.Background(), Config{DataDir: b.TempDir(), Listen: "127.0.0.1:0", BootstrapKey: super,
		Logger: slog.New(slog.DiscardHandler), NoWorkers: noWorkers, JanitorPeriod: time.Hour})
	require.NoError(b, err)
	b.Cleanup(func() { _ = srv.Shutdown(context.Background()) })
	var created struct {
		AdminKey struct {
			Secret string `json:"secret"`
		} `json:"adminKey"`
	}
	require.Equal(b, http.StatusCreated, post(b, srv.URL()+"/v1/tenants", super, "application/json",
		fmt.Sprintf(`{"id":"bench","maxClusters":100000,"maxNodes":100000000,"workers":%d,"admin":"ann"}`, workers), &created))
	require.Equal(b, http.StatusOK, post(b, srv.URL()+"/v1/catalog", created.AdminKey.Secret, "application/yaml", catalog, nil))
	return srv, created.AdminKey.Secret
}

func post(b *testing.B, url, key, ct, body string, out any) int {
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewBufferString(body))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", ct)
	resp, err := testHTTP.Do(req)
	require.NoError(b, err)
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if out != nil {
		require.NoError(b, json.Unmarshal(data, out), "%s", data)
	}
	return resp.StatusCode
}

// BenchmarkCreate100Nodes POSTs 100-node cluster creates one after another
// (solve, plan with rollback, one transaction for lock, quota, catalog
// revision and job, then nodes and ~700 tasks in batches) and reports the
// latency percentiles. The load generator is this benchmark's HTTP client,
// one request at a time over keep-alive.
func BenchmarkCreate100Nodes(b *testing.B) {
	url, admin := benchServer(b)
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		start := time.Now()
		code := post(b, url+"/v1/clusters", admin, "application/json", fmt.Sprintf(`{"name":"c%d","template":"big","size":100}`, i), nil)
		lat = append(lat, time.Since(start))
		if code != http.StatusAccepted {
			b.Fatalf("create answered %d", code)
		}
	}
	b.StopTimer()
	reportPercentiles(b, lat)
}

// BenchmarkGetCluster100Nodes GETs one 100-node cluster (its nodes, its job's
// progress and stage view) from as many concurrent clients as
// RunParallel starts, and reports requests per second.
func BenchmarkGetCluster100Nodes(b *testing.B) {
	url, admin := benchServer(b)
	var created struct {
		Cluster struct {
			ID string `json:"id"`
		} `json:"cluster"`
	}
	require.Equal(b, http.StatusAccepted, post(b, url+"/v1/clusters", admin, "application/json", `{"name":"c","template":"big","size":100}`, &created))
	target := url + "/v1/clusters/" + created.Cluster.ID
	var failed atomic.Int64
	b.SetParallelism(4) // 4 x GOMAXPROCS clients
	start := time.Now()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			req, _ := http.NewRequest(http.MethodGet, target, nil)
			req.Header.Set("Authorization", "Bearer "+admin)
			resp, err := testHTTP.Do(req)
			if err != nil || resp.StatusCode != http.StatusOK {
				failed.Add(1)
			}
			if resp != nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}
	})
	b.StopTimer()
	require.Zero(b, failed.Load())
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "req/s")
}

func reportPercentiles(b *testing.B, lat []time.Duration) {
	slices.Sort(lat)
	at := func(q float64) float64 {
		return float64(lat[min(len(lat)-1, int(q*float64(len(lat))))].Microseconds()) / 1000
	}
	b.ReportMetric(at(0.50), "p50-ms")
	b.ReportMetric(at(0.99), "p99-ms")
}

// noActionCatalog is one service without actions on the local provider:
// a create is, per node, create, confirm and bootstrap (nothing to
// bootstrap), so the run measures heddle's fixed cost per node.
const noActionCatalog = localTypes + `services:
  - {name: base}
clusterTemplates:
  - name: plain
    compatibility: {services: [base]}
    defaults: {services: [base], provider: local, hardwareType: small, imageType: debian}
    constraints:
      size: {min: 1, max: 1000}
`

// BenchmarkCreate1000NodesNoActions creates a 1,000-node cluster of local
// nodes whose service has no actions (3,000 tasks: create, confirm,
// bootstrap) through the API of a local server with 16 workers, and
// reports the time from the POST until the job succeeded, and tasks per
// second. The local provider's nodes are SSH servers in the process.
//
//	go test -run '^$' -bench Create1000NodesNoActions -benchtime 3x ./internal/localserver
func BenchmarkCreate1000NodesNoActions(b *testing.B) {
	const nodes, workers = 1000, 16
	var secs []float64
	for b.Loop() {
		b.StopTimer()
		srv, admin := startBenchServer(b, false, workers, noActionCatalog)
		time.Sleep(1500 * time.Millisecond) // the worker pool supervisor starts the tenant's pool within a second
		b.StartTimer()

		start := time.Now()
		var c struct {
			Cluster struct {
				ID string `json:"id"`
			} `json:"cluster"`
		}
		require.Equal(b, http.StatusAccepted, post(b, srv.URL()+"/v1/clusters", admin, "application/json",
			fmt.Sprintf(`{"name":"big","template":"plain","size":%d}`, nodes), &c))
		for {
			// The job list, not the cluster: the cluster's answer holds its
			// 1,000 nodes, and reading it often would load the server.
			var jobs struct {
				Items []struct {
					Status string `json:"status"`
				} `json:"items"`
			}
			req, _ := http.NewRequest(http.MethodGet, srv.URL()+"/v1/clusters/"+c.Cluster.ID+"/jobs", nil)
			req.Header.Set("Authorization", "Bearer "+admin)
			resp, err := testHTTP.Do(req)
			require.NoError(b, err)
			require.NoError(b, json.NewDecoder(resp.Body).Decode(&jobs))
			resp.Body.Close()
			require.Len(b, jobs.Items, 1)
			if s := jobs.Items[0].Status; s != "RUNNING" && s != "PENDING" {
				require.Equal(b, "SUCCEEDED", s)
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		took := time.Since(start)
		secs = append(secs, took.Seconds())
		b.Logf("1,000-node no-action create: %.2f s", took.Seconds())
		b.StopTimer()
		require.NoError(b, srv.Shutdown(context.Background()))
		b.StartTimer()
	}
	slices.Sort(secs)
	b.ReportMetric(secs[len(secs)/2], "median-s")
	b.ReportMetric(secs[len(secs)-1]-secs[0], "spread-s")
	b.ReportMetric(3*nodes/secs[len(secs)/2], "tasks/s")
}
