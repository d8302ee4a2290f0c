package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestAnswersOverSixMBThroughTheRealAPI: a catalog of 28 scripts of 250
// KB each (7 MB) is over Lambda's 6 MB answer as one document; the real
// api binary answers its export (GET /v1/catalog) in pages, each 200 and
// far under 6 MB, that together hold every script. (An answer over 6 MB,
// which no route makes now, is refused by Lambda with
// Function.ResponseSizeTooLarge and answered 502 by the front door, as
// API Gateway does: apigwemu's tests.) A request body under API
// Gateway's 10 MB reaches the function (which answers with its own
// structured error) while one over it never does.
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

	get := func(path string) (int, []byte) {
		req, _ := http.NewRequest(http.MethodGet, d.ready.Endpoint+path, nil)
		req.Header.Set("Authorization", "Bearer "+d.key)
		resp, err := testHTTP.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, b
	}
	scripts, pages := 0, 0
	for cursor := ""; ; pages++ {
		path := "/v1/catalog?limit=500"
		if cursor != "" {
			path += "&cursor=" + url.QueryEscape(cursor)
		}
		status, body := get(path)
		require.Equal(t, http.StatusOK, status, "%.300s", body)
		require.Less(t, len(body), 6_000_000, "a page is under Lambda's answer limit")
		var page struct {
			Scripts    []map[string]any `json:"scripts"`
			NextCursor string           `json:"nextCursor"`
		}
		require.NoError(t, json.Unmarshal(body, &page))
		scripts += len(page.Scripts)
		if cursor = page.NextCursor; cursor == "" {
			break
		}
	}
	require.Equal(t, 28, scripts)
	require.Greater(t, pages, 1)

	// 9 MB: under API Gateway's 10 MB, so it reaches the function, which
	// refuses it with its own structured error (a catalog document is at
	// most 1 MiB), not with API Gateway's {"message":...}.
	req, _ := http.NewRequest(http.MethodPost, d.ready.Endpoint+"/v1/catalog", bytes.NewReader(append([]byte(`{"nope":"`), append(bytes.Repeat([]byte("x"), 9*1024*1024), '"', '}')...)))
	req.Header.Set("Authorization", "Bearer "+d.key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := testHTTP.Do(req)
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode, "%.300s", b)
	require.Contains(t, string(b), `"code": "body_too_large"`, "the api's structured error: %.300s", b)
}
