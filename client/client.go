package client

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/heddle-io/heddle/internal/api"
	"github.com/heddle-io/heddle/internal/idempotency"
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
	// Other methods are resent only with an Idempotency-Key (Retries).
	RateLimitRetries int
	// Retries is how many times a request that carries an Idempotency-Key
	// is sent again, with the same key, after a connection error, a 5xx, a
	// 429 or a 409 idempotency_in_flight: the server carries it out once
	// whatever happened to the earlier attempts. The client sends a random
	// key on every request that creates or starts something (see
	// WithIdempotencyKey to choose it).
	Retries int
	// RetryBackoff is the wait before the first resend; it doubles for
	// each one after (up to 8 s, with jitter), or is the Retry-After the
	// server gave when that is longer.
	RetryBackoff time.Duration
	// NoIdempotencyKeys sends no key of the client's own, and so does not
	// resend those requests either.
	NoIdempotencyKeys bool
	// Pause, when set, waits out each pause before a resend in place of the
	// client, so that a program can say what it waits for (a rate limit's
	// Retry-After can be most of a minute). It must return when w.Delay
	// has passed, or early with ctx's error when ctx ends; an error ends
	// the request with the last attempt's error.
	Pause func(ctx context.Context, w RetryWait) error
}

// RetryWait is one pause before a request is sent again.
type RetryWait struct {
	Method, Path string
	// Attempt is the number of the resend that follows, from 1.
	Attempt int
	// Delay is how long the pause lasts: the server's Retry-After, or the
	// client's backoff.
	Delay time.Duration
	// Err is what the last attempt got: an *Error (Status 429 for a rate
	// limit), or the error of a request that was not answered.
	Err error
}

// Reason says in a few words why the request waits: "the tenant's request
// rate limit (429)", "the server answered 503", "heddle cannot be reached".
func (w RetryWait) Reason() string {
	var e *Error
	if !errors.As(w.Err, &e) {
		return "heddle cannot be reached"
	}
	switch {
	case e.Status == http.StatusTooManyRequests:
		return "the rate limit (429 " + e.Code + ")"
	case e.Code == api.CodeIdempotencyInFlight:
		return "the same request, still being carried out"
	default:
		return fmt.Sprintf("the server, which answered %d", e.Status)
	}
}

// pause waits out w with Pause, or itself.
func (c *Client) pause(ctx context.Context, w RetryWait) error {
	if c.Pause != nil {
		return c.Pause(ctx, w)
	}
	t := time.NewTimer(w.Delay)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

type idempotencyKeyKey struct{}

// WithIdempotencyKey returns a context under which the next create or
// start request carries key as its Idempotency-Key instead of a random
// one: a program that may itself be restarted (a Terraform provider, a CI
// job) keeps the key with its own state and sends it again after a restart,
// so heddle carries the request out once. A key is 1 to 255 visible ASCII
// characters; keys live for 24 hours.
func WithIdempotencyKey(ctx context.Context, key string) context.Context {
	return context.WithValue(ctx, idempotencyKeyKey{}, key)
}

// NewIdempotencyKey returns a random key (128 bits, hex).
func NewIdempotencyKey() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
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
		Retries:          5,
		RetryBackoff:     500 * time.Millisecond,
	}
}

// maxAnswer bounds what one answer may hold: the API's own answers stay far
// below it (API Gateway sends at most 10 MB).
const maxAnswer = 64 << 20

// Do sends one request and returns the body of a 2xx answer; any other
// answer is an *Error. It is the way to call a route this package has no
// method for. body, when not nil, is sent with contentType.
//
// A request to a route that creates or starts something carries an
// Idempotency-Key (random, or the one WithIdempotencyKey gave) and is sent
// again with it, up to Retries times, when it may not have been carried out
// or answered: heddle answers a resend from the first attempt's outcome.
func (c *Client) Do(ctx context.Context, method, path string, query url.Values, body []byte, contentType string) ([]byte, error) {
	key, _ := ctx.Value(idempotencyKeyKey{}).(string)
	if key == "" && !c.NoIdempotencyKeys && api.IdempotentPath(method, path) {
		key = NewIdempotencyKey()
	}
	for attempt := 0; ; attempt++ {
		data, retryAfter, transient, err := c.do(ctx, method, path, query, body, contentType, key)
		var wait time.Duration
		switch {
		case key != "" && transient && attempt < c.Retries:
			wait = max(retryAfter, c.backoff(attempt))
		case retryAfter > 0 && method == http.MethodGet && attempt < c.RateLimitRetries:
			wait = retryAfter
		default:
			return data, err
		}
		if c.pause(ctx, RetryWait{Method: method, Path: path, Attempt: attempt + 1, Delay: wait, Err: err}) != nil {
			return nil, err
		}
	}
}

// backoff is the wait before resend attempt+1: RetryBackoff doubled per
// attempt, up to 8 s, less up to a quarter at random so that clients
// refused together do not come back together.
func (c *Client) backoff(attempt int) time.Duration {
	d := c.RetryBackoff
	if d <= 0 {
		d = 500 * time.Millisecond
	}
	d <<= min(attempt, 10)
	d = min(d, 8*time.Second)
	return d - time.Duration(mrand.Int64N(int64(d)/4+1))
}

// transientStatus: answers after which a resend with the same key may
// succeed.
func transientStatus(status int, data []byte) bool {
	switch status {
	case http.StatusInternalServerError, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout,
		http.StatusTooManyRequests:
		return true
	case http.StatusConflict:
		var env api.ErrorBody
		return json.Unmarshal(data, &env) == nil && env.Error.Code == api.CodeIdempotencyInFlight
	}
	return false
}

// do sends one attempt. transient says whether a resend with the same
// Idempotency-Key may succeed: the request was not answered, or answered
// with a 5xx, a 429 or a 409 idempotency_in_flight.
func (c *Client) do(ctx context.Context, method, path string, query url.Values, body []byte, contentType, idemKey string) ([]byte, time.Duration, bool, error) {
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
		return nil, 0, false, fmt.Errorf("making the request %s %s: %w", method, path, err)
	}
	if idemKey != "" {
		req.Header.Set(idempotency.Header, idemKey)
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
		return nil, 0, ctx.Err() == nil, fmt.Errorf("cannot reach heddle at %s: %w", c.Endpoint, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return nil, 0, ctx.Err() == nil, fmt.Errorf("reading the answer to %s %s: %w", method, path, err)
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		if dst, ok := ctx.Value(headerKey{}).(*http.Header); ok && dst != nil {
			*dst = resp.Header.Clone()
		}
		return data, 0, false, nil
	}
	var retryAfter time.Duration
	if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusConflict || resp.StatusCode >= 500 {
		if secs, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && secs > 0 && secs <= 60 {
			retryAfter = time.Duration(secs) * time.Second
		}
	}
	if resp.StatusCode != http.StatusTooManyRequests && method == http.MethodGet {
		retryAfter = 0 // only a GET's 429 is resent without a key
	}
	return nil, retryAfter, transientStatus(resp.StatusCode, data), ResponseError(resp.StatusCode, data)
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

type headerKey struct{}

// KeepHeader returns a context under which a call that succeeds leaves the
// header of its answer in *dst, for what an answer says outside its body
// (a catalog PUT's Heddle-Outcome).
func KeepHeader(ctx context.Context, dst *http.Header) context.Context {
	return context.WithValue(ctx, headerKey{}, dst)
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
