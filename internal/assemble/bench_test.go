package assemble

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/access"
	"github.com/heddle-io/heddle/internal/automator"
	"github.com/heddle-io/heddle/internal/automator/shell"
	"github.com/heddle-io/heddle/internal/catalog"
	"github.com/heddle-io/heddle/internal/cluster"
	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/engine"
	"github.com/heddle-io/heddle/internal/provider"
	"github.com/heddle-io/heddle/internal/provider/latency"
	"github.com/heddle-io/heddle/internal/queue"
	"github.com/heddle-io/heddle/internal/queue/memqueue"
	"github.com/heddle-io/heddle/internal/secrets"
	"github.com/heddle-io/heddle/internal/store/boltstore"
)

// busyMeter wraps the queue and integrates how many workers wait in
// Receive: a worker not in Receive is handling a message, which is what a
// worker Lambda bills. Busy time is workers x wall time - that integral.
type busyMeter struct {
	queue.Queue
	mu        sync.Mutex
	waiting   int
	since     time.Time
	idle      time.Duration
	receives  int
	delivered int
}

func (m *busyMeter) step(delta int) {
	now := time.Now()
	m.idle += time.Duration(m.waiting) * now.Sub(m.since)
	m.since = now
	m.waiting += delta
}

func (m *busyMeter) Receive(ctx context.Context, tenant string, max int, wait, visibility time.Duration) ([]queue.Delivery, error) {
	m.mu.Lock()
	m.step(+1)
	m.mu.Unlock()
	ds, err := m.Queue.Receive(ctx, tenant, max, wait, visibility)
	m.mu.Lock()
	m.step(-1)
	m.receives++
	m.delivered += len(ds)
	m.mu.Unlock()
	return ds, err
}

// idleSince resets the meter and returns a function that reads the idle
// time since.
func (m *busyMeter) reset() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.since, m.idle, m.receives, m.delivered = time.Now(), 0, 0, 0
}

func (m *busyMeter) read() (idle time.Duration, delivered int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.step(0)
	return m.idle, m.delivered
}

func envDuration(name string, def time.Duration) time.Duration {
	if d, err := time.ParseDuration(os.Getenv(name)); err == nil {
		return d
	}
	return def
}

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

const latencyCatalog = `apiVersion: heddle/v1
providers:
  - name: sim
    providerType: latency
    fields: {create_latency: %q, boot: %q, ssh_after: %q, delete_after: %q, poll_interval: %q}
hardwareTypes:
  - {name: small, providerMap: {sim: {flavor: small}}}
imageTypes:
  - {name: debian, providerMap: {sim: {image: debian, sshUser: admin}}}
services:
  - {name: base}
clusterTemplates:
  - name: big
    compatibility: {services: [base]}
    defaults: {services: [base], provider: sim, hardwareType: small, imageType: debian}
    constraints:
      size: {min: 1, max: 10000}
`

// BenchmarkLatencyCreate1000 creates a 1,000-node cluster whose service
// has no actions (per node: create, confirm, bootstrap) on the latency
// provider, with the local server's store (bbolt, synced) and in-process
// queue, and workers sized like a tenant's, and reports the wall time
// against the ideal (the create wave at the provider's create latency
// spread over the workers, then boot and SSH readiness: nothing else is on
// the critical path), and the billed worker time per node (time workers
// spend handling messages, as a worker Lambda bills it).
//
// The defaults are EC2's timings scaled by a tenth (6 s boot, 1.5 s to
// SSH, 0.5 s polls, 20 ms to accept a create), so a run takes seconds; the
// environment sets others:
//
//	HEDDLE_BENCH_NODES=1000 HEDDLE_BENCH_WORKERS=4 HEDDLE_BENCH_BOOT=60s \
//	HEDDLE_BENCH_SSH=15s HEDDLE_BENCH_POLL=5s HEDDLE_BENCH_CREATE=200ms \
//	  go test -run '^$' -bench LatencyCreate1000 -benchtime 1x -timeout 30m ./internal/assemble
func BenchmarkLatencyCreate1000(b *testing.B) {
	nodes, workers := envInt("HEDDLE_BENCH_NODES", 1000), envInt("HEDDLE_BENCH_WORKERS", 4)
	boot, ssh := envDuration("HEDDLE_BENCH_BOOT", 6*time.Second), envDuration("HEDDLE_BENCH_SSH", 1500*time.Millisecond)
	poll, create := envDuration("HEDDLE_BENCH_POLL", 500*time.Millisecond), envDuration("HEDDLE_BENCH_CREATE", 20*time.Millisecond)
	var ratios, billed, polls []float64
	for b.Loop() {
		wall, busy, delivered := latencyCreate(b, nodes, workers, boot, ssh, poll, create)
		// The creates go out workers at a time; the last one accepted
		// boots like the others.
		ideal := time.Duration(nodes/workers)*create + boot + ssh
		ratios = append(ratios, wall.Seconds()/ideal.Seconds())
		billed = append(billed, busy.Seconds()/float64(nodes))
		polls = append(polls, float64(delivered)/float64(nodes))
		b.Logf("%d nodes, %d workers: %.2f s (ideal %.2f s), billed %.3f worker-s per node, %.1f deliveries per node",
			nodes, workers, wall.Seconds(), ideal.Seconds(), busy.Seconds()/float64(nodes), float64(delivered)/float64(nodes))
	}
	b.ReportMetric(median(ratios), "ratio-to-ideal")
	b.ReportMetric(median(billed), "billed-worker-s/node")
	b.ReportMetric(median(polls), "deliveries/node")
}

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return s[len(s)/2]
}

func latencyCreate(b *testing.B, nodes, workers int, boot, ssh, poll, create time.Duration) (wall, busy time.Duration, delivered int) {
	b.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir := b.TempDir()
	db, err := boltstore.Open(filepath.Join(dir, "heddle.db"), boltstore.Options{NoSync: os.Getenv("HEDDLE_BENCH_NOSYNC") != ""})
	require.NoError(b, err)
	defer db.Close()
	key, err := secrets.LoadOrCreateKeyFile(filepath.Join(dir, "master.key"))
	require.NoError(b, err)
	registry := provider.NewRegistry()
	counted := &countingProvider{Latency: latency.New(latency.Config{})}
	require.NoError(b, registry.Register(latency.Type(), counted))
	mq := memqueue.New(memqueue.Options{})
	meter := &busyMeter{Queue: mq}
	sh := shell.New(shell.Config{})
	defer sh.Close()
	svc, err := Build(Parts{Store: db, Queue: meter, Keyring: secrets.NewKeyring(key), Providers: registry,
		Automators: map[string]automator.Automator{shell.Type: sh},
		Engine:     engine.Config{TaskLease: 15 * time.Second, Visibility: 30 * time.Second, ResendAfter: time.Minute},
		Logger:     benchLogger()})
	require.NoError(b, err)
	_, _, err = svc.Access.CreateTenant(ctx, domain.Tenant{ID: "bench", Workers: workers, MaxClusters: 10, MaxNodes: 100000}, "")
	require.NoError(b, err)
	require.NoError(b, mq.CreateTenantQueue(ctx, "bench"))
	doc, err := catalog.DecodeDocument(fmt.Appendf(nil, latencyCatalog, create.String(), boot.String(), ssh.String(), "1s", poll.String()))
	require.NoError(b, err)
	_, err = svc.Catalog.Import(ctx, "bench", doc)
	require.NoError(b, err)

	var pool sync.WaitGroup
	pool.Add(1)
	go func() {
		defer pool.Done()
		svc.Engine.RunWorkers(ctx, "bench", workers)
	}()
	defer pool.Wait()
	defer cancel()

	who := access.Principal{Tenant: "bench", User: "ann", Role: domain.RoleAdmin}
	meter.reset()
	start := time.Now()
	res, err := svc.Clusters.Create(ctx, who, cluster.CreateRequest{Name: "sim", Template: "big", Size: nodes}, false)
	require.NoError(b, err)
	b.Logf("submitted in %.2f s", time.Since(start).Seconds())
	for {
		job, err := svc.Engine.Job(ctx, "bench", res.Cluster.ID, res.Job.ID)
		require.NoError(b, err)
		if job.Status.Terminal() {
			require.Equal(b, domain.JobSucceeded, job.Status, "%s", job.StatusMessage)
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	wall = time.Since(start)
	idle, delivered := meter.read()
	b.Logf("provider calls: %d creates, %d confirms, %d deletes", counted.creates.Load(), counted.confirms.Load(), counted.deletes.Load())
	busy = time.Duration(workers)*wall - idle
	return wall, busy, delivered
}

// countingProvider counts the latency provider's calls.
type countingProvider struct {
	*latency.Latency
	creates, confirms, deletes atomic.Int64
}

func (c *countingProvider) Create(ctx context.Context, req provider.Request) (provider.Node, error) {
	c.creates.Add(1)
	return c.Latency.Create(ctx, req)
}

func (c *countingProvider) Confirm(ctx context.Context, req provider.Request) (provider.Progress, error) {
	c.confirms.Add(1)
	return c.Latency.Confirm(ctx, req)
}

func (c *countingProvider) Delete(ctx context.Context, req provider.Request) (provider.Progress, error) {
	c.deletes.Add(1)
	return c.Latency.Delete(ctx, req)
}

// benchLogger discards the engine's log unless HEDDLE_BENCH_LOG is set.
func benchLogger() *slog.Logger {
	if os.Getenv("HEDDLE_BENCH_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	return slog.New(slog.DiscardHandler)
}
