package engine

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/store"
	"github.com/heddle-io/heddle/planner"
)

// BenchmarkNoopTasks runs creates of 100 nodes whose tasks do nothing through
// the embedded engine (bbolt with fsync, the in-process queue, 64 workers)
// and reports work tasks per second and the store traffic per work task.
// Every op a canceled transaction carried counts as a write.
//
// Two plans of the same layout: "references=declared" is what the cluster
// service plans (it tells the planner which services' scripts name which
// others, from their macros), "references=unknown" the most cautious plan
// (no service task before every node is confirmed: a barrier of joins over
// all nodes, which costs edges and claims). With HEDDLE_DYNAMODB_ENDPOINT
// and HEDDLE_SQS_ENDPOINT set (scripts/dynamodb-local.sh, scripts/fauxqs.sh)
// the declared plan also runs on DynamoDB Local and the SQS backend.
//
//	go test -run '^$' -bench NoopTasks -benchtime 5x ./internal/engine/
func BenchmarkNoopTasks(b *testing.B) {
	for _, bc := range []struct {
		name string
		refs map[string][]string
	}{{"references=declared", declaredReferences()}, {"references=unknown", nil}} {
		b.Run(bc.name+"/embedded", func(b *testing.B) { benchmarkNoopTasks(b, bc.refs) })
	}
	if os.Getenv("HEDDLE_DYNAMODB_ENDPOINT") != "" && os.Getenv(sqsEndpointVar) != "" {
		b.Run("references=declared/dynamodb", func(b *testing.B) { benchmarkNoopTasks(b, declaredReferences()) })
	}
}

func benchmarkNoopTasks(b *testing.B, refs map[string][]string) {
	const nodes, workers = 100, 64
	var tasks, elapsed float64
	var counts store.Counts
	for b.Loop() {
		b.StopTimer()
		tb := setup(b, nil, Config{})
		sub := createSubmissionWithReferences(b, "c1", nodes, nil, refs)
		tb.counts.Reset()
		b.StartTimer()

		start := time.Now()
		job, err := tb.eng.Submit(tb.ctx, sub)
		require.NoError(b, err)
		stop := tb.run(b, workers, time.Second)
		final := tb.waitJobQuietly(b, "c1", job.ID, 5*time.Minute)
		took := time.Since(start)
		stop()

		b.StopTimer()
		require.Equal(b, domain.JobSucceeded, final.Status)
		tasks += float64(final.TaskTotal)
		elapsed += took.Seconds()
		c := tb.counts.Counts()
		counts.Writes += c.Writes
		counts.Gets += c.Gets
		counts.QueryPages += c.QueryPages
		counts.IndexPages += c.IndexPages
		counts.Transactions += c.Transactions
		counts.ConditionFailures += c.ConditionFailures
		b.StartTimer()
	}
	b.ReportMetric(tasks/elapsed, "tasks/s")
	b.ReportMetric(float64(counts.Writes)/tasks, "writes/task")
	b.ReportMetric(float64(counts.Gets+counts.QueryPages+counts.IndexPages)/tasks, "reads/task")
	b.ReportMetric(float64(counts.Transactions)/tasks, "tx/task")
	b.ReportMetric(float64(counts.ConditionFailures)/tasks, "conflicts/task")
}

// BenchmarkMakespan200Nodes runs a 200-node create whose tasks take random
// durations (HEDDLE_BENCH_TASK_MS, default 500-2500 ms, fixed seed) twice on
// the same engine: as heddle
// plans it (each task starts when its own dependencies are done) and in
// strict stages (Coopr's scheduling: a stage starts when the whole previous
// stage is done). It reports each makespan divided by the graph's critical
// path, and prints the figures side by side.
//
//	go test -run '^$' -bench Makespan200Nodes -benchtime 1x ./internal/engine/
func BenchmarkMakespan200Nodes(b *testing.B) {
	const nodes = 200
	lo, hi := 500, 2500
	if r := os.Getenv("HEDDLE_BENCH_TASK_MS"); r != "" {
		if _, err := fmt.Sscanf(r, "%d-%d", &lo, &hi); err != nil || lo < 0 || hi < lo {
			b.Fatalf("HEDDLE_BENCH_TASK_MS=%q: want a range such as 50-250", r)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	durations := map[string]time.Duration{}
	params := func(pt planner.Task) map[string]string {
		d, ok := durations[pt.ID]
		if !ok {
			d = time.Duration(lo+rng.IntN(hi-lo+1)) * time.Millisecond
			durations[pt.ID] = d
		}
		return map[string]string{SimDuration: d.String()}
	}
	est := func(t *planner.Task) time.Duration { return durations[t.ID] }

	run := func(b *testing.B, strict bool) (makespan, critical, stageBound time.Duration) {
		tb := setup(b, nil, Config{})
		sub := createSubmission(b, "c1", nodes, params)
		for _, pt := range sub.Plan.Tasks {
			params(pt) // draw every duration before the estimates read them
		}
		cp, err := sub.Plan.CriticalPath(est)
		require.NoError(b, err)
		stages, err := sub.Plan.Stages()
		require.NoError(b, err)
		stageBound = sub.Plan.StageMakespan(stages, est)
		if strict {
			staged, err := sub.Plan.StrictStages(planner.Limits{})
			require.NoError(b, err)
			staged.Rollback = sub.Plan.Rollback
			sub.Plan = staged
			sub.Params = params
		}
		job, err := tb.eng.Submit(tb.ctx, sub)
		require.NoError(b, err)
		stop := tb.run(b, nodes, time.Second) // a worker per node: parallelism is not the limit
		final := tb.waitJobQuietly(b, "c1", job.ID, 10*time.Minute)
		stop()
		require.Equal(b, domain.JobSucceeded, final.Status)
		return final.EndedAt.Sub(final.StartedAt), cp.Length, stageBound
	}
	for b.Loop() {
		heddle, critical, stageBound := run(b, false)
		strict, _, _ := run(b, true)
		b.ReportMetric(heddle.Seconds()/critical.Seconds(), "heddle/critical")
		b.ReportMetric(strict.Seconds()/critical.Seconds(), "strict/critical")
		fmt.Printf("200-node create: critical path %v; heddle makespan %v (%.3f); strict stages %v (%.3f; the stage view's own bound %v)\n",
			critical.Round(time.Millisecond), heddle.Round(time.Millisecond), heddle.Seconds()/critical.Seconds(),
			strict.Round(time.Millisecond), strict.Seconds()/critical.Seconds(), stageBound.Round(time.Millisecond))
	}
}

// BenchmarkCreate10000NodesToActive drives a 10,000-node create (the
// three-tier plan with the references the cluster service declares, about
// 55,000 tasks) to ACTIVE through the simulation executor with 64 workers,
// and reports the wall time from submission to the job's end and the
// process's peak resident set (VmHWM, which includes the benchmark's own
// setup).
//
//	go test -run '^$' -bench Create10000NodesToActive -benchtime 1x ./internal/engine
func BenchmarkCreate10000NodesToActive(b *testing.B) {
	const nodes, workers = 10000, 64
	var elapsed float64
	for b.Loop() {
		b.StopTimer()
		tb := setup(b, nil, Config{})
		t, err := tb.acc.GetTenant(tb.ctx, tenant)
		require.NoError(b, err)
		t.Tenant.MaxNodes = nodes
		_, err = tb.acc.UpdateTenant(tb.ctx, t.Tenant, 0)
		require.NoError(b, err)
		sub := createSubmissionWithReferences(b, "c1", nodes, nil, declaredReferences())
		b.StartTimer()

		start := time.Now()
		job, err := tb.eng.Submit(tb.ctx, sub)
		require.NoError(b, err)
		stop := tb.run(b, workers, time.Second)
		final := tb.waitJobQuietly(b, "c1", job.ID, 30*time.Minute)
		elapsed += time.Since(start).Seconds()
		stop()
		require.Equal(b, domain.JobSucceeded, final.Status)
	}
	b.ReportMetric(elapsed/float64(b.N), "wall-s")
	b.ReportMetric(float64(procStatus(b, "VmHWM"))/(1<<20), "peak-RSS-MiB")
	// What is resident at the end, anonymous (the heap) and file-backed
	// (the embedded store's memory map).
	b.ReportMetric(float64(procStatus(b, "RssAnon"))/(1<<20), "end-anon-MiB")
	b.ReportMetric(float64(procStatus(b, "RssFile"))/(1<<20), "end-file-MiB")
}

// procStatus is one of Linux's memory figures for this process, in bytes.
func procStatus(b *testing.B, field string) int64 {
	data, err := os.ReadFile("/proc/self/status")
	require.NoError(b, err)
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			require.NoError(b, err)
			return kb << 10
		}
	}
	b.Fatalf("no %s in /proc/self/status", field)
	return 0
}
