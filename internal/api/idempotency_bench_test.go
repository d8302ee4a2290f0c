package api

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/idempotency"
	"github.com/heddle-io/heddle/internal/store"
)

// BenchmarkCreateIdempotencyKey times POST /v1/clusters of a 3-node
// cluster of the example catalog without and with an Idempotency-Key, on
// each store, and reports the store writes per request: what a key costs
// on the hot path (a claim, one item more in the job's first
// transaction, the stored answer).
func BenchmarkCreateIdempotencyKey(b *testing.B) {
	benchStores(b, func(b *testing.B, db store.Store) {
		bundle := serveBundle(b, db, nil)
		key := bundle.createTenant(b, "acme")
		status, body := bundle.do(b, bundle.rootKey, http.MethodPut, "/v1/tenants/acme", map[string]any{"workers": 4, "maxClusters": 100000, "maxNodes": 1000000})
		require.Equal(b, http.StatusOK, status, "%v", body)
		bundle.importExample(b, key)
		n := 0
		for _, withKey := range []bool{false, true} {
			name := "no-key"
			if withKey {
				name = "key"
			}
			b.Run(name, func(b *testing.B) {
				timed(b, db, http.StatusAccepted, func(int) *http.Response {
					n++
					req := map[string]any{"name": fmt.Sprint("c", n), "template": "web", "size": 3}
					if withKey {
						return bundle.raw(b, key, http.MethodPost, "/v1/clusters", req, idempotency.Header, fmt.Sprint("k", n))
					}
					return bundle.raw(b, key, http.MethodPost, "/v1/clusters", req)
				})
			})
		}
	})
}
