package storetest

import (
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/heddle-io/heddle/internal/store"
)

// Benchmark measures versioned updates: each operation is one Update
// conditioned on the item's current version that rewrites a small body and
// adds to a counter, the shape of the engine's claim and complete writes.
// It reports ops/s alongside ns/op.
//
//   - serial: one writer, one item; each write's result gives the next
//     version, so there are no reads.
//   - parallel: many writers (8 per GOMAXPROCS), each on its own item; shows
//     what group commit or the service sustains for independent work.
//   - contended: the same writers on one item, reading back the current item
//     from the ConditionError when they lose; ops counts successful updates.
//
// newStore is called once per sub-benchmark run and must clean up after b.
func Benchmark(b *testing.B, newStore func(b *testing.B) store.Store) {
	body := []byte(`{"status":"RUNNING","attempt":1,"worker":"w-0123456789"}`)
	update := func(k store.Key, version int64) store.Op {
		return store.Update(k, store.Condition{Version: version}, store.Changes{Data: body, Add: map[string]int64{"n": 1}})
	}
	opsPerSecond := func(b *testing.B, ops int64) {
		b.ReportMetric(float64(ops)/b.Elapsed().Seconds(), "ops/s")
	}

	b.Run("serial", func(b *testing.B) {
		s := newStore(b)
		k := key("bench", "serial")
		cur, err := s.Write(b.Context(), store.Put(store.Item{Key: k}, store.Condition{}))
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if cur, err = s.Write(b.Context(), update(k, cur.Version)); err != nil {
				b.Fatal(err)
			}
		}
		opsPerSecond(b, int64(b.N))
	})

	b.Run("parallel", func(b *testing.B) {
		s := newStore(b)
		var next atomic.Int64
		b.ReportAllocs()
		b.SetParallelism(8)
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			k := key("bench", "parallel#"+strconv.FormatInt(next.Add(1), 10))
			cur, err := s.Write(b.Context(), store.Put(store.Item{Key: k}, store.Condition{}))
			if err != nil {
				b.Error(err)
				return
			}
			for pb.Next() {
				if cur, err = s.Write(b.Context(), update(k, cur.Version)); err != nil {
					b.Error(err)
					return
				}
			}
		})
		opsPerSecond(b, int64(b.N))
	})

	b.Run("contended", func(b *testing.B) {
		s := newStore(b)
		k := key("bench", "contended")
		if _, err := s.Write(b.Context(), store.Put(store.Item{Key: k}, store.Condition{})); err != nil {
			b.Fatal(err)
		}
		var conflicts atomic.Int64
		b.ReportAllocs()
		b.SetParallelism(8)
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			cur, err := s.Get(b.Context(), k)
			if err != nil {
				b.Error(err)
				return
			}
			for pb.Next() {
				for {
					written, err := s.Write(b.Context(), update(k, cur.Version))
					var ce *store.ConditionError
					if errors.As(err, &ce) && ce.Current != nil {
						conflicts.Add(1)
						cur = *ce.Current
						continue
					}
					if err != nil {
						b.Error(fmt.Errorf("contended update: %w", err))
						return
					}
					cur = written
					break
				}
			}
		})
		opsPerSecond(b, int64(b.N))
		b.ReportMetric(float64(conflicts.Load())/float64(b.N), "conflicts/op")
	})
}
