package localserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/access"
	"github.com/heddle-io/heddle/internal/demotest"
)

// benchServer is a local server whose jobs wait: it measures the API's own
// path, not the nodes being built.
func benchServer(b *testing.B) (url, admin string) {
	b.Helper()
	super := access.NewKeySecret()
	srv, err := Start(context.Background(), Config{DataDir: b.TempDir(), Listen: "127.0.0.1:0", BootstrapKey: super,
		Logger: slog.New(slog.DiscardHandler), NoWorkers: true, JanitorPeriod: time.Hour})
	require.NoError(b, err)
	b.Cleanup(func() { _ = srv.Shutdown(context.Background()) })
	var created struct {
		AdminKey struct {
			Secret string `json:"secret"`
		} `json:"adminKey"`
	}
	require.Equal(b, http.StatusCreated, post(b, srv.URL()+"/v1/tenants", super, "application/json",
		`{"id":"bench","maxClusters":100000,"maxNodes":100000000,"workers":4,"admin":"ann"}`, &created))
	doc, err := os.ReadFile(demotest.BigCatalog)
	require.NoError(b, err)
	require.Equal(b, http.StatusOK, post(b, srv.URL()+"/v1/catalog", created.AdminKey.Secret, "application/yaml", string(doc), nil))
	return srv.URL(), created.AdminKey.Secret
}

func post(b *testing.B, url, key, ct, body string, out any) int {
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewBufferString(body))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", ct)
	resp, err := http.DefaultClient.Do(req)
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
			resp, err := http.DefaultClient.Do(req)
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

// get GETs url and returns the status and the answer's size.
func get(b *testing.B, url, key string) (int, int) {
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(b, err)
	defer resp.Body.Close()
	n, _ := io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, int(n)
}

// postSized is post that also returns the answer's size.
func postSized(b *testing.B, url, key, body string) (int, int) {
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewBufferString(body))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(b, err)
	defer resp.Body.Close()
	n, _ := io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, int(n)
}

// BenchmarkDryRun10000Nodes asks for the plan of a 10,000-node create
// (solve, plan with rollback, bounded preview) and reports its latency
// percentiles and the answer's size.
func BenchmarkDryRun10000Nodes(b *testing.B) {
	url, admin := benchServer(b)
	lat := make([]time.Duration, 0, b.N)
	size := 0
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		code, n := postSized(b, url+"/v1/clusters?dryRun=true", admin, `{"name":"huge","template":"big","size":10000}`)
		lat = append(lat, time.Since(start))
		if code != http.StatusOK {
			b.Fatalf("dry run answered %d", code)
		}
		size = n
	}
	b.StopTimer()
	reportPercentiles(b, lat)
	b.ReportMetric(float64(size)/1024, "answer-KiB")
}

// BenchmarkCreate10000Nodes POSTs 10,000-node creates one after another
// and reports the latency to the 202.
func BenchmarkCreate10000Nodes(b *testing.B) {
	url, admin := benchServer(b)
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		start := time.Now()
		code, _ := postSized(b, url+"/v1/clusters", admin, fmt.Sprintf(`{"name":"c%d","template":"big","size":10000}`, i))
		lat = append(lat, time.Since(start))
		if code != http.StatusAccepted {
			b.Fatalf("create answered %d", code)
		}
	}
	b.StopTimer()
	reportPercentiles(b, lat)
}

// BenchmarkGet10000NodeViews GETs, one after another, a 10,000-node
// cluster's view and a default page of its create job's tasks, and reports
// each one's latency percentiles and answer size.
func BenchmarkGet10000NodeViews(b *testing.B) {
	url, admin := benchServer(b)
	var created struct {
		Cluster struct{ ID string } `json:"cluster"`
		Job     struct{ ID string } `json:"job"`
	}
	require.Equal(b, http.StatusAccepted, post(b, url+"/v1/clusters", admin, "application/json", `{"name":"huge","template":"big","size":10000}`, &created))
	for _, target := range []struct{ name, path string }{
		{"cluster", "/v1/clusters/" + created.Cluster.ID},
		{"tasks-page", "/v1/clusters/" + created.Cluster.ID + "/jobs/" + created.Job.ID + "/tasks"},
		{"job", "/v1/clusters/" + created.Cluster.ID + "/jobs/" + created.Job.ID},
	} {
		b.Run(target.name, func(b *testing.B) {
			lat := make([]time.Duration, 0, b.N)
			size := 0
			for range b.N {
				start := time.Now()
				code, n := get(b, url+target.path, admin)
				lat = append(lat, time.Since(start))
				if code != http.StatusOK {
					b.Fatalf("GET %s answered %d", target.path, code)
				}
				size = n
			}
			reportPercentiles(b, lat)
			b.ReportMetric(float64(size)/1024, "answer-KiB")
		})
	}
}
