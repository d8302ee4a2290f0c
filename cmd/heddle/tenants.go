package main

import (
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/spf13/cobra"

	"github.com/heddle-io/heddle/internal/access"
	"github.com/heddle-io/heddle/internal/api"
)

func newTenantsCommand(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "tenants",
		Aliases: []string{"tenant"},
		Short:   "Manage tenants (superadmin); export and import your own tenant's data (admin)",
	}
	cmd.AddCommand(newTenantsCreateCommand(a), newTenantsUpdateCommand(a), newTenantExportCommand(a), newTenantImportCommand(a),
		newTenantsListCommand(a), newTenantsShowCommand(a), newTenantsDeleteCommand(a))
	return cmd
}

func newTenantsCreateCommand(a *app) *cobra.Command {
	var req api.CreateTenantRequest
	cmd := &cobra.Command{
		Use:     "create ID --max-clusters N --max-nodes N --workers N --admin NAME",
		Short:   "Create a tenant and its first admin, and print the admin's API key",
		Example: `  heddle tenants create acme --max-clusters 10 --max-nodes 200 --workers 8 --admin alice`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			req.ID = args[0]
			return call(a, cmd, http.MethodPost, "/v1/tenants", req, func(out io.Writer, res *api.CreateTenantResponse) {
				t := res.Tenant
				fmt.Fprintf(out, "created tenant %s (max %d clusters, %d nodes; %d workers)\n", t.ID, t.MaxClusters, t.MaxNodes, t.Workers)
				if k := res.AdminKey; k != nil && k.Secret != "" {
					fmt.Fprintf(out, "\nThe API key of admin %s (key %s) is shown only now; keep it:\n\n  %s\n", k.User, k.ID, k.Secret)
				}
			})
		},
	}
	f := cmd.Flags()
	f.IntVar(&req.MaxClusters, "max-clusters", 0, "how many live clusters the tenant may have")
	f.IntVar(&req.MaxNodes, "max-nodes", 0, "how many nodes its clusters may have in all")
	f.IntVar(&req.Workers, "workers", 0, "how many of its tasks run at once")
	f.StringVar(&req.Admin, "admin", "", "the name of the tenant's first admin (their key is printed)")
	f.StringVar(&req.Description, "description", "", "what the tenant is for")
	for _, name := range []string{"max-clusters", "max-nodes", "workers", "admin"} {
		_ = cmd.MarkFlagRequired(name)
	}
	return cmd
}

func printTenants(w io.Writer, tenants []access.TenantView) {
	tw := newTable(w)
	fmt.Fprintf(tw, "TENANT\tCLUSTERS\tNODES\tWORKERS\tDESCRIPTION\n")
	for _, t := range tenants {
		fmt.Fprintf(tw, "%s\t%d/%d\t%d/%d\t%d\t%s\n", t.ID, t.Usage.Clusters, t.MaxClusters, t.Usage.Nodes, t.MaxNodes, t.Workers, dash(oneLine(t.Description, 50)))
	}
	_ = tw.Flush()
}

func newTenantsListCommand(a *app) *cobra.Command {
	var pf pageFlags
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List the tenants with what they use of their quotas (superadmin)",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			raw, err := pf.list(a, cmd, "/v1/tenants", url.Values{})
			if err != nil {
				return err
			}
			return printAnswer(a, cmd.OutOrStdout(), raw, func(w io.Writer, p *api.Page[access.TenantView]) {
				printTenants(w, p.Items)
				printMore(w, p.NextCursor)
			})
		},
	}
	pf.register(cmd, "tenants")
	return cmd
}

func newTenantsShowCommand(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "show ID",
		Short: "Show a tenant, its quotas and what it uses of them (anyone their own; the superadmin any)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return call(a, cmd, http.MethodGet, "/v1/tenants/"+pathEscape(args[0]), nil, func(w io.Writer, t *access.TenantView) {
				printTenants(w, []access.TenantView{*t})
			})
		},
	}
}

func newTenantsDeleteCommand(a *app) *cobra.Command {
	var yes bool
	cmd := &cobra.Command{
		Use:   "delete ID [--yes]",
		Short: "Delete a tenant with its users, keys and catalog (superadmin; refused while it has clusters)",
		Long: `Delete a tenant: its users, keys, catalog and queues go, and its keys stop
working at once. A tenant with clusters is refused; delete them first. On a
terminal it asks first; elsewhere it needs --yes.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := confirm(cmd, yes, fmt.Sprintf("delete tenant %s with its users, keys and catalog?", args[0])); err != nil {
				return err
			}
			c, err := a.client(cmd)
			if err != nil {
				return err
			}
			if _, err := c.Do(cmd.Context(), http.MethodDelete, "/v1/tenants/"+pathEscape(args[0]), nil, nil, ""); err != nil {
				return err
			}
			if !a.jsonOut() {
				fmt.Fprintf(cmd.OutOrStdout(), "deleted tenant %s\n", args[0])
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&yes, "yes", false, "delete without asking")
	return cmd
}
