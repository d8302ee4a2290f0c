package engine

import (
	"fmt"
	"math/rand/v2"
	"os"
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
