package planner

import (
	"fmt"
	"hash/fnv"
	"testing"
	"time"

	"github.com/heddle-io/heddle/internal/domain"
)

// benchCreate is a 1,000-node create with the same six services on every
// node: the densest cross-node dependencies a cluster of that size can have.
func benchCreate() Request {
	services := catalog(
		svc("base", "ic", nil, nil),
		svc("agent", "icxt", []string{"base"}, nil),
		usesAtRuntime(svc("storage", "icsxt", []string{"base"}, nil), "agent"),
		svc("compute", "icxt", []string{"base"}, []string{"storage"}),
		svc("cache", "icxt", []string{"base"}, nil),
		svc("app", "icsxt", []string{"agent"}, []string{"compute", "cache"}),
	)
	nodes := make([]domain.Node, 1000)
	for i := range nodes {
		nodes[i] = mkNode(fmt.Sprintf("node-%04d", i), 1000+i, "base", "agent", "storage", "compute", "cache", "app")
	}
	return Request{
		Operation: domain.OpCreate,
		New:       nodes,
		Services:  services,
		ConfigReferences: map[string][]string{
			"storage": {"storage"},
			"compute": {"storage"},
			"app":     {"storage", "cache"},
		},
	}
}

// jittered spreads each task's estimate over [0.5, 1.5) of its action's, by a
// hash of the task ID, so slow nodes exist as they do in practice.
func jittered(base Estimator) Estimator {
	return func(t *Task) time.Duration {
		h := fnv.New32a()
		h.Write([]byte(t.ID))
		f := 0.5 + float64(h.Sum32()%1000)/1000
		return time.Duration(float64(base(t)) * f)
	}
}

func BenchmarkCreatePlan1000Nodes6Services(b *testing.B) {
	req := benchCreate()
	b.ReportAllocs()
	var plan *Plan
	for b.Loop() {
		var err error
		if plan, err = Build(req); err != nil {
			b.Fatal(err)
		}
	}
	work, joins, edges := plan.Counts()
	stages, err := plan.Stages()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(work), "tasks")
	b.ReportMetric(float64(joins), "joins")
	b.ReportMetric(float64(edges), "edges")
	b.ReportMetric(float64(len(stages)), "coopr-stages")
	for _, e := range []struct {
		name string
		est  Estimator
	}{{"", estimates}, {"jitter-", jittered(estimates)}} {
		cp, err := plan.CriticalPath(e.est)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(cp.Length.Seconds(), e.name+"critical-s")
		b.ReportMetric(plan.StageMakespan(stages, e.est).Seconds(), e.name+"staged-s")
	}
}

func BenchmarkStagesAndCriticalPath1000Nodes(b *testing.B) {
	plan, err := Build(benchCreate())
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := plan.Stages(); err != nil {
			b.Fatal(err)
		}
		if _, err := plan.CriticalPath(estimates); err != nil {
			b.Fatal(err)
		}
	}
}
