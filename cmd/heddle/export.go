package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"

	"github.com/spf13/cobra"

	"github.com/heddle-io/heddle/internal/catalog"
)

func newExportCommand(a *app) *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:   "export [--format yaml|json]",
		Short: "Print your tenant's whole catalog as one document, which apply -f reads back",
		Long: `Print your tenant's whole catalog (admin): GET /v1/catalog, the latest
version of every live entity, as one document that ` + "`heddle apply -f`" + ` imports.
The document is one snapshot: it is read at one revision of the catalog, so
an import that runs meanwhile is in it whole or not at all. Provider fields
that are secret are shown as [REDACTED]; applying the document keeps them.`,
		Example: `  heddle export > catalog.yaml
  heddle export --format json > catalog.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if format != "yaml" && format != "json" {
				return fmt.Errorf("--format is %q; use yaml or json", format)
			}
			c, err := a.client(cmd)
			if err != nil {
				return err
			}
			// A big catalog comes in pages of one snapshot: follow them
			// and print one document. A write between two pages ends the
			// snapshot (409): start again from the first page.
			whole := &catalog.Document{}
			for cursor, restarts := "", 0; ; {
				q := url.Values{"format": {"json"}}
				if cursor != "" {
					q.Set("cursor", cursor)
				}
				raw, err := c.Do(cmd.Context(), http.MethodGet, "/v1/catalog", q, nil, "")
				var apiErr *APIError
				if cursor != "" && errors.As(err, &apiErr) && apiErr.Status == http.StatusConflict && restarts < maxExportRestarts {
					whole, cursor = &catalog.Document{}, ""
					restarts++
					continue
				}
				if err != nil {
					return err
				}
				var page catalog.Document
				if err := json.Unmarshal(raw, &page); err != nil {
					return fmt.Errorf("reading a page of the catalog: %w", err)
				}
				whole.Append(&page)
				if page.NextCursor == "" {
					break
				}
				cursor = page.NextCursor
			}
			out, err := catalog.MarshalDocument(whole, format == "yaml")
			if err != nil {
				return err
			}
			if format == "json" {
				out = append(out, '\n')
			}
			_, err = cmd.OutOrStdout().Write(out)
			return err
		},
	}
	cmd.Flags().StringVar(&format, "format", "yaml", "the document's format: yaml or json")
	return cmd
}

// maxExportRestarts is how many times export starts again when the
// catalog changes between its pages.
const maxExportRestarts = 10
