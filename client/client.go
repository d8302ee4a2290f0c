package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Client talks to one heddle API with one credential. Its fields may be
// changed before the first request; it is safe for concurrent use after.
type Client struct {
	// Endpoint is the server's base URL, without /v1.
	Endpoint string
	// Key is sent as a bearer token: an API key (hdl_...) or an ID token.
	Key string
	// HTTP sends the requests; New gives it a five-minute timeout.
	HTTP *http.Client
	// UserAgent names the program in the User-Agent header.
	UserAgent string
	// RateLimitRetries is how many times a GET refused with 429 is sent
	// again after the Retry-After the server gave (at most a minute each).
	// Other methods are never resent: the server may have counted them.
	RateLimitRetries int
}

// New returns a client for endpoint (a trailing / or /v1 is dropped) that
// authenticates with key.
func New(endpoint, key string) *Client {
	endpoint = strings.TrimRight(endpoint, "/")
	endpoint = strings.TrimSuffix(endpoint, "/v1")
	return &Client{
		Endpoint: endpoint, Key: key,
		// The transport is defaultHTTP's: not http.DefaultTransport (see there).
		HTTP:             &http.Client{Timeout: 5 * time.Minute, Transport: defaultHTTP.Transport},
		UserAgent:        "heddle-go-client",
		RateLimitRetries: 3,
	}
}

// maxAnswer bounds what one answer may hold: the API's own answers stay far
// below it (API Gateway sends at most 10 MB).
const maxAnswer = 64 << 20

// Do sends one request and returns the body of a 2xx answer; any other
// answer is an *Error. It is the way to call a route this package has no
// method for. body, when not nil, is sent with contentType.
func (c *Client) Do(ctx context.Context, method, path string, query url.Values, body []byte, contentType string) ([]byte, error) {
	for attempt := 0; ; attempt++ {
		data, retryAfter, err := c.do(ctx, method, path, query, body, contentType)
		if retryAfter <= 0 || method != http.MethodGet || attempt >= c.RateLimitRetries {
			return data, err
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(retryAfter):
		}
	}
}

func (c *Client) do(ctx context.Context, method, path string, query url.Values, body []byte, contentType string) ([]byte, time.Duration, error) {
	u := c.Endpoint + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return nil, 0, fmt.Errorf("making the request %s %s: %w", method, path, err)
	}
	if c.Key != "" {
		req.Header.Set("Authorization", "Bearer "+c.Key)
	}
	if body != nil && contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	req.Header.Set("Accept", "application/json")
	if c.UserAgent != "" {
		req.Header.Set("User-Agent", c.UserAgent)
	}
	hc := c.HTTP
	if hc == nil {
		hc = defaultHTTP
	}
	resp, err := hc.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, 0, fmt.Errorf("cannot reach heddle at %s: %w", c.Endpoint, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return nil, 0, fmt.Errorf("reading the answer to %s %s: %w", method, path, err)
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return data, 0, nil
	}
	var retryAfter time.Duration
	if resp.StatusCode == http.StatusTooManyRequests {
		if secs, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && secs > 0 && secs <= 60 {
			retryAfter = time.Duration(secs) * time.Second
		}
	}
	return nil, retryAfter, ResponseError(resp.StatusCode, data)
}

// JSON sends in (when not nil) as a JSON body and returns the answer's body.
func (c *Client) JSON(ctx context.Context, method, path string, query url.Values, in any) ([]byte, error) {
	var body []byte
	if in != nil {
		var err error
		if body, err = json.Marshal(in); err != nil {
			return nil, fmt.Errorf("encoding the body of %s %s: %w", method, path, err)
		}
	}
	return c.Do(ctx, method, path, query, body, "application/json")
}

// Decode decodes an answer's body into T.
func Decode[T any](data []byte) (T, error) {
	var v T
	if err := json.Unmarshal(data, &v); err != nil {
		return v, fmt.Errorf("the server's answer is not what this client expects: %w", err)
	}
	return v, nil
}

type answerKey struct{}

// KeepAnswer returns a context under which the typed calls also leave the
// body of their answer, as the server sent it, in *dst (the latest call's
// when there are several, as in WaitJob): for a program that prints the
// API's own JSON, as the CLI's -o json does.
func KeepAnswer(ctx context.Context, dst *[]byte) context.Context {
	return context.WithValue(ctx, answerKey{}, dst)
}

// Send sends in as JSON (when not nil) to a route this package has no
// method for and decodes the answer into T.
func Send[T any](ctx context.Context, c *Client, method, path string, query url.Values, in any) (*T, error) {
	return call[T](ctx, c, method, path, query, in)
}

// call sends in as JSON (when not nil) and decodes the answer into T.
func call[T any](ctx context.Context, c *Client, method, path string, query url.Values, in any) (*T, error) {
	raw, err := c.JSON(ctx, method, path, query, in)
	if err != nil {
		return nil, err
	}
	if dst, ok := ctx.Value(answerKey{}).(*[]byte); ok && dst != nil {
		*dst = raw
	}
	v, err := Decode[T](raw)
	if err != nil {
		return nil, err
	}
	return &v, nil
}

// PathEscape escapes one path segment (a cluster, job or task id).
func PathEscape(s string) string { return url.PathEscape(s) }

// defaultHTTP serves a Client without HTTP. Its transport is its own, not
// http.DefaultTransport, so a program's other users of the default transport
// (httptest.Server.Close closes its idle connections) cannot break a request
// in flight.
var defaultHTTP = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
