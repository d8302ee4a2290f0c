package apigwemu

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/lambdaemu"
)

var update = flag.Bool("update", false, "rewrite the golden events in testdata/events")

// fixedTime and fixedID make the golden events reproducible.
var fixedTime = time.Date(2026, 11, 25, 11, 0, 0, 0, time.UTC)

const fixedID = "Jk3aXmPLvHcESHA="

func TestEventsAsAPIGatewayBuildsThem(t *testing.T) {
	t.Parallel()
	binary := []byte{0x1f, 0x8b, 0x08, 0x00, 0xff, 0xfe, 0x00}
	cases := []struct {
		name string
		req  func() *http.Request
	}{
		{"get-query-cookies", func() *http.Request {
			r := httptest.NewRequest(http.MethodGet, "http://127.0.0.1:8080/v1/clusters?limit=10&status=ACTIVE&status=PENDING&q=a%20b", nil)
			r.Header.Set("Authorization", "Bearer hdl_x")
			r.Header.Add("Accept", "application/json")
			r.Header.Add("Accept", "text/plain")
			r.Header.Set("Cookie", "session=abc; theme=dark")
			r.Header.Set("User-Agent", "heddle-cli/dev")
			return r
		}},
		{"post-json", func() *http.Request {
			r := httptest.NewRequest(http.MethodPost, "http://127.0.0.1:8080/v1/clusters", strings.NewReader(`{"name":"web","template":"lamp","size":3}`))
			r.Header.Set("Content-Type", "application/json; charset=utf-8")
			return r
		}},
		{"put-yaml-text", func() *http.Request {
			r := httptest.NewRequest(http.MethodPut, "http://127.0.0.1:8080/v1/catalog", strings.NewReader("kind: service\nname: web\n"))
			r.Header.Set("Content-Type", "application/yaml")
			return r
		}},
		{"post-binary-base64", func() *http.Request {
			r := httptest.NewRequest(http.MethodPost, "http://127.0.0.1:8080/v1/upload", bytes.NewReader(binary))
			r.Header.Set("Content-Type", "application/octet-stream")
			return r
		}},
		{"escaped-path", func() *http.Request {
			return httptest.NewRequest(http.MethodDelete, "http://127.0.0.1:8080/v1/clusters/my%20cluster", nil)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r := c.req()
			r.RemoteAddr = "192.0.2.7:53211"
			body, err := io.ReadAll(r.Body)
			require.NoError(t, err)
			ev := Event(r, body, "local", "000000000000", fixedID, fixedTime)
			got, err := json.MarshalIndent(ev, "", "  ")
			require.NoError(t, err)
			golden := filepath.Join("testdata", "events", c.name+".json")
			if *update {
				require.NoError(t, os.WriteFile(golden, append(got, '\n'), 0o644))
			}
			want, err := os.ReadFile(golden)
			require.NoError(t, err)
			require.JSONEq(t, string(want), string(got))
		})
	}
}

func TestBinaryBodyRoundTrips(t *testing.T) {
	t.Parallel()
	body := []byte{0, 1, 2, 0xff}
	r := httptest.NewRequest(http.MethodPost, "/v1/x", bytes.NewReader(body))
	ev := Event(r, body, "local", "0", fixedID, fixedTime)
	require.True(t, ev.IsBase64Encoded)
	require.Equal(t, "AAEC/w==", ev.Body)
}

// fakeFunction answers every invocation with answer (after delay).
type fakeFunction struct {
	answer  lambdaemu.Result
	err     error
	delay   time.Duration
	calls   atomic.Int64
	lastEvt atomic.Value
}

func (f *fakeFunction) Invoke(ctx context.Context, payload []byte) (lambdaemu.Result, error) {
	f.calls.Add(1)
	f.lastEvt.Store(payload)
	select {
	case <-time.After(f.delay):
	case <-ctx.Done():
		return lambdaemu.Result{}, ctx.Err()
	}
	return f.answer, f.err
}

func setup(t *testing.T, fn *fakeFunction, timeout time.Duration) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(New(Config{Function: fn, Timeout: timeout}))
	t.Cleanup(srv.Close)
	return srv
}

func do(t *testing.T, req *http.Request) (*http.Response, string) {
	t.Helper()
	resp, err := testHTTP.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, string(b)
}

func answer(t *testing.T, resp events.APIGatewayV2HTTPResponse) lambdaemu.Result {
	b, err := json.Marshal(resp)
	require.NoError(t, err)
	return lambdaemu.Result{Payload: b}
}

func TestResponsesAsAPIGatewayReturnsThem(t *testing.T) {
	t.Parallel()
	fn := &fakeFunction{answer: answer(t, events.APIGatewayV2HTTPResponse{StatusCode: 201,
		Headers: map[string]string{"Content-Type": "application/octet-stream"}, Cookies: []string{"a=1", "b=2"},
		Body: "AAEC", IsBase64Encoded: true})}
	srv := setup(t, fn, 0)
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/things?x=1", strings.NewReader(`{"a":1}`))
	req.Header.Set("Content-Type", "application/json")
	resp, body := do(t, req)
	require.Equal(t, 201, resp.StatusCode)
	require.Equal(t, []string{"a=1", "b=2"}, resp.Header.Values("Set-Cookie"))
	require.Equal(t, "\x00\x01\x02", body)
	require.NotEmpty(t, resp.Header.Get("Apigw-Requestid"))
	var ev events.APIGatewayV2HTTPRequest
	require.NoError(t, json.Unmarshal(fn.lastEvt.Load().([]byte), &ev))
	require.Equal(t, `{"a":1}`, ev.Body)
	require.Equal(t, map[string]string{"x": "1"}, ev.QueryStringParameters)
	require.Equal(t, "v1/things", ev.PathParameters["proxy"])
}

func TestLimitsAnsweredAsAPIGateway(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		fn     *fakeFunction
		body   []byte
		path   string
		status int
		msg    string
		called bool
	}{
		{name: "body over 10 MB", fn: &fakeFunction{}, body: make([]byte, MaxRequest+1), status: 413, msg: "Request Entity Too Large"},
		{name: "body of 10 MB passes", fn: &fakeFunction{answer: lambdaemu.Result{Payload: []byte(`{"statusCode":204}`)}}, body: make([]byte, MaxRequest), status: 204, called: true},
		{name: "timeout", fn: &fakeFunction{delay: time.Minute}, status: 503, msg: "Service Unavailable", called: true},
		{name: "answer over 6 MB", fn: &fakeFunction{answer: lambdaemu.Result{FunctionError: "Unhandled", ErrorType: lambdaemu.ErrorTypeResponseSize}}, status: 502, msg: "Bad Gateway", called: true},
		{name: "function error", fn: &fakeFunction{answer: lambdaemu.Result{FunctionError: "Unhandled", ErrorType: "Runtime.ExitError"}}, status: 500, msg: "Internal Server Error", called: true},
		{name: "throttled", fn: &fakeFunction{err: lambdaemu.ErrThrottled}, status: 500, msg: "Internal Server Error", called: true},
		{name: "not JSON", fn: &fakeFunction{answer: lambdaemu.Result{Payload: []byte("hello")}}, status: 500, msg: "Internal Server Error", called: true},
		{name: "bad status", fn: &fakeFunction{answer: lambdaemu.Result{Payload: []byte(`{"statusCode":99}`)}}, status: 500, msg: "Internal Server Error", called: true},
		{name: "bad base64", fn: &fakeFunction{answer: lambdaemu.Result{Payload: []byte(`{"statusCode":200,"body":"%%","isBase64Encoded":true}`)}}, status: 500, msg: "Internal Server Error", called: true},
		{name: "plain JSON is a 200", fn: &fakeFunction{answer: lambdaemu.Result{Payload: []byte(`["a"]`)}}, status: 200, msg: `["a"]`, called: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			srv := setup(t, c.fn, time.Second)
			path := c.path
			if path == "" {
				path = "/v1/x"
			}
			req, _ := http.NewRequest(http.MethodPost, srv.URL+path, bytes.NewReader(c.body))
			resp, body := do(t, req)
			require.Equal(t, c.status, resp.StatusCode, body)
			if c.msg != "" && c.status >= 400 {
				require.JSONEq(t, `{"message":"`+c.msg+`"}`, body)
			} else if c.msg != "" {
				require.Equal(t, c.msg, body)
			}
			require.Equal(t, c.called, c.fn.calls.Load() > 0)
		})
	}
}

func FuzzResponse(f *testing.F) {
	f.Add([]byte(`{"statusCode":200,"body":"x"}`))
	f.Add([]byte(`{"statusCode":"200"}`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`{"statusCode":200,"isBase64Encoded":true,"body":"!!"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		resp, err := Response(b)
		if err == nil {
			require.True(t, resp.StatusCode >= 100 && resp.StatusCode <= 599)
			w := httptest.NewRecorder()
			writeResponse(w, fixedID, resp)
		}
	})
}

func FuzzEvent(f *testing.F) {
	f.Add("/v1/x", "a=1&a=2", "application/json", []byte(`{}`), "s=1; t=2")
	f.Add("/v1/%zz", "%%", "text/plain; charset=", []byte{0xff}, ";;")
	f.Fuzz(func(t *testing.T, path, query, contentType string, body []byte, cookie string) {
		r := httptest.NewRequest(http.MethodPost, "/", nil)
		r.URL.Path, r.URL.RawQuery = path, query
		r.Header.Set("Content-Type", contentType)
		r.Header.Set("Cookie", cookie)
		ev := Event(r, body, "local", "0", fixedID, fixedTime)
		_, err := json.Marshal(ev)
		require.NoError(t, err)
	})
}

func TestFlattenClaims(t *testing.T) {
	t.Parallel()
	got := FlattenClaims(map[string]any{"iss": "https://idp", "exp": float64(1795460638), "email_verified": true,
		"groups": []any{"a", "b"}, "address": map[string]any{"country": "NL"}})
	require.Equal(t, map[string]string{"iss": "https://idp", "exp": "1795460638", "email_verified": "true",
		"groups": "[a b]", "address": `{"country":"NL"}`}, got)
}

// TestRootRoute: the root has a route of its own (ANY /, template.yaml's
// Root event), with no path parameters: the dashboard's page.
func TestRootRoute(t *testing.T) {
	t.Parallel()
	fn := &fakeFunction{answer: lambdaemu.Result{Payload: []byte(`{"statusCode":200,"body":"<html>"}`)}}
	srv := setup(t, fn, time.Second)
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/", nil)
	resp, body := do(t, req)
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	var ev events.APIGatewayV2HTTPRequest
	require.NoError(t, json.Unmarshal(fn.lastEvt.Load().([]byte), &ev))
	require.Equal(t, "ANY /", ev.RouteKey)
	require.Equal(t, "ANY /", ev.RequestContext.RouteKey)
	require.Equal(t, "/", ev.RawPath)
	require.Empty(t, ev.PathParameters)
}
