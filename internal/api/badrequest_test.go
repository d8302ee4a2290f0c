package api

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// serveWithEnvelope serves b's API on a loopback port of its own through
// ListenerWithEnvelope, as the local server does.
func serveWithEnvelope(t *testing.T, b *testBundle) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := &http.Server{Handler: b.api}
	go func() { _ = srv.Serve(ListenerWithEnvelope(ln)) }()
	t.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().String()
}

// exchange sends raw requests on one connection and reads an answer to each.
func exchange(t *testing.T, addr string, requests ...string) []*http.Response {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	rd := bufio.NewReader(conn)
	var out []*http.Response
	for _, req := range requests {
		_, err := io.WriteString(conn, req)
		require.NoError(t, err)
		resp, err := http.ReadResponse(rd, nil)
		require.NoError(t, err, "answer to %q", req)
		body, err := io.ReadAll(resp.Body) // before the next answer
		require.NoError(t, err)
		resp.Body = io.NopCloser(bytes.NewReader(body))
		out = append(out, resp)
	}
	return out
}

func envelopeOf(t *testing.T, resp *http.Response) ErrorDetail {
	t.Helper()
	require.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var env ErrorBody
	require.NoError(t, json.Unmarshal(raw, &env), "the answer is the envelope: %s", raw)
	require.Equal(t, resp.StatusCode, env.Error.Status)
	require.NotEmpty(t, env.Error.RequestID)
	require.Equal(t, env.Error.RequestID, resp.Header.Get("X-Request-Id"))
	return env.Error
}

// TestUnreadableRequestsGetTheEnvelope: requests net/http refuses before any
// handler (a malformed escape in the path, a missing Host) are answered with
// the error envelope, on a fresh connection and after a good request on a
// kept-alive one; good requests and the handler's own answers pass
// unchanged.
func TestUnreadableRequestsGetTheEnvelope(t *testing.T) {
	t.Parallel()
	b := setup(t)
	addr := serveWithEnvelope(t, b)

	resp := exchange(t, addr, "GET /v1/services/x%%% HTTP/1.1\r\nHost: heddle.test\r\n\r\n")[0]
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	d := envelopeOf(t, resp)
	require.Equal(t, CodeBadRequest, d.Code)
	require.Contains(t, d.Message, `"/v1/services/x%%%"`)
	require.Contains(t, d.Message, "%25")
	require.Equal(t, "path", d.Details[0].Field)

	answers := exchange(t, addr,
		"GET /v1/status HTTP/1.1\r\nHost: heddle.test\r\n\r\n",
		"GET /v1/services/kv HTTP/1.1\r\nHost: heddle.test\r\nAuthorization: Bearer "+b.acmeKey+"\r\n\r\n",
		"GET /v1/services/%zz HTTP/1.1\r\nHost: heddle.test\r\n\r\n")
	require.Equal(t, http.StatusOK, answers[0].StatusCode)
	require.Equal(t, http.StatusNotFound, answers[1].StatusCode)
	require.Equal(t, CodeNotFound, envelopeOf(t, answers[1]).Code, "the handler's own answers pass unchanged")
	require.Equal(t, http.StatusBadRequest, answers[2].StatusCode)
	require.Contains(t, envelopeOf(t, answers[2]).Message, `"/v1/services/%zz"`)

	resp = exchange(t, addr, "GET /v1/status HTTP/1.1\r\n\r\n")[0]
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	d = envelopeOf(t, resp)
	require.Equal(t, CodeBadRequest, d.Code)
	require.Contains(t, d.Message, "Host")
}

func TestMalformedTarget(t *testing.T) {
	t.Parallel()
	for _, target := range []string{"/v1/services/x%%%", "/v1/services/%zz", "/v1/services/x%4"} {
		env, bad := MalformedTarget(target, "trace-1")
		require.True(t, bad, target)
		require.Equal(t, http.StatusBadRequest, env.Error.Status)
		require.Equal(t, "trace-1", env.Error.RequestID)
		require.True(t, strings.Contains(env.Error.Message, target))
	}
	for _, target := range []string{"/v1/services/x%25", "/v1/status?a=%%", "/"} {
		_, bad := MalformedTarget(target, "")
		require.False(t, bad, target)
	}
}
