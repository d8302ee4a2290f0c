package main

import (
	"fmt"
	"net/http"
	"net/url"

	"github.com/spf13/cobra"
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
			raw, err := c.Do(cmd.Context(), http.MethodGet, "/v1/catalog", url.Values{"format": {format}}, nil, "")
			if err != nil {
				return err
			}
			_, err = cmd.OutOrStdout().Write(raw)
			return err
		},
	}
	cmd.Flags().StringVar(&format, "format", "yaml", "the document's format: yaml or json")
	return cmd
}
