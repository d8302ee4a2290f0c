package main

import (
	"fmt"
	"io"
	"net/url"

	"github.com/spf13/cobra"

	"github.com/heddle-io/heddle/internal/api"
	"github.com/heddle-io/heddle/internal/audit"
)

func newAuditCommand(a *app) *cobra.Command {
	var tenant string
	var pf pageFlags
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "Show who changed what in your tenant, newest first (admin)",
		Long: `Show the audit records of your tenant, newest first: every change asked of
the API (catalog, tenants, users, keys, clusters, jobs), refused and failed
ones included, with who asked, the request id and the outcome. A superadmin
reads another tenant's with --tenant.`,
		Example: `  heddle audit
  heddle audit --all -o json > audit.json
  heddle audit --tenant acme   # superadmin`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			q := url.Values{}
			if tenant != "" {
				q.Set("tenant", tenant)
			}
			raw, err := pf.list(a, cmd, "/v1/audit", q)
			if err != nil {
				return err
			}
			return printAnswer(a, cmd.OutOrStdout(), raw, func(w io.Writer, page *api.Page[audit.Record]) {
				printAudit(w, page)
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&tenant, "tenant", "", "another tenant's records (superadmin)")
	pf.register(cmd, "records")
	return cmd
}

func printAudit(w io.Writer, page *api.Page[audit.Record]) {
	if len(page.Items) == 0 {
		fmt.Fprintln(w, "no audit records")
		return
	}
	tw := newTable(w)
	fmt.Fprintln(tw, "WHEN\tUSER\tKEY\tREQUEST\tOUTCOME\tREQUEST ID")
	for _, r := range page.Items {
		outcome := fmt.Sprintf("%s %d", r.Outcome, r.Status)
		if r.Code != "" {
			outcome += " " + r.Code
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s %s\t%s\t%s\n", humanTime(r.At), r.User, dash(r.KeyID), r.Method, r.Path, outcome, r.RequestID)
	}
	_ = tw.Flush()
	printMore(w, page.NextCursor)
}
