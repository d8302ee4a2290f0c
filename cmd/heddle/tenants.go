package main

import (
	"fmt"
	"io"
	"net/http"

	"github.com/spf13/cobra"

	"github.com/heddle-io/heddle/internal/api"
)

func newTenantsCommand(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "tenants",
		Aliases: []string{"tenant"},
		Short:   "Manage tenants (superadmin); export and import your own tenant's data (admin)",
	}
	cmd.AddCommand(newTenantsCreateCommand(a), newTenantsUpdateCommand(a), newTenantExportCommand(a), newTenantImportCommand(a))
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
