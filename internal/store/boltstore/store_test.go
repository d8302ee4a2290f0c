package boltstore_test

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/store"
	"github.com/heddle-io/heddle/internal/store/boltstore"
	"github.com/heddle-io/heddle/internal/store/storetest"
)

func setup(tb testing.TB) (*boltstore.Store, string) {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "heddle.db")
	s, err := boltstore.Open(path, boltstore.Options{})
	require.NoError(tb, err)
	tb.Cleanup(func() { require.NoError(tb, s.Close()) })
	return s, path
}

func TestConformance(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) store.Store {
		s, _ := setup(t)
		return s
	})
}

func TestDurableAcrossReopen(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "heddle.db")
	s, err := boltstore.Open(path, boltstore.Options{})
	require.NoError(t, err)
	k := store.Key{PK: "CLUSTER#c", SK: "META"}
	_, err = s.Write(t.Context(), store.Put(store.Item{Key: k, Status: "ACTIVE", Index: &store.IndexKey{Partition: "LEASE", Sort: "1"}}, store.Condition{}))
	require.NoError(t, err)
	_, err = s.Write(t.Context(), store.Update(k, store.Condition{Version: 1}, store.Changes{Add: map[string]int64{"nodes": 3}}))
	require.NoError(t, err)
	require.NoError(t, s.Close())
	require.NoError(t, s.Close(), "closing twice is harmless")

	_, err = s.Get(t.Context(), k)
	require.ErrorIs(t, err, boltstore.ErrClosed)
	_, err = s.Write(t.Context(), store.Delete(k, store.Condition{}))
	require.ErrorIs(t, err, boltstore.ErrClosed)

	s, err = boltstore.Open(path, boltstore.Options{})
	require.NoError(t, err)
	defer s.Close()
	it, err := s.Get(t.Context(), k)
	require.NoError(t, err)
	require.Equal(t, store.Item{Key: k, Version: 2, Status: "ACTIVE", Counters: map[string]int64{"nodes": 3}, Index: &store.IndexKey{Partition: "LEASE", Sort: "1"}}, it)
	p, err := s.QueryIndex(t.Context(), "LEASE", store.IndexQuery{})
	require.NoError(t, err)
	require.Equal(t, []store.Item{it}, p.Items)
}

func TestSecondOpenTimesOut(t *testing.T) {
	t.Parallel()
	_, path := setup(t)
	_, err := boltstore.Open(path, boltstore.Options{LockTimeout: 50 * time.Millisecond})
	require.Error(t, err, "the file is locked by the first store")
}

// TestCloseWhileWriting checks that Close lets queued writes finish and that
// every write either committed or reports ErrClosed.
func TestCloseWhileWriting(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "heddle.db")
	s, err := boltstore.Open(path, boltstore.Options{})
	require.NoError(t, err)
	const writers = 16
	var wg sync.WaitGroup
	committed := make([]int, writers)
	for w := range writers {
		wg.Go(func() {
			k := store.Key{PK: "close", SK: string(rune('a' + w))}
			for {
				_, err := s.Write(t.Context(), store.Update(k, store.Condition{}, store.Changes{Add: map[string]int64{"n": 1}}))
				if err != nil {
					require.ErrorIs(t, err, boltstore.ErrClosed)
					return
				}
				committed[w]++
			}
		})
	}
	for {
		p, err := s.Query(t.Context(), "close", store.Query{})
		require.NoError(t, err)
		if len(p.Items) == writers {
			break
		}
	}
	require.NoError(t, s.Close())
	wg.Wait()

	s, err = boltstore.Open(path, boltstore.Options{})
	require.NoError(t, err)
	defer s.Close()
	for w := range writers {
		it, err := s.Get(t.Context(), store.Key{PK: "close", SK: string(rune('a' + w))})
		require.NoError(t, err)
		require.Equal(t, int64(committed[w]), it.Counter("n"), "writer %d", w)
	}
}

func TestCanceledContextWritesNothing(t *testing.T) {
	t.Parallel()
	s, _ := setup(t)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	k := store.Key{PK: "ctx", SK: "k"}
	_, err := s.Write(ctx, store.Put(store.Item{Key: k}, store.Condition{}))
	require.ErrorIs(t, err, ctx.Err())
	require.ErrorIs(t, s.Transact(ctx, []store.Op{store.Put(store.Item{Key: k}, store.Condition{})}), ctx.Err())
	_, err = s.Get(t.Context(), k)
	require.ErrorIs(t, err, store.ErrNotFound)
}

func BenchmarkVersionedUpdates(b *testing.B) {
	storetest.Benchmark(b, func(b *testing.B) store.Store {
		s, _ := setup(b)
		return s
	})
}
