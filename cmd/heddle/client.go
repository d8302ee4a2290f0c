package main

import (
	"context"
	"encoding/json"
	"net/url"

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
