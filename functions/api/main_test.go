package main

import (
	"context"
	"encoding/json"
	"flag"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/store"
	"github.com/heddle-io/heddle/internal/store/boltstore"
	"github.com/heddle-io/heddle/internal/store/dynamotest"
)

var update = flag.Bool("update", false, "rewrite testdata/responses from the handler's answers")

// testKey is the superadmin key the fixtures carry (32 zero bytes).
const testKey = "hdl_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"

// goldenResponse is the part of a response the fixtures pin down: the status,
// the headers a client relies on, and the body with per-run values removed.
type goldenResponse struct {
	StatusCode int               `json:"statusCode"`
	Headers    map[string]string `json:"headers"`
	Body       any               `json:"body"`
}

// TestGoldenEvents feeds real API Gateway HTTP API (payload 2.0) events, in
// file order, through the Lambda handler and compares each response with its
// golden file. The events build on one another (a service is written, then
// listed), as a client's calls would.
func TestGoldenEvents(t *testing.T) {
	t.Parallel()
	db, err := boltstore.Open(filepath.Join(t.TempDir(), "heddle.db"), boltstore.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	checkGolden(t, db, "bolt")
}

// TestGoldenEventsOnDynamoDB runs the same events against DynamoDB Local: the
// store the Lambda really uses. The responses must be the same, byte for
// byte after scrubbing (which hides the backend /v1/status names).
func TestGoldenEventsOnDynamoDB(t *testing.T) {
	t.Parallel()
	checkGolden(t, dynamotest.Store(t, "heddle-api-golden"), "dynamodb")
}

func checkGolden(t *testing.T, db store.Store, backend string) {
	t.Helper()
	h, err := newServicesHandler(context.Background(), catalogOnly(db), backend, testKey, slog.New(slog.NewJSONHandler(os.Stderr, nil)))
	require.NoError(t, err)

	events, err := filepath.Glob("testdata/events/*.json")
	require.NoError(t, err)
	require.NotEmpty(t, events)
	sort.Strings(events)
	for _, path := range events {
		name := strings.TrimSuffix(filepath.Base(path), ".json")
		got := run(t, h, path)
		goldenPath := filepath.Join("testdata", "responses", name+".json")
		if *update {
			require.NoError(t, os.MkdirAll(filepath.Dir(goldenPath), 0o755))
			b, err := json.MarshalIndent(got, "", "  ")
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(goldenPath, append(b, '\n'), 0o644))
			continue
		}
		want, err := os.ReadFile(goldenPath)
		require.NoError(t, err, "no golden response for %s; run go test -update", name)
		gotJSON, err := json.Marshal(got)
		require.NoError(t, err)
		require.JSONEq(t, string(want), string(gotJSON), name)
	}
}

func run(t *testing.T, h lambdaHandler, path string) goldenResponse {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	var ev events.APIGatewayV2HTTPRequest
	require.NoError(t, json.Unmarshal(raw, &ev))
	resp, err := h(context.Background(), ev)
	require.NoError(t, err)

	headers := map[string]string{}
	for _, k := range []string{"Content-Type", "Etag", "Location", "Allow", "Www-Authenticate"} {
		if v := resp.Headers[k]; v != "" {
			headers[k] = v
		}
	}
	require.NotEmpty(t, resp.Headers["X-Request-Id"], "every response carries a request id")
	var body any
	if resp.Body != "" {
		require.NoError(t, json.Unmarshal([]byte(resp.Body), &body), "body of %s: %s", path, resp.Body)
		body = scrub(body)
	}
	return goldenResponse{StatusCode: resp.StatusCode, Headers: headers, Body: body}
}

// scrub removes values that change from run to run.
func scrub(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for _, k := range []string{"requestId", "started", "createdAt", "keyId", "backend", "revision", "revisionTime", "modified"} {
			if _, ok := x[k]; ok {
				x[k] = "<scrubbed>"
			}
		}
		for k, e := range x {
			x[k] = scrub(e)
		}
	case []any:
		for i, e := range x {
			x[i] = scrub(e)
		}
	}
	return v
}
