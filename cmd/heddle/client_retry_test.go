package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/client"
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

// TestRateLimitWaitIsAnnounced: a 429 with a Retry-After makes the CLI say
// on stderr, once, what it waits for and how long, and then it carries on;
// stdout holds only the answer.
func TestRateLimitWaitIsAnnounced(t *testing.T) {
	isolate(t)
	var calls atomic.Int32
	api := newFakeAPI(t)
	api.mux.HandleFunc("GET /v1/clusters", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if calls.Add(1) == 1 {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = w.Write([]byte(`{"error":{"status":429,"code":"rate_limited","message":"your tenant sent more than 5 requests per minute"}}`))
			return
		}
		_, _ = w.Write([]byte(emptyList))
	})
	r := runCLI(t, "", "--endpoint", api.URL, "--key", "hdl_k", "clusters", "list")
	require.Zero(t, r.code, "%+v", r)
	require.Equal(t, "no clusters\n", r.stdout)
	require.Equal(t, "heddle: waiting 1s for the rate limit (429 rate_limited) before sending GET /v1/clusters again (attempt 2; Ctrl-C stops)\n", r.stderr)
	require.Equal(t, int32(2), calls.Load())
}

// TestRetryNoticeCountsDownOnATerminal: on a terminal the line is rewritten
// in place as the wait runs down and ends with a newline; a cancelled
// context (Ctrl-C) ends the wait at once with its error.
func TestRetryNoticeCountsDownOnATerminal(t *testing.T) {
	t.Parallel()
	var out strings.Builder
	n := retryNotice{w: &out, tty: true, tick: time.Millisecond}
	rw := client.RetryWait{Method: http.MethodPost, Path: "/v1/clusters", Attempt: 1, Delay: 50 * time.Millisecond,
		Err: client.ResponseError(http.StatusServiceUnavailable, nil)}
	require.NoError(t, n.pause(context.Background(), rw))
	got := out.String()
	require.True(t, strings.HasPrefix(got, "\r\x1b[Kheddle: waiting 0s for the server, which answered 503 before sending POST /v1/clusters again (attempt 2; Ctrl-C stops)"), "%q", got)
	require.Greater(t, strings.Count(got, "\r\x1b[K"), 1, "the line is rewritten as the wait runs down: %q", got)
	require.True(t, strings.HasSuffix(got, "\n"), "%q", got)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	out.Reset()
	rw.Delay = time.Hour
	require.ErrorIs(t, n.pause(ctx, rw), context.Canceled)
	require.Contains(t, out.String(), "waiting 1h00m for the server")
}

// TestCancelStopsARateLimitWait: a request waiting out an hour-long
// Retry-After ends when its context does, with the 429.
func TestCancelStopsARateLimitWait(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "60")
		w.WriteHeader(http.StatusTooManyRequests)
	}))
	t.Cleanup(srv.Close)
	c := NewClient(srv.URL, "k")
	var errOut strings.Builder
	ctx, cancel := context.WithCancel(context.Background())
	announced := make(chan struct{})
	c.Pause = func(ctx context.Context, w client.RetryWait) error {
		close(announced)
		return retryNotice{w: &errOut, tick: time.Second}.pause(ctx, w)
	}
	done := make(chan error, 1)
	go func() {
		_, err := c.Do(ctx, http.MethodGet, "/v1/me", nil, nil, "")
		done <- err
	}()
	<-announced
	cancel()
	err := <-done
	var ae *APIError
	require.ErrorAs(t, err, &ae)
	require.Equal(t, http.StatusTooManyRequests, ae.Status)
}

// TestUnauthorizedSaysHowToGiveAKey: a 401 names the CLI's ways to a key
// (HEDDLE_KEY, heddle config, heddle login), not the HTTP header; a
// token's own reason is kept.
func TestUnauthorizedSaysHowToGiveAKey(t *testing.T) {
	isolate(t)
	api := newFakeAPI(t)
	api.reply("GET /v1/clusters", http.StatusUnauthorized, `{"error":{"status":401,"code":"unauthorized","message":"send a valid API key as `+"`Authorization: Bearer hdl_...`"+`"}}`)
	api.reply("GET /v1/me", http.StatusUnauthorized, `{"error":{"status":401,"code":"unauthorized","message":"the token has expired; sign in again"}}`)
	r := runCLI(t, "", "--endpoint", api.URL, "--key", "hdl_wrong", "clusters", "list")
	require.Equal(t, 1, r.code)
	require.NotContains(t, r.stderr, "Authorization")
	for _, want := range []string{"did not accept the key (401)", "HEDDLE_KEY", "heddle config set key", "heddle login"} {
		require.Contains(t, r.stderr, want)
	}
	c := NewClient(api.URL, "hdl_expired")
	_, err := c.Do(context.Background(), http.MethodGet, "/v1/me", nil, nil, "")
	var ae *APIError
	require.ErrorAs(t, err, &ae)
	var out strings.Builder
	writeUnauthorized(&out, ae)
	require.Contains(t, out.String(), "(401): the token has expired; sign in again\n")
	require.Contains(t, out.String(), "heddle login")
}
