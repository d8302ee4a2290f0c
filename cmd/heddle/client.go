package main

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

	"github.com/spf13/cobra"

	"github.com/heddle-io/heddle/internal/api"
)

// Client is a small client for heddle's /v1 API: it sends the API key as a
// bearer token and turns error envelopes into *APIError.
type Client struct {
	// Endpoint is the server's base URL, without /v1.
	Endpoint string
	Key      string
	HTTP     *http.Client
}

// NewClient returns a client for endpoint (a trailing / or /v1 is dropped).
func NewClient(endpoint, key string) *Client {
	endpoint = strings.TrimRight(endpoint, "/")
	endpoint = strings.TrimSuffix(endpoint, "/v1")
	return &Client{Endpoint: endpoint, Key: key, HTTP: &http.Client{Timeout: 5 * time.Minute}}
}

// APIError is an error response of the API: its envelope (api.ErrorDetail),
// or what could be made of a response that carried none.
type APIError struct {
	api.ErrorDetail
}

func (e *APIError) Error() string {
	var b strings.Builder
	b.WriteString(e.Message)
	for _, d := range e.Details {
		b.WriteString("; ")
		if d.Field != "" {
			b.WriteString(d.Field + ": ")
		}
		b.WriteString(d.Message)
	}
	return b.String()
}

// Write prints the error for a person: the message, then one line per
// detail ("  field: message") and per referrer.
func (e *APIError) Write(w io.Writer) {
	fmt.Fprintf(w, "heddle: %s\n", e.Message)
	for _, d := range e.Details {
		if d.Field != "" {
			fmt.Fprintf(w, "  %s: %s\n", d.Field, d.Message)
		} else {
			fmt.Fprintf(w, "  %s\n", d.Message)
		}
	}
	for _, r := range e.Referrers {
		fmt.Fprintf(w, "  referenced by %s/%s\n", r.Kind, r.Name)
	}
}

// Do sends one request and returns the response body of a 2xx answer. A
// non-2xx answer is an *APIError. A GET refused for the tenant's request
// limit (429) is sent again after the Retry-After the server gave, a few
// times: a watch loop slows down rather than fails.
func (c *Client) Do(ctx context.Context, method, path string, query url.Values, body []byte, contentType string) ([]byte, error) {
	for attempt := 0; ; attempt++ {
		data, retryAfter, err := c.do(ctx, method, path, query, body, contentType)
		if retryAfter <= 0 || method != http.MethodGet || attempt >= 3 {
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
		return nil, 0, err
	}
	if c.Key != "" {
		req.Header.Set("Authorization", "Bearer "+c.Key)
	}
	if body != nil && contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "heddle-cli/"+buildVersion())
	resp, err := c.HTTP.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, 0, fmt.Errorf("cannot reach heddle at %s: %w", c.Endpoint, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
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
	return nil, retryAfter, responseError(resp.StatusCode, data)
}

// JSON sends in (when not nil) as a JSON body and returns the answer's body.
func (c *Client) JSON(ctx context.Context, method, path string, query url.Values, in any) ([]byte, error) {
	var body []byte
	if in != nil {
		var err error
		if body, err = json.Marshal(in); err != nil {
			return nil, err
		}
	}
	return c.Do(ctx, method, path, query, body, "application/json")
}

func responseError(status int, data []byte) *APIError {
	var env api.ErrorBody
	if err := json.Unmarshal(data, &env); err == nil && env.Error.Message != "" {
		if env.Error.Status == 0 {
			env.Error.Status = status
		}
		return &APIError{env.Error}
	}
	msg := fmt.Sprintf("the server answered %d %s", status, http.StatusText(status))
	if s := strings.TrimSpace(string(data)); s != "" {
		if len(s) > 200 {
			s = s[:200] + "..."
		}
		msg += ": " + s
	}
	return &APIError{api.ErrorDetail{Status: status, Message: msg}}
}

// decodeBody decodes a response body into T.
func decodeBody[T any](data []byte) (T, error) {
	var v T
	if err := json.Unmarshal(data, &v); err != nil {
		return v, fmt.Errorf("the server's answer is not what this heddle expects: %w", err)
	}
	return v, nil
}

// fetchAll GETs every page of a listing (following nextCursor) and returns
// all its items, never nil.
func fetchAll[T any](ctx context.Context, c *Client, path string, q url.Values) ([]T, error) {
	if q == nil {
		q = url.Values{}
	}
	items := []T{}
	for {
		raw, err := c.Do(ctx, http.MethodGet, path, q, nil, "")
		if err != nil {
			return nil, err
		}
		page, err := decodeBody[api.Page[T]](raw)
		if err != nil {
			return nil, err
		}
		items = append(items, page.Items...)
		if page.NextCursor == "" {
			return items, nil
		}
		q.Set("cursor", page.NextCursor)
	}
}

// pathEscape escapes one path segment.
func pathEscape(s string) string { return url.PathEscape(s) }

// allPages follows a listing's cursors and returns every item as one page.
func allPages(cmd *cobra.Command, c *Client, path string, q url.Values) ([]byte, error) {
	items, err := fetchAll[json.RawMessage](cmd.Context(), c, path, q)
	if err != nil {
		return nil, err
	}
	return json.Marshal(api.Page[json.RawMessage]{Items: items})
}
