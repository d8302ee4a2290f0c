package client_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/client"
	"github.com/heddle-io/heddle/internal/idempotency"
)

// flaky serves POST /v1/clusters: it answers the first failures attempts
// with fail (or drops the connection when fail is 0), then 202. It records
// the Idempotency-Key of every attempt.
type flaky struct {
	mu       sync.Mutex
	keys     []string
	failures int
	fail     int
}

func (f *flaky) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.keys = append(f.keys, r.Header.Get(idempotency.Header))
	n := len(f.keys)
	f.mu.Unlock()
	if n <= f.failures {
		if f.fail == 0 {
			panic(http.ErrAbortHandler) // the connection drops, no answer
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(f.fail)
		_, _ = w.Write([]byte(`{"error":{"status":` + strconv.Itoa(f.fail) + `,"code":"internal","message":"down"}}`))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusAccepted)
	_, _ = w.Write([]byte(`{"cluster":{"id":"c1","name":"web1"},"job":{"id":"j1"}}`))
}

func (f *flaky) seen() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.keys...)
}

func flakyClient(t *testing.T, f *flaky) *client.Client {
	t.Helper()
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	c := client.New(srv.URL, "hdl_test")
	c.HTTP = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone(), Timeout: 10 * time.Second}
	c.RetryBackoff = time.Millisecond
	return c
}

func TestCreateIsResentWithTheSameKey(t *testing.T) {
	t.Parallel()
	for name, fail := range map[string]int{"503": http.StatusServiceUnavailable, "502": http.StatusBadGateway, "dropped": 0} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := &flaky{failures: 2, fail: fail}
			res, err := flakyClient(t, f).CreateCluster(ctx(t), client.CreateRequest{Name: "web1", Template: "web", Size: 3}, client.Mutate{})
			require.NoError(t, err)
			require.Equal(t, "c1", res.Cluster.ID)
			keys := f.seen()
			require.Len(t, keys, 3)
			require.NotEmpty(t, keys[0])
			_, err = idempotency.ParseKey([]string{keys[0]})
			require.NoError(t, err, "the client's key is one the server accepts")
			require.Equal(t, keys[0], keys[1])
			require.Equal(t, keys[0], keys[2])
		})
	}
}

func TestResendsEndAfterRetries(t *testing.T) {
	t.Parallel()
	f := &flaky{failures: 100, fail: http.StatusInternalServerError}
	c := flakyClient(t, f)
	c.Retries = 2
	_, err := c.CreateCluster(ctx(t), client.CreateRequest{Name: "web1", Template: "web", Size: 3}, client.Mutate{})
	var apiErr *client.Error
	require.True(t, errors.As(err, &apiErr), "%v", err)
	require.Equal(t, http.StatusInternalServerError, apiErr.Status)
	require.Len(t, f.seen(), 3, "the first attempt and two resends")
}

func TestChosenKeyAndNoKeys(t *testing.T) {
	t.Parallel()
	f := &flaky{failures: 1, fail: http.StatusServiceUnavailable}
	c := flakyClient(t, f)
	_, err := c.CreateCluster(client.WithIdempotencyKey(ctx(t), "tf-run-42"), client.CreateRequest{Name: "web1", Template: "web", Size: 3}, client.Mutate{})
	require.NoError(t, err)
	require.Equal(t, []string{"tf-run-42", "tf-run-42"}, f.seen())

	// Without keys, a create is never resent: the server may have made it.
	g := &flaky{failures: 1, fail: http.StatusServiceUnavailable}
	c = flakyClient(t, g)
	c.NoIdempotencyKeys = true
	_, err = c.CreateCluster(ctx(t), client.CreateRequest{Name: "web1", Template: "web", Size: 3}, client.Mutate{})
	require.Error(t, err)
	require.Equal(t, []string{""}, g.seen())
}

func TestReadsCarryNoKey(t *testing.T) {
	t.Parallel()
	var got []string
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Method+" "+r.URL.Path+" key="+r.Header.Get(idempotency.Header))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"id":"c1"}`))
	}))
	t.Cleanup(srv.Close)
	c := client.New(srv.URL, "hdl_test")
	c.HTTP = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	_, err := c.GetCluster(context.Background(), "c1")
	require.NoError(t, err)
	_, err = c.ExtendLease(context.Background(), "c1", client.ExtendRequest{})
	require.NoError(t, err)
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, "GET /v1/clusters/c1 key=", got[0])
	require.Regexp(t, `^POST /v1/clusters/c1/lease key=[0-9a-f]{32}$`, got[1])
}

// TestPauseIsToldWhatEachResendWaitsFor: a program that sets Pause sees
// every pause before a resend, with the server's Retry-After, the attempt
// and why; it waits in the client's place.
func TestPauseIsToldWhatEachResendWaitsFor(t *testing.T) {
	t.Parallel()
	f := &flaky{failures: 2, fail: http.StatusServiceUnavailable}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	c := client.New(srv.URL, "k")
	var waits []client.RetryWait
	c.Pause = func(_ context.Context, w client.RetryWait) error {
		waits = append(waits, w)
		return nil
	}
	_, err := c.Do(context.Background(), http.MethodPost, "/v1/clusters", nil, []byte(`{}`), "application/json")
	require.NoError(t, err)
	require.Len(t, waits, 2)
	for i, w := range waits {
		require.Equal(t, i+1, w.Attempt)
		require.Equal(t, "/v1/clusters", w.Path)
		require.Positive(t, w.Delay)
		require.Equal(t, "the server, which answered 503", w.Reason())
	}

	limited := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "30")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = w.Write([]byte(`{"error":{"status":429,"code":"rate_limited","message":"slow down"}}`))
	}))
	t.Cleanup(limited.Close)
	c = client.New(limited.URL, "k")
	waits = nil
	stop := errors.New("stop")
	c.Pause = func(_ context.Context, w client.RetryWait) error {
		waits = append(waits, w)
		return stop
	}
	_, err = c.Do(context.Background(), http.MethodGet, "/v1/me", nil, nil, "")
	require.Equal(t, "rate_limited", client.ErrorCode(err), "a pause that gives up ends the request with the last answer")
	require.Len(t, waits, 1)
	require.Equal(t, 30*time.Second, waits[0].Delay)
	require.Equal(t, "the rate limit (429 rate_limited)", waits[0].Reason())
}
