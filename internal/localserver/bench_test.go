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
