package main

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestAnswersOverSixMBThroughTheRealAPI: an answer of the real api binary
// over Lambda's 6 MB (here the catalog export, GET /v1/catalog, of 28
// scripts of 250 KB each) is refused by Lambda with
// Function.ResponseSizeTooLarge and answered by the front door as API
// Gateway does, 502 {"message":"Bad Gateway"}; aws-lambda-go's runtime
// exits when the Runtime API refuses its answer, so the next request goes
// to a new environment (a cold start) and is answered. A request body under API Gateway's 10 MB reaches the function (which
// answers with its own structured error) while one over it never does.
func TestAnswersOverSixMBThroughTheRealAPI(t *testing.T) {
	t.Parallel()
	d := setup(t)
	d.createTenant("1", "1", "2")
	line := "echo " + strings.Repeat("0123456789abcdef", 6) + "\n" // 102 bytes
	content := "#!/bin/sh\n" + strings.Repeat(line, 250_000/len(line))
	for i := range 28 {
		name := fmt.Sprintf("big%02d", i)
		status := d.api(http.MethodPut, "/v1/scripts/"+name, map[string]any{"name": name, "content": content}, nil)
		require.Less(t, status, 300, "script %d", i)
	}
	before, err := d.stats()
	require.NoError(t, err)

	get := func(path string) (int, []byte) {
		req, _ := http.NewRequest(http.MethodGet, d.ready.Endpoint+path, nil)
		req.Header.Set("Authorization", "Bearer "+d.key)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, b
	}
	status, body := get("/v1/catalog")
	require.Equal(t, http.StatusBadGateway, status, "%.300s", body)
	require.JSONEq(t, `{"message":"Bad Gateway"}`, string(body))

	after, err := d.stats()
	require.NoError(t, err)
	require.Equal(t, before.Functions["api"].Invocations+1, after.Functions["api"].Invocations, "the function ran and answered")
	require.Positive(t, after.Functions["api"].Errors-before.Functions["api"].Errors, "Lambda counted the refused answer as the invocation's error")
	status, body = get("/v1/scripts?limit=5")
	require.Equal(t, http.StatusOK, status, "the next request is answered: %.300s", body)

	// 9 MB: under API Gateway's 10 MB, so it reaches the function, which
	// refuses it with its own structured error (a catalog document is at
	// most 1 MiB), not with API Gateway's {"message":...}.
	req, _ := http.NewRequest(http.MethodPost, d.ready.Endpoint+"/v1/catalog", bytes.NewReader(append([]byte(`{"nope":"`), append(bytes.Repeat([]byte("x"), 9*1024*1024), '"', '}')...)))
	req.Header.Set("Authorization", "Bearer "+d.key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode, "%.300s", b)
	require.Contains(t, string(b), `"code": "body_too_large"`, "the api's structured error: %.300s", b)
}
