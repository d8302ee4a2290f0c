package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"time"

	"github.com/spf13/cobra"

	"github.com/heddle-io/heddle/client"
	"github.com/heddle-io/heddle/internal/api"
)

// The CLI talks to the API through the public client package; these names
// keep the commands' code short.

// Client is the public client (package client).
type Client = client.Client

// APIError is an error answer of the API (client.Error): its envelope.
type APIError = client.Error

// NewClient returns a client for endpoint (a trailing / or /v1 is dropped)
// that names the CLI and its version in User-Agent.
func NewClient(endpoint, key string) *Client {
	c := client.New(endpoint, key)
	c.UserAgent = "heddle-cli/" + buildVersion()
	return c
}

// responseError makes the *APIError of a non-2xx answer.
func responseError(status int, data []byte) *APIError { return client.ResponseError(status, data) }

// decodeBody decodes a response body into T.
func decodeBody[T any](data []byte) (T, error) { return client.Decode[T](data) }

// fetchAll GETs every page of a listing (following nextCursor) and returns
// all its items, never nil.
func fetchAll[T any](ctx context.Context, c *Client, path string, q url.Values) ([]T, error) {
	return client.Collect(client.Each[T](ctx, c, path, q, 0))
}

// pathEscape escapes one path segment.
func pathEscape(s string) string { return client.PathEscape(s) }

// allPages follows a listing's cursors and returns every item as one page.
func allPages(cmd *cobra.Command, c *Client, path string, q url.Values) ([]byte, error) {
	items, err := fetchAll[json.RawMessage](cmd.Context(), c, path, q)
	if err != nil {
		return nil, err
	}
	return json.Marshal(api.Page[json.RawMessage]{Items: items})
}

// retryNotice waits out the client's pauses before a resend and says so on
// w (stderr): one line naming what it waits for and how long, so that a
// 44-second Retry-After does not look like a hung command. On a terminal
// the line counts down each tick; elsewhere (a log, a pipe) it is written
// once.
type retryNotice struct {
	w    io.Writer
	tty  bool
	tick time.Duration
}

func (n retryNotice) pause(ctx context.Context, rw client.RetryWait) error {
	line := func(left time.Duration) string {
		return fmt.Sprintf("heddle: waiting %s for %s before sending %s %s again (attempt %d; Ctrl-C stops)",
			humanDuration(left.Round(time.Second)), rw.Reason(), rw.Method, rw.Path, rw.Attempt+1)
	}
	deadline := time.Now().Add(rw.Delay)
	timer := time.NewTimer(rw.Delay)
	defer timer.Stop()
	if !n.tty {
		fmt.Fprintln(n.w, line(rw.Delay))
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-timer.C:
			return nil
		}
	}
	// \r and erase-line rewrite the line in place; it ends with a newline
	// so that what the command prints next starts on a line of its own.
	fmt.Fprint(n.w, "\r\x1b[K"+line(rw.Delay))
	defer fmt.Fprintln(n.w)
	ticker := time.NewTicker(n.tick)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-timer.C:
			return nil
		case <-ticker.C:
			fmt.Fprint(n.w, "\r\x1b[K"+line(time.Until(deadline)))
		}
	}
}
