package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/spf13/cobra"

	"github.com/heddle-io/heddle/internal/api"
)

// pageFlags are a listing's --limit, --cursor and --all: one page by
// default (its nextCursor printed), every page with --all.
type pageFlags struct {
	limit  int
	cursor string
	all    bool
}

func (f *pageFlags) register(cmd *cobra.Command, what string) {
	cmd.Flags().IntVar(&f.limit, "limit", 0, "how many "+what+" per page (the server's default when 0)")
	cmd.Flags().StringVar(&f.cursor, "cursor", "", "start at this nextCursor of an earlier page")
	cmd.Flags().BoolVar(&f.all, "all", false, "follow the cursors: every "+what[:len(what)-1]+", not just one page")
	cmd.MarkFlagsMutuallyExclusive("cursor", "all")
}

// list GETs the collection at path with filters q: one page, or with --all
// every page, as one api.Page (NextCursor set when a page was left).
func (f *pageFlags) list(a *app, cmd *cobra.Command, path string, q url.Values) ([]byte, error) {
	c, err := a.client(cmd)
	if err != nil {
		return nil, err
	}
	if f.limit != 0 {
		q.Set("limit", fmt.Sprint(f.limit))
	}
	if f.cursor != "" {
		q.Set("cursor", f.cursor)
	}
	if f.all {
		return allPages(cmd, c, path, q)
	}
	raw, err := c.Do(cmd.Context(), http.MethodGet, path, q, nil, "")
	if err != nil {
		return nil, err
	}
	page, err := decodeBody[api.Page[json.RawMessage]](raw)
	if err != nil {
		return nil, err
	}
	return json.Marshal(page)
}

// printMore says how to get the next page, if there is one.
func printMore(w io.Writer, next string) {
	if next != "" {
		fmt.Fprintf(w, "more: add --cursor %s (or --all for everything)\n", next)
	}
}
