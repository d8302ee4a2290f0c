package faults_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/faults"
)

func TestConfigRefusesBadRates(t *testing.T) {
	t.Parallel()
	for _, rates := range []faults.Rates{
		{faults.Throttle: -0.1},
		{faults.Throttle: 1.5},
		{faults.Throttle: 0.6, faults.Reset: 0.6},
		{"gremlins": 0.1},
	} {
		_, err := faults.New(faults.Config{Rates: rates})
		require.Error(t, err, "%v", rates)
	}
}

// backend counts the requests that reached it (were applied).
func backend(t *testing.T) (*httptest.Server, *atomic.Int64) {
	var applied atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		applied.Add(1)
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		_, _ = w.Write([]byte(`{}`))
	}))
	t.Cleanup(srv.Close)
	return srv, &applied
}

func post(c *http.Client, u, op string) (*http.Response, error) {
	req, _ := http.NewRequest(http.MethodPost, u, strings.NewReader(`{"TableName":"t"}`))
	req.Header.Set("X-Amz-Target", "DynamoDB_20120810."+op)
	return c.Do(req)
}

// TestEachKind: what the client sees and whether the request was applied,
// kind by kind, scripted on one operation only.
func TestEachKind(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		kind    faults.Kind
		applied bool
		status  int    // the answer's status, 0 when the client gets an error
		code    string // the answer's __type
		check   func(t *testing.T, err error)
	}{
		{kind: faults.Latency, applied: true, status: 200},
		{kind: faults.Throttle, status: 400, code: "ThrottlingException"},
		{kind: faults.ServerError, status: 500, code: "InternalServerError"},
		{kind: faults.ServerErrorAfter, applied: true, status: 500, code: "InternalServerError"},
		{kind: faults.TimeoutAfter, applied: true, check: func(t *testing.T, err error) {
			var ne net.Error
			require.ErrorAs(t, err, &ne)
			require.True(t, ne.Timeout())
		}},
		{kind: faults.Reset, check: func(t *testing.T, err error) { require.ErrorIs(t, err, syscall.ECONNRESET) }},
	} {
		t.Run(string(tc.kind), func(t *testing.T) {
			t.Parallel()
			srv, applied := backend(t)
			in, err := faults.New(faults.Config{Seed: 1})
			require.NoError(t, err)
			c := &http.Client{Transport: in.Transport(nil)}
			in.Arm("PutItem", tc.kind)

			// Another operation is untouched by what PutItem is armed with.
			resp, err := post(c, srv.URL, "GetItem")
			require.NoError(t, err)
			resp.Body.Close()
			require.Equal(t, 200, resp.StatusCode)
			require.Equal(t, int64(1), applied.Load())

			resp, err = post(c, srv.URL, "PutItem")
			if tc.check != nil {
				require.Error(t, err)
				require.ErrorIs(t, err, faults.ErrInjected)
				tc.check(t, err)
			} else {
				require.NoError(t, err)
				var body struct {
					Type string `json:"__type"`
				}
				_ = json.NewDecoder(resp.Body).Decode(&body)
				resp.Body.Close()
				require.Equal(t, tc.status, resp.StatusCode)
				require.Equal(t, tc.code, body.Type)
			}
			want := int64(1)
			if tc.applied {
				want++
			}
			require.Equal(t, want, applied.Load(), "applied")
			require.Equal(t, map[faults.Kind]int64{tc.kind: 1}, in.Counts())

			// Armed once: the next request goes through.
			resp, err = post(c, srv.URL, "PutItem")
			require.NoError(t, err)
			resp.Body.Close()
			require.Equal(t, 200, resp.StatusCode)
		})
	}
}

// TestSeedReproduces: the same seed over the same requests injects the
// same faults; another seed others.
func TestSeedReproduces(t *testing.T) {
	t.Parallel()
	srv, _ := backend(t)
	run := func(seed uint64) []string {
		in, err := faults.New(faults.Config{Seed: seed, Rates: faults.Rates{faults.Throttle: 0.2, faults.ServerError: 0.1, faults.ServerErrorAfter: 0.1}})
		require.NoError(t, err)
		c := &http.Client{Transport: in.Transport(nil)}
		for i := range 200 {
			resp, err := post(c, srv.URL, fmt.Sprint("Op", i%3))
			require.NoError(t, err)
			resp.Body.Close()
		}
		var kinds []string
		for _, e := range in.Events() {
			kinds = append(kinds, e.Operation+":"+string(e.Kind))
		}
		return kinds
	}
	a, b, other := run(7), run(7), run(8)
	require.Equal(t, a, b)
	require.NotEqual(t, a, other)
	require.InDelta(t, 80, len(a), 30, "about 40%% of 200 requests")
}

// TestOperationsLimitRandomFaults: random faults only hit the operations
// named; Pause stops them.
func TestOperationsLimitRandomFaults(t *testing.T) {
	t.Parallel()
	srv, _ := backend(t)
	in, err := faults.New(faults.Config{Seed: 3, Rates: faults.Rates{faults.Throttle: 1}, Operations: []string{"PutItem"}})
	require.NoError(t, err)
	c := &http.Client{Transport: in.Transport(nil)}
	for _, op := range []string{"GetItem", "PutItem", "Query"} {
		resp, err := post(c, srv.URL, op)
		require.NoError(t, err)
		resp.Body.Close()
	}
	require.Equal(t, map[faults.Kind]int64{faults.Throttle: 1}, in.Counts())
	require.Equal(t, map[string]int64{"GetItem": 1, "PutItem": 1, "Query": 1}, in.Requests())
	in.Pause()
	resp, err := post(c, srv.URL, "PutItem")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)
	in.Resume()
	resp, err = post(c, srv.URL, "PutItem")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, 400, resp.StatusCode)
}

// TestProxyLosesAnswers: through the reverse proxy, a fault after the
// request was applied closes the connection with no answer.
func TestProxyLosesAnswers(t *testing.T) {
	t.Parallel()
	srv, applied := backend(t)
	in, err := faults.New(faults.Config{})
	require.NoError(t, err)
	target, _ := url.Parse(srv.URL)
	proxy := httptest.NewServer(in.Proxy(target))
	t.Cleanup(proxy.Close)
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}

	in.Arm("TransactWriteItems", faults.TimeoutAfter, faults.Throttle)
	_, err = post(c, proxy.URL, "TransactWriteItems")
	require.Error(t, err, "no answer")
	require.True(t, errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || strings.Contains(err.Error(), "EOF") || errors.Is(err, syscall.ECONNRESET), "%v", err)
	require.Equal(t, int64(1), applied.Load(), "applied")

	resp, err := post(c, proxy.URL, "TransactWriteItems")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, 400, resp.StatusCode, "throttled through the proxy")
	resp, err = post(c, proxy.URL, "TransactWriteItems")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)
	require.Equal(t, int64(2), applied.Load())
}
