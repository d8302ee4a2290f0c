package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestClientWaitsOutRateLimits: a GET refused with 429 is sent again after
// Retry-After; a POST is not (it may have been counted, and the caller
// decides), unless it carries an Idempotency-Key (a create or start
// request): then it is sent again with the same key.
func TestClientWaitsOutRateLimits(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	var mu sync.Mutex
	var keys []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		keys = append(keys, r.Header.Get("Idempotency-Key"))
		mu.Unlock()
		if calls.Add(1) == 1 || r.Method == http.MethodPost {
			w.Header().Set("Retry-After", "1")
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = w.Write([]byte(`{"error":{"status":429,"code":"rate_limited","message":"your tenant sent more than 5 requests per minute"}}`))
			return
		}
		_, _ = w.Write([]byte(`{}`))
	}))
	t.Cleanup(srv.Close)
	c := NewClient(srv.URL, "k")
	_, err := c.Do(context.Background(), http.MethodGet, "/v1/me", nil, nil, "")
	require.NoError(t, err)
	require.Equal(t, int32(2), calls.Load())

	_, err = c.Do(context.Background(), http.MethodPost, "/v1/users", nil, []byte(`{}`), "application/json")
	var ae *APIError
	require.ErrorAs(t, err, &ae)
	require.Equal(t, "rate_limited", ae.Code)
	require.Equal(t, int32(3), calls.Load())

	c.Retries = 1
	_, err = c.Do(context.Background(), http.MethodPost, "/v1/clusters", nil, []byte(`{}`), "application/json")
	require.ErrorAs(t, err, &ae)
	require.Equal(t, "rate_limited", ae.Code)
	require.Equal(t, int32(5), calls.Load(), "sent again once, with its key")
	mu.Lock()
	defer mu.Unlock()
	require.Empty(t, keys[2], "a POST that creates no cluster carries no key")
	require.NotEmpty(t, keys[3])
	require.Equal(t, keys[3], keys[4])
}
