package client

import (
	"context"
	"fmt"
	"iter"
	"net/http"
	"net/url"
)

// Each lists the collection at path with the filters in query, following
// nextCursor one page at a time while the loop asks for more; pageSize 0
// leaves the page size to the server. An error is yielded once and ends the
// sequence. It serves the listings this package has no method for.
func Each[T any](ctx context.Context, c *Client, path string, query url.Values, pageSize int) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		q := url.Values{}
		for k, v := range query {
			q[k] = v
		}
		if pageSize > 0 {
			q.Set("limit", fmt.Sprint(pageSize))
		}
		for {
			page, err := GetPage[T](ctx, c, path, q)
			if err != nil {
				var zero T
				yield(zero, err)
				return
			}
			for _, it := range page.Items {
				if !yield(it, nil) {
					return
				}
			}
			if page.NextCursor == "" {
				return
			}
			q.Set("cursor", page.NextCursor)
		}
	}
}

// GetPage reads one page of the collection at path (query may hold a
// cursor and a limit).
func GetPage[T any](ctx context.Context, c *Client, path string, query url.Values) (*Page[T], error) {
	page, err := call[Page[T]](ctx, c, http.MethodGet, path, query, nil)
	if err != nil {
		return nil, err
	}
	if page.Items == nil {
		page.Items = []T{}
	}
	return page, nil
}

// Collect gathers a sequence into a slice, stopping at its first error.
func Collect[T any](seq iter.Seq2[T, error]) ([]T, error) {
	out := []T{}
	for v, err := range seq {
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}
