package main

import (
	"context"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/api"
	"github.com/heddle-io/heddle/internal/ratelimit"
	"github.com/heddle-io/heddle/internal/store/boltstore"
)

func TestParsePerMinute(t *testing.T) {
	t.Parallel()
	l, err := parsePerMinute("X", "", 1200)
	require.NoError(t, err)
	require.Equal(t, ratelimit.Limit{Requests: 1200, Window: time.Minute}, l)
	l, err = parsePerMinute("X", "0", 1200)
	require.NoError(t, err)
	require.True(t, l.Off())
	for _, bad := range []string{"-1", "ten", "1.5"} {
		_, err = parsePerMinute("HEDDLE_X", bad, 1200)
		require.ErrorContains(t, err, "HEDDLE_X=")
	}
}

// TestFailedAuthenticationsCountPerSourceIP: behind API Gateway the source
// is the event's sourceIp, which the adapter makes the request's peer.
func TestFailedAuthenticationsCountPerSourceIP(t *testing.T) {
	t.Parallel()
	db, err := boltstore.Open(filepath.Join(t.TempDir(), "heddle.db"), boltstore.Options{NoSync: true})
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	svc := catalogOnly(db)
	svc.throttle = &api.Throttle{Limiter: api.NewStoredLimiter(db), AuthFailures: ratelimit.Limit{Requests: 1, Window: time.Minute}}
	h, err := newServicesHandler(context.Background(), svc, "bolt", testKey, slog.New(slog.NewJSONHandler(os.Stderr, nil)))
	require.NoError(t, err)
	call := func(ip, key string) events.APIGatewayV2HTTPResponse {
		ev := events.APIGatewayV2HTTPRequest{RawPath: "/v1/me", Headers: map[string]string{"authorization": "Bearer " + key}}
		ev.RequestContext.HTTP.Method = http.MethodGet
		ev.RequestContext.HTTP.Path = "/v1/me"
		ev.RequestContext.HTTP.SourceIP = ip
		resp, err := h(context.Background(), ev)
		require.NoError(t, err)
		return resp
	}
	wrong := "hdl_BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB"
	require.Equal(t, http.StatusUnauthorized, call("198.51.100.7", wrong).StatusCode)
	resp := call("198.51.100.7", wrong)
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
	require.NotEmpty(t, resp.Headers["Retry-After"])
	require.Equal(t, http.StatusUnauthorized, call("203.0.113.9", wrong).StatusCode, "another address has its own count")
	require.Equal(t, http.StatusOK, call("203.0.113.9", testKey).StatusCode)
}
