package queuetest

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heddle-io/heddle/internal/queue"
)

// benchGroups is how many groups the benchmarks spread messages over: one
// per node of a large cluster, so groups are never what limits throughput.
const benchGroups = 1000

func benchMessages(n int) []queue.Message {
	msgs := make([]queue.Message, n)
	for i := range msgs {
		msgs[i] = queue.Message{
			TaskID:  fmt.Sprintf("task-%d", i),
			Attempt: 1,
			Group:   fmt.Sprintf("c1#n%d", i%benchGroups),
			Dedup:   fmt.Sprintf("task-%d#1#0", i),
		}
	}
	return msgs
}

// Benchmark measures a backend's throughput; one op is one message sent,
// received and acknowledged, and each benchmark reports msgs/s.
//
//   - SendReceiveAck: one goroutine sends a batch of ten, receives them (up
//     to ten per Receive) and acks each: the cost of the queue itself.
//   - Workers=N: one sender sends in batches of ten while N workers each
//     long-poll one message at a time and ack it, the engine's worker pool.
func Benchmark(b *testing.B, newBackend NewBackend) {
	b.Run("SendReceiveAck", func(b *testing.B) {
		be := newBackend(b)
		ctx := context.Background()
		tenant := benchTenant(b, be)
		msgs := benchMessages(b.N + queue.MaxBatch)
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i += queue.MaxBatch {
			batch := msgs[i : i+queue.MaxBatch]
			if err := be.Queue.Send(ctx, tenant, batch...); err != nil {
				b.Fatal(err)
			}
			for got := 0; got < len(batch); {
				ds, err := be.Queue.Receive(ctx, tenant, queue.MaxBatch, time.Second, time.Minute)
				if err != nil {
					b.Fatal(err)
				}
				got += len(ds)
				for _, d := range ds {
					if err := be.Queue.Ack(ctx, tenant, d.Receipt); err != nil {
						b.Fatal(err)
					}
				}
			}
		}
		b.StopTimer()
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
	})
	for _, workers := range []int{1, 4, 16} {
		b.Run(fmt.Sprintf("Workers=%d", workers), func(b *testing.B) {
			be := newBackend(b)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			tenant := benchTenant(b, be)
			msgs := benchMessages(b.N)
			var acked atomic.Int64
			var wg sync.WaitGroup
			b.ReportAllocs()
			b.ResetTimer()
			for range workers {
				wg.Go(func() {
					for acked.Load() < int64(b.N) {
						ds, err := be.Queue.Receive(ctx, tenant, 1, time.Second, time.Minute)
						if err != nil {
							if ctx.Err() == nil {
								b.Error(err)
							}
							return
						}
						for _, d := range ds {
							if err := be.Queue.Ack(ctx, tenant, d.Receipt); err != nil {
								b.Error(err)
								return
							}
							if acked.Add(1) == int64(b.N) {
								cancel() // release the workers still polling
							}
						}
					}
				})
			}
			for i := 0; i < len(msgs); i += queue.MaxBatch {
				if err := be.Queue.Send(ctx, tenant, msgs[i:min(i+queue.MaxBatch, len(msgs))]...); err != nil {
					b.Fatal(err)
				}
			}
			wg.Wait()
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
		})
	}
}

func benchTenant(b *testing.B, be Backend) string {
	b.Helper()
	const tenant = "bench"
	if err := be.Provisioner.CreateTenantQueue(context.Background(), tenant); err != nil {
		b.Fatal(err)
	}
	return tenant
}
