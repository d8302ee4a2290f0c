package api

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/access"
	"github.com/heddle-io/heddle/internal/catalog"
	"github.com/heddle-io/heddle/internal/ratelimit"
	"github.com/heddle-io/heddle/internal/store"
	"github.com/heddle-io/heddle/internal/store/boltstore"
	"github.com/heddle-io/heddle/internal/store/dynamotest"
)

// testClock is a settable clock for Throttle.Now.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// throttledBundle serves the API over db with limiter, a limit of 5
// requests per minute per tenant and 3 failed authentications per minute
// per source, on a clock the test moves.
func throttledBundle(t testing.TB, db store.Store, limiter ratelimit.Limiter) (*testBundle, *testClock) {
	t.Helper()
	clock := &testClock{now: time.Date(2026, 1, 1, 10, 0, 5, 0, time.UTC)}
	acc := access.New(db)
	root, err := acc.Bootstrap(context.Background(), "")
	require.NoError(t, err)
	s := New(Config{Catalog: catalog.New(db, nil), Access: acc, Backend: "bolt", Version: "test", Logger: testLogger(t),
		Throttle: &Throttle{Limiter: limiter, PerTenant: ratelimit.Limit{Requests: 5, Window: time.Minute},
			AuthFailures: ratelimit.Limit{Requests: 3, Window: time.Minute}, Now: clock.Now}})
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	b := &testBundle{srv: srv, api: s, rootKey: root}
	return b, clock
}

func throttleBackends(t *testing.T) map[string]func(t *testing.T) (store.Store, ratelimit.Limiter) {
	bolt := func(t *testing.T) store.Store {
		db, err := boltstore.Open(filepath.Join(t.TempDir(), "heddle.db"), boltstore.Options{NoSync: true})
		require.NoError(t, err)
		t.Cleanup(func() { _ = db.Close() })
		return db
	}
	return map[string]func(t *testing.T) (store.Store, ratelimit.Limiter){
		"memory": func(t *testing.T) (store.Store, ratelimit.Limiter) { return bolt(t), ratelimit.NewMemory() },
		"stored-bolt": func(t *testing.T) (store.Store, ratelimit.Limiter) {
			db := bolt(t)
			return db, NewStoredLimiter(db)
		},
		"stored-dynamodb": func(t *testing.T) (store.Store, ratelimit.Limiter) {
			db := dynamoTable(t)
			return db, NewStoredLimiter(db)
		},
	}
}

func dynamoTable(t testing.TB) store.Store {
	return dynamotest.Store(t, "heddle-throttle")
}

func TestTenantOverItsLimitIsAnswered429(t *testing.T) {
	t.Parallel()
	for name, mk := range throttleBackends(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			db, limiter := mk(t)
			b, clock := throttledBundle(t, db, limiter)
			// The superadmin's own tenant counts too: two creations.
			acme := b.createTenant(t, "acme")
			globex := b.createTenant(t, "globex")

			for i := 1; i <= 5; i++ {
				resp := b.raw(t, acme, http.MethodGet, "/v1/me", nil)
				resp.Body.Close()
				require.Equal(t, http.StatusOK, resp.StatusCode, "request %d", i)
				require.Equal(t, "5", resp.Header.Get("RateLimit-Limit"))
				require.Equal(t, strconv.Itoa(5-i), resp.Header.Get("RateLimit-Remaining"))
				require.Equal(t, "55", resp.Header.Get("RateLimit-Reset"))
			}
			resp := b.raw(t, acme, http.MethodGet, "/v1/me", nil)
			resp.Body.Close()
			require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
			require.Equal(t, "55", resp.Header.Get("Retry-After"))
			status, body := b.do(t, acme, http.MethodPut, "/v1/services/zk", map[string]any{"name": "zk"})
			require.Equal(t, http.StatusTooManyRequests, status)
			e := body["error"].(map[string]any)
			require.Equal(t, CodeRateLimited, e["code"])
			require.Contains(t, e["message"], "more than 5 requests per minute")
			require.NotEmpty(t, e["requestId"])

			// A tenant below its limit is not touched by its neighbour's.
			resp = b.raw(t, globex, http.MethodGet, "/v1/me", nil)
			resp.Body.Close()
			require.Equal(t, http.StatusOK, resp.StatusCode)
			require.Equal(t, "4", resp.Header.Get("RateLimit-Remaining"))

			// Public routes are not counted.
			resp = b.raw(t, "", http.MethodGet, "/v1/status", nil)
			resp.Body.Close()
			require.Equal(t, http.StatusOK, resp.StatusCode)

			clock.Advance(time.Minute)
			resp = b.raw(t, acme, http.MethodGet, "/v1/me", nil)
			resp.Body.Close()
			require.Equal(t, http.StatusOK, resp.StatusCode, "the next window serves the tenant again")
		})
	}
}

func TestFailedAuthenticationsAreSlowedPerSource(t *testing.T) {
	t.Parallel()
	for name, mk := range throttleBackends(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			db, limiter := mk(t)
			b, clock := throttledBundle(t, db, limiter)
			acme := b.createTenant(t, "acme")
			guess := access.NewKeySecret()
			for i := 1; i <= 3; i++ {
				status, body := b.do(t, guess, http.MethodGet, "/v1/me", nil)
				require.Equal(t, http.StatusUnauthorized, status, "guess %d", i)
				require.Equal(t, CodeUnauthorized, body["error"].(map[string]any)["code"])
			}
			resp := b.raw(t, guess, http.MethodGet, "/v1/me", nil)
			resp.Body.Close()
			require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
			require.Equal(t, "55", resp.Header.Get("Retry-After"))

			// Refused before the key is looked at: a right guess now is
			// no use to the guesser (and its owner on the same address
			// waits out the window too).
			status, body := b.do(t, acme, http.MethodGet, "/v1/me", nil)
			require.Equal(t, http.StatusTooManyRequests, status)
			require.Contains(t, body["error"].(map[string]any)["message"], "too many failed authentications")

			clock.Advance(time.Minute)
			status, _ = b.do(t, acme, http.MethodGet, "/v1/me", nil)
			require.Equal(t, http.StatusOK, status)
		})
	}
}

// TestStoredLimitHoldsAcrossInstances: two API instances over one table
// (two Lambda execution environments) share a tenant's count.
func TestStoredLimitHoldsAcrossInstances(t *testing.T) {
	t.Parallel()
	db, err := boltstore.Open(filepath.Join(t.TempDir(), "heddle.db"), boltstore.Options{NoSync: true})
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	one, _ := throttledBundle(t, db, NewStoredLimiter(db))
	acme := one.createTenant(t, "acme")
	two, _ := throttledBundle(t, db, NewStoredLimiter(db))
	served := 0
	for i := range 10 {
		b := one
		if i%2 == 1 {
			b = two
		}
		resp := b.raw(t, acme, http.MethodGet, "/v1/me", nil)
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			served++
		}
	}
	require.Equal(t, 5, served)
}

// TestThrottleLeavesNothingBehind: a deleted tenant's request count goes
// with it, and the counts of failed authentications carry the expiry
// (store.CounterExpires) by which DynamoDB's time to live removes the items
// of sources that stop coming: a window after their window ends.
func TestThrottleLeavesNothingBehind(t *testing.T) {
	t.Parallel()
	for name, mk := range throttleBackends(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			db, limiter := mk(t)
			b, clock := throttledBundle(t, db, limiter)
			acme := b.createTenant(t, "acme")
			status, _ := b.do(t, acme, http.MethodGet, "/v1/me", nil)
			require.Equal(t, http.StatusOK, status)
			status, _ = b.do(t, access.NewKeySecret(), http.MethodGet, "/v1/me", nil)
			require.Equal(t, http.StatusUnauthorized, status)
			stored := name != "memory"
			if stored {
				_, err := db.Get(t.Context(), limiterItem(tenantLimitKind+":acme"))
				require.NoError(t, err, "acme's requests are counted")
				failures, err := db.Get(t.Context(), limiterItem(sourceLimitKind+":127.0.0.1"))
				require.NoError(t, err)
				// The clock is at 10:00:05: the window ends at 10:01, the
				// item may go a window later.
				want := time.Date(2026, 1, 1, 10, 2, 0, 0, time.UTC).Unix() + 1
				require.Equal(t, want, failures.Counter(store.CounterExpires))
			}

			status, _ = b.do(t, b.rootKey, http.MethodDelete, "/v1/tenants/acme", nil)
			require.Equal(t, http.StatusNoContent, status)
			if stored {
				_, err := db.Get(t.Context(), limiterItem(tenantLimitKind+":acme"))
				require.ErrorIs(t, err, store.ErrNotFound, "the deleted tenant's count went with it")
			}
			// A tenant made again under the id starts with a whole window.
			clock.Advance(time.Second)
			acme = b.createTenant(t, "acme")
			resp := b.raw(t, acme, http.MethodGet, "/v1/me", nil)
			resp.Body.Close()
			require.Equal(t, http.StatusOK, resp.StatusCode)
			require.Equal(t, "4", resp.Header.Get("RateLimit-Remaining"))
		})
	}
}
