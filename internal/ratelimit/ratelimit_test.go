package ratelimit_test

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/ratelimit"
	"github.com/heddle-io/heddle/internal/store"
	"github.com/heddle-io/heddle/internal/store/boltstore"
	"github.com/heddle-io/heddle/internal/store/dynamotest"
)

func keyOf(k string) store.Key { return store.Key{PK: "RATE#" + k, SK: "count"} }

// limiters are the Limiters under test, each fresh.
func limiters(t *testing.T) map[string]func(t *testing.T) ratelimit.Limiter {
	return map[string]func(t *testing.T) ratelimit.Limiter{
		"memory": func(*testing.T) ratelimit.Limiter { return ratelimit.NewMemory() },
		"stored-bolt": func(t *testing.T) ratelimit.Limiter {
			return ratelimit.NewStored(boltStore(t), keyOf)
		},
		"stored-dynamodb": func(t *testing.T) ratelimit.Limiter {
			return ratelimit.NewStored(dynamoStore(t), keyOf)
		},
	}
}

func boltStore(t *testing.T) *boltstore.Store {
	s, err := boltstore.Open(filepath.Join(t.TempDir(), "rate.db"), boltstore.Options{NoSync: true})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func dynamoStore(t *testing.T) store.Store {
	return dynamotest.Store(t, "heddle-rate")
}

func TestLimitPerWindow(t *testing.T) {
	t.Parallel()
	for name, mk := range limiters(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			l := mk(t)
			ctx := context.Background()
			lim := ratelimit.Limit{Requests: 3, Window: time.Minute}
			start := time.Date(2026, 1, 1, 10, 0, 10, 0, time.UTC)
			for i := 1; i <= 3; i++ {
				d, err := l.Take(ctx, "a", lim, start)
				require.NoError(t, err)
				require.True(t, d.Allowed, "request %d", i)
				require.Equal(t, 3-i, d.Remaining)
				require.Equal(t, 50*time.Second, d.RetryAfter)
			}
			d, err := l.Take(ctx, "a", lim, start.Add(20*time.Second))
			require.NoError(t, err)
			require.False(t, d.Allowed)
			require.Equal(t, 0, d.Remaining)
			require.Equal(t, 30*time.Second, d.RetryAfter)

			// Another key has its own count.
			d, err = l.Take(ctx, "b", lim, start)
			require.NoError(t, err)
			require.True(t, d.Allowed)

			// The next window starts afresh.
			d, err = l.Take(ctx, "a", lim, start.Add(time.Minute))
			require.NoError(t, err)
			require.True(t, d.Allowed)
			require.Equal(t, 2, d.Remaining)

			// An instance whose clock lags counts in the newer window
			// instead of rewinding it.
			d, err = l.Take(ctx, "a", lim, start.Add(20*time.Second))
			require.NoError(t, err)
			require.True(t, d.Allowed)
			require.Equal(t, 1, d.Remaining)

			d, err = l.Take(ctx, "a", ratelimit.Limit{}, start)
			require.NoError(t, err)
			require.True(t, d.Allowed, "the zero limit limits nothing")
		})
	}
}

// TestConcurrentTakesCountEachOnce: however many callers race (the API
// instances of a deployment), exactly the limit is allowed per window.
func TestConcurrentTakesCountEachOnce(t *testing.T) {
	t.Parallel()
	for name, mk := range limiters(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			l := mk(t)
			lim := ratelimit.Limit{Requests: 25, Window: time.Hour}
			now := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
			var (
				mu      sync.Mutex
				allowed int
				wg      sync.WaitGroup
			)
			for range 40 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					d, err := l.Take(context.Background(), "t", lim, now)
					if !ok(t, err) {
						return
					}
					mu.Lock()
					defer mu.Unlock()
					if d.Allowed {
						allowed++
					}
				}()
			}
			wg.Wait()
			require.Equal(t, 25, allowed)
		})
	}
}

func ok(t *testing.T, err error) bool {
	if err != nil {
		t.Error(err)
		return false
	}
	return true
}

// TestStoredCost pins what a limited request costs the store: one write in
// a window's steady state, two at its first request.
func TestStoredCost(t *testing.T) {
	t.Parallel()
	counting := store.NewCounting(boltStore(t))
	l := ratelimit.NewStored(counting, keyOf)
	lim := ratelimit.Limit{Requests: 100, Window: time.Minute}
	now := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	_, err := l.Take(context.Background(), "t", lim, now)
	require.NoError(t, err)
	require.Equal(t, int64(2), counting.Counts().Writes, "the window's first request: a failed add, then the start")
	counting.Reset()
	for range 10 {
		_, err := l.Take(context.Background(), "t", lim, now)
		require.NoError(t, err)
	}
	c := counting.Counts()
	require.Equal(t, int64(10), c.Writes)
	require.Equal(t, int64(0), c.Reads())
}

// TestForgetStartsOver: a forgotten key's count is gone, in every Limiter;
// forgetting a key never counted is no error.
func TestForgetStartsOver(t *testing.T) {
	t.Parallel()
	for name, mk := range limiters(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			l := mk(t)
			lim := ratelimit.Limit{Requests: 2, Window: time.Minute}
			now := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
			for range 3 {
				_, err := l.Take(t.Context(), "t", lim, now)
				require.NoError(t, err)
			}
			require.NoError(t, l.Forget(t.Context(), "t"))
			d, err := l.Take(t.Context(), "t", lim, now)
			require.NoError(t, err)
			require.True(t, d.Allowed, "counted afresh")
			require.Equal(t, 1, d.Remaining)
			require.NoError(t, l.Forget(t.Context(), "never"))
		})
	}
}

// TestStoredItemsExpire: a window's item carries store.CounterExpires, a
// window after the window's end, for DynamoDB's time to live.
func TestStoredItemsExpire(t *testing.T) {
	t.Parallel()
	s := boltStore(t)
	l := ratelimit.NewStored(s, keyOf)
	lim := ratelimit.Limit{Requests: 5, Window: time.Minute}
	now := time.Date(2026, 1, 1, 10, 0, 30, 0, time.UTC)
	_, err := l.Take(t.Context(), "src", lim, now)
	require.NoError(t, err)
	it, err := s.Get(t.Context(), keyOf("src"))
	require.NoError(t, err)
	require.Equal(t, time.Date(2026, 1, 1, 10, 2, 0, 0, time.UTC).Unix()+1, it.Counter(store.CounterExpires))
	// The next window's item is moved on with it.
	_, err = l.Take(t.Context(), "src", lim, now.Add(time.Minute))
	require.NoError(t, err)
	it, err = s.Get(t.Context(), keyOf("src"))
	require.NoError(t, err)
	require.Equal(t, time.Date(2026, 1, 1, 10, 3, 0, 0, time.UTC).Unix()+1, it.Counter(store.CounterExpires))
}
