package assemble

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/cluster"
	"github.com/heddle-io/heddle/internal/store"
)

// countingStore counts what reaches the store.
type countingStore struct {
	store.Store
	reads, writes atomic.Int64
}

func (s *countingStore) Get(ctx context.Context, k store.Key) (store.Item, error) {
	s.reads.Add(1)
	return s.Store.Get(ctx, k)
}

func (s *countingStore) Query(ctx context.Context, pk string, q store.Query) (store.Page, error) {
	s.reads.Add(1)
	return s.Store.Query(ctx, pk, q)
}

func (s *countingStore) QueryIndex(ctx context.Context, partition string, q store.IndexQuery) (store.Page, error) {
	s.reads.Add(1)
	return s.Store.QueryIndex(ctx, partition, q)
}

func (s *countingStore) Write(ctx context.Context, op store.Op) (store.Item, error) {
	s.writes.Add(1)
	return s.Store.Write(ctx, op)
}

func (s *countingStore) Transact(ctx context.Context, ops []store.Op) error {
	s.writes.Add(1)
	return s.Store.Transact(ctx, ops)
}

// BenchmarkIdleAutoscalePass prints what evaluating an idle policy costs
// the store: a pass over clusters whose policies are all due and decide
// nothing, less a pass over the same clusters with none due (the rest of
// the janitor's work), per cluster.
func BenchmarkIdleAutoscalePass(b *testing.B) {
	const clusters = 10
	counting := &countingStore{}
	s := newScaler(b, 100, func(p Parts) Parts {
		counting.Store = p.Store
		p.Store = counting
		return p
	})
	ctx := context.Background()
	var ids []string
	for i := range clusters {
		res, err := s.svc.Clusters.Create(ctx, s.who, cluster.CreateRequest{Name: fmt.Sprintf("idle%d", i), Template: "elastic", Size: 1}, false)
		require.NoError(b, err)
		ids = append(ids, res.Cluster.ID)
		s.work(res.Cluster.ID)
	}
	// One evaluation each first, so every item is in its steady state.
	s.pass(ids[0], -1, time.Minute+time.Second)
	var dueReads, dueWrites, idleReads, idleWrites int64
	b.ResetTimer()
	for range b.N {
		s.clock.Add(time.Minute + time.Second)
		r0, w0 := counting.reads.Load(), counting.writes.Load()
		rep, err := s.svc.Engine.RunJanitor(ctx)
		require.NoError(b, err)
		require.Equal(b, clusters, rep.AutoscaleEvaluations)
		require.Zero(b, rep.AutoscaleJobs)
		r1, w1 := counting.reads.Load(), counting.writes.Load()
		rep, err = s.svc.Engine.RunJanitor(ctx)
		require.NoError(b, err)
		require.Zero(b, rep.AutoscaleEvaluations)
		r2, w2 := counting.reads.Load(), counting.writes.Load()
		dueReads, dueWrites = dueReads+r1-r0, dueWrites+w1-w0
		idleReads, idleWrites = idleReads+r2-r1, idleWrites+w2-w1
	}
	n := float64(b.N * clusters)
	b.ReportMetric(float64(dueReads-idleReads)/n, "reads/cluster/pass")
	b.ReportMetric(float64(dueWrites-idleWrites)/n, "writes/cluster/pass")
	b.ReportMetric(float64(idleReads)/float64(b.N), "reads/pass-without-due")
}
