package api

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/store"
	"github.com/heddle-io/heddle/internal/store/boltstore"
	"github.com/heddle-io/heddle/internal/store/dynamotest"
)

// Benchmarks of a 10,000-node cluster through the API on each store: the
// embedded one always, DynamoDB Local when HEDDLE_DYNAMODB_ENDPOINT is set.
// No worker runs, so what is measured is the API's own path. Each reports
// latency percentiles (ms) and the answer's size.

// benchStores runs fn on each store backend.
func benchStores(b *testing.B, fn func(b *testing.B, db store.Store)) {
	b.Run("embedded", func(b *testing.B) {
		db, err := boltstore.Open(filepath.Join(b.TempDir(), "heddle.db"), boltstore.Options{})
		require.NoError(b, err)
		b.Cleanup(func() { _ = db.Close() })
		fn(b, store.NewCounting(db))
	})
	b.Run("dynamodb", func(b *testing.B) {
		// A 10,000-node benchmark leaves some 30,000 items: its table is
		// dropped, or DynamoDB Local grows by gigabytes and slows everyone
		// after.
		fn(b, store.NewCounting(dynamotest.Store(b, "api-bench")))
	})
}

// bigTenant serves the API over db with tenant acme allowed 100,000 nodes
// and the big catalog, and returns acme's admin key.
func bigTenant(b testing.TB, db store.Store) (*testBundle, string) {
	b.Helper()
	bundle := serveBundle(b, db, nil)
	key := bundle.createTenant(b, "acme")
	status, body := bundle.do(b, bundle.rootKey, http.MethodPut, "/v1/tenants/acme", map[string]any{"workers": 4, "maxClusters": 100, "maxNodes": 1000000})
	require.Equal(b, http.StatusOK, status, "%v", body)
	doc, err := os.ReadFile("../../docs/examples/big-catalog.yaml")
	require.NoError(b, err)
	status, body = bundle.do(b, key, http.MethodPost, "/v1/catalog", doc, "Content-Type", "application/yaml")
	require.Equal(b, http.StatusOK, status, "%v", body)
	return bundle, key
}

// timed runs one request b.N times and reports its percentiles and size
// and, when db counts its traffic (benchStores' stores do), the store's
// reads and writes per request (background writers' included).
//
// settle, when set, runs after each request, untimed: the create
// benchmark waits there for the background writer, so each request is
// measured on its own and not behind the previous one's writes (report
// both: the figure with writers behind it is the -overlapped one).
func timed(b *testing.B, db store.Store, want int, send func(i int) *http.Response, settle ...func(i int)) {
	counting, _ := db.(*store.Counting)
	if counting != nil {
		counting.Reset()
	}
	lat := make([]time.Duration, 0, b.N)
	size := 0
	cpuBefore := cpuTime(b)
	b.ResetTimer()
	for i := range b.N {
		start := time.Now()
		resp := send(i)
		n, _ := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		lat = append(lat, time.Since(start))
		require.Equal(b, want, resp.StatusCode)
		size = int(n)
		for _, fn := range settle {
			b.StopTimer()
			fn(i)
			b.StartTimer()
		}
	}
	b.StopTimer()
	// CPU time (user and system, the whole process: background writers
	// and GC included) per request: on a shared, loaded machine wall time
	// says more about the neighbours than about the code.
	b.ReportMetric(float64((cpuTime(b)-cpuBefore).Microseconds())/1000/float64(b.N), "cpu-ms/op")
	slices.Sort(lat)
	at := func(q float64) float64 {
		return float64(lat[min(len(lat)-1, int(q*float64(len(lat))))].Microseconds()) / 1000
	}
	b.ReportMetric(at(0.5), "p50-ms")
	b.ReportMetric(at(0.99), "p99-ms")
	b.ReportMetric(float64(size)/1024, "answer-KiB")
	if counting != nil {
		c := counting.Counts()
		b.ReportMetric(float64(c.ItemsRead)/float64(b.N), "items-read/op")
		b.ReportMetric(float64(c.Writes)/float64(b.N), "writes/op")
	}
}

var hugeCreate = map[string]any{"name": "huge", "template": "big", "size": 10000}

func BenchmarkDryRun10000Nodes(b *testing.B) {
	benchStores(b, func(b *testing.B, db store.Store) {
		bundle, key := bigTenant(b, db)
		timed(b, db, http.StatusOK, func(int) *http.Response {
			return bundle.raw(b, key, http.MethodPost, "/v1/clusters?dryRun=true", hugeCreate)
		})
	})
}

// BenchmarkCreate10000Nodes times POST of a 10,000-node create. In
// "alone", each request waits (untimed) for the previous job's background
// writer to start the job; in "overlapped", requests follow each other
// while earlier creates' writers still run in the same process.
func BenchmarkCreate10000Nodes(b *testing.B) {
	benchStores(b, func(b *testing.B, db store.Store) {
		bundle, key := bigTenant(b, db)
		n := 0
		post := func(int) *http.Response {
			n++
			return bundle.raw(b, key, http.MethodPost, "/v1/clusters", map[string]any{"name": fmt.Sprint("c", n), "template": "big", "size": 10000})
		}
		b.Run("alone", func(b *testing.B) {
			var jobPath string
			timed(b, db, http.StatusAccepted, func(i int) *http.Response {
				resp := post(i)
				if loc := resp.Header.Get("Location"); loc != "" {
					jobPath = loc
				}
				return resp
			}, func(int) {
				require.Eventually(b, func() bool {
					_, jv := bundle.do(b, key, http.MethodGet, jobPath, nil)
					return jv["status"] != "PENDING"
				}, 10*time.Minute, 50*time.Millisecond, "the background writer starts the job")
			})
		})
		b.Run("overlapped", func(b *testing.B) {
			timed(b, db, http.StatusAccepted, post)
		})
	})
}

func BenchmarkGet10000NodeCluster(b *testing.B) {
	benchStores(b, func(b *testing.B, db store.Store) {
		bundle, key := bigTenant(b, db)
		status, body := bundle.do(b, key, http.MethodPost, "/v1/clusters", hugeCreate)
		require.Equal(b, http.StatusAccepted, status, "%v", body)
		id := body["cluster"].(map[string]any)["id"].(string)
		job := body["job"].(map[string]any)["id"].(string)
		require.Eventually(b, func() bool {
			_, jv := bundle.do(b, key, http.MethodGet, "/v1/clusters/"+id+"/jobs/"+job, nil)
			return jv["status"] == "RUNNING"
		}, 10*time.Minute, 100*time.Millisecond, "the job, written in the background, starts")
		// What the task index cost at submission (written once).
		indexItems, indexBytes := 0, 0
		for cursor := ""; ; {
			page, err := db.Query(context.Background(), store.TenantPK("acme", "TASKIDX#"+job), store.Query{Limit: store.MaxPageSize, Cursor: cursor})
			require.NoError(b, err)
			for _, it := range page.Items {
				indexItems++
				indexBytes += len(it.Data)
			}
			if cursor = page.Next; cursor == "" {
				break
			}
		}
		_, jv := bundle.do(b, key, http.MethodGet, "/v1/clusters/"+id+"/jobs/"+job, nil)
		b.Logf("task index: %d items, %d KiB, for %v work tasks (%d tasks listed with the rollback plan's)", indexItems, indexBytes/1024, jv["taskTotal"], int(numberOr(jv["tasksOmitted"]))+len(jv["tasks"].([]any)))
		tasks := "/v1/clusters/" + id + "/jobs/" + job + "/tasks"
		// Every page's cursor, followed untimed from the first: pages past
		// the first come from the job's task index (a job this big has
		// one), the first from its summary.
		var cursors []string
		var lastTask string
		for cursor := ""; ; {
			p := tasks
			if cursor != "" {
				p += "?cursor=" + url.QueryEscape(cursor)
			}
			status, page := bundle.do(b, key, http.MethodGet, p, nil)
			require.Equal(b, http.StatusOK, status, "%v", page)
			if items := page["items"].([]any); len(items) > 0 {
				lastTask = items[len(items)-1].(map[string]any)["id"].(string)
			}
			cursor, _ = page["nextCursor"].(string)
			if cursor == "" {
				break
			}
			cursors = append(cursors, cursor)
		}
		require.Greater(b, len(cursors), 100, "a 10,000-node create's job has hundreds of pages of tasks")
		page := func(cursor string) string { return tasks + "?cursor=" + url.QueryEscape(cursor) }
		_, node := bundle.do(b, key, http.MethodGet, "/v1/clusters/"+id+"/nodes?limit=1&cursor=", nil)
		nodeID := node["items"].([]any)[0].(map[string]any)["id"].(string)
		for _, target := range []struct{ name, path string }{
			{"cluster", "/v1/clusters/" + id},
			{"job", "/v1/clusters/" + id + "/jobs/" + job},
			{"tasks-page", tasks},
			{"tasks-second-page", page(cursors[0])},
			{"tasks-middle-page", page(cursors[len(cursors)/2])},
			{"tasks-last-page", page(cursors[len(cursors)-1])},
			{"tasks-service-lb", tasks + "?service=lb"},
			{"tasks-action-configure", tasks + "?action=configure"},
			{"tasks-node", tasks + "?node=" + url.QueryEscape(nodeID)},
			{"tasks-stage-3", tasks + "?stage=3"},
			{"tasks-status-blocked", tasks + "?status=BLOCKED"},
			{"tasks-status-failed", tasks + "?status=FAILED"},
			{"task-one", tasks + "/" + url.PathEscape(lastTask)},
			{"nodes-page", "/v1/clusters/" + id + "/nodes"},
			// What the dashboard's job page reads besides: the task graph,
			// and the timeline's pages (500 tasks of a status).
			{"graph", "/v1/clusters/" + id + "/jobs/" + job + "/graph"},
			{"timeline-page", "/v1/clusters/" + id + "/jobs/" + job + "/tasks?status=READY&limit=500"},
		} {
			b.Run(target.name, func(b *testing.B) {
				timed(b, db, http.StatusOK, func(int) *http.Response { return bundle.raw(b, key, http.MethodGet, target.path, nil) })
			})
		}
	})
}

// cpuTime is the process's CPU time so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	require.NoError(b, syscall.Getrusage(syscall.RUSAGE_SELF, &ru))
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
