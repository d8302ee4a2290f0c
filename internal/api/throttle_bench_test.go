package api

import (
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/ratelimit"
	"github.com/heddle-io/heddle/internal/store"
	"github.com/heddle-io/heddle/internal/store/boltstore"
)

// BenchmarkTenantAtItsLimit prints what two tenants see in one window of a
// 5-per-minute limit: acme sends 20 requests (at its limit, then over it),
// globex 3 (below it). For each: how many were served and refused, and the
// median time of each kind of answer. It runs with the in-process limiter
// (the local server's) and the stored one on bbolt, and on DynamoDB Local
// when HEDDLE_DYNAMODB_ENDPOINT is set (the AWS deployment's), whose
// refusals cost the same one conditional update as a served request.
//
//	go test -run '^$' -bench TenantAtItsLimit -benchtime 1x ./internal/api/
func BenchmarkTenantAtItsLimit(b *testing.B) {
	backends := map[string]func(b *testing.B) (store.Store, ratelimit.Limiter){
		"memory": func(b *testing.B) (store.Store, ratelimit.Limiter) {
			db := benchBolt(b)
			return db, ratelimit.NewMemory()
		},
		"stored-bolt": func(b *testing.B) (store.Store, ratelimit.Limiter) {
			db := benchBolt(b)
			return db, NewStoredLimiter(db)
		},
		"stored-dynamodb": func(b *testing.B) (store.Store, ratelimit.Limiter) {
			db := dynamoTable(b)
			return db, NewStoredLimiter(db)
		},
	}
	for _, name := range []string{"memory", "stored-bolt", "stored-dynamodb"} {
		b.Run(name, func(b *testing.B) {
			db, limiter := backends[name](b)
			bundle, clock := throttledBundle(b, db, limiter)
			acme := bundle.createTenant(b, "acme")
			globex := bundle.createTenant(b, "globex")
			for b.Loop() {
				clock.Advance(time.Minute)
				type seen struct{ served, refused []time.Duration }
				var a, g seen
				send := func(key string, s *seen) {
					start := time.Now()
					resp := bundle.raw(b, key, http.MethodGet, "/v1/me", nil)
					resp.Body.Close()
					took := time.Since(start)
					switch resp.StatusCode {
					case http.StatusOK:
						s.served = append(s.served, took)
					case http.StatusTooManyRequests:
						require.NotEmpty(b, resp.Header.Get("Retry-After"))
						s.refused = append(s.refused, took)
					default:
						b.Fatalf("status %d", resp.StatusCode)
					}
				}
				for i := range 20 {
					send(acme, &a)
					if i%7 == 0 {
						send(globex, &g)
					}
				}
				fmt.Printf("%s: acme (20 sent, limit 5): %d served (median %v), %d refused 429 (median %v); globex (3 sent): %d served (median %v), %d refused\n",
					name, len(a.served), medianOf(a.served), len(a.refused), medianOf(a.refused), len(g.served), medianOf(g.served), len(g.refused))
				b.ReportMetric(float64(len(a.refused)), "acme-refused")
				b.ReportMetric(float64(len(g.refused)), "globex-refused")
				b.ReportMetric(float64(medianOf(a.refused).Microseconds()), "refused-median-µs")
				b.ReportMetric(float64(medianOf(g.served).Microseconds()), "below-served-median-µs")
			}
		})
	}
}

func benchBolt(b *testing.B) *boltstore.Store {
	db, err := boltstore.Open(filepath.Join(b.TempDir(), "heddle.db"), boltstore.Options{})
	require.NoError(b, err)
	b.Cleanup(func() { _ = db.Close() })
	return db
}

func medianOf(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
