package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/heddle-io/heddle/client"
)

// newTenantsUpdateCommand is PUT /v1/tenants/{id} for a person: the route
// writes every field, so the command reads the tenant, changes what the
// flags name and writes it back under the version it read (a tenant changed
// in between is refused, not overwritten). With no flag it writes the
// tenant back as it is, which is how an onboarding that failed (the
// tenant's queue or worker mapping on AWS) is finished.
func newTenantsUpdateCommand(a *app) *cobra.Command {
	var (
		maxClusters, maxNodes, workers int
		description                    string
	)
	cmd := &cobra.Command{
		Use:   "update ID [--max-clusters N] [--max-nodes N] [--workers N] [--description TEXT]",
		Short: "Change a tenant's quotas, worker count or description (superadmin); with no flag, finish its onboarding",
		Long: `Change what the flags name and leave the rest as it is. A quota may not drop
below what the tenant uses (the answer names the field and the least value).
With no flag the tenant is written back unchanged: that retries its queue and
worker mapping when creating or changing it said they could not be made.`,
		Example: `  heddle tenants update acme --max-clusters 10 --max-nodes 200
  heddle tenants update acme --workers 8
  heddle tenants update acme`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client(cmd)
			if err != nil {
				return err
			}
			var ans answer
			ctx := ans.keep(cmd.Context())
			cur, err := c.GetTenant(ctx, args[0])
			if err != nil {
				return err
			}
			next := cur.Tenant
			f := cmd.Flags()
			if f.Changed("max-clusters") {
				next.MaxClusters = maxClusters
			}
			if f.Changed("max-nodes") {
				next.MaxNodes = maxNodes
			}
			if f.Changed("workers") {
				next.Workers = workers
			}
			if f.Changed("description") {
				next.Description = description
			}
			v, err := c.UpdateTenant(ctx, args[0], next)
			if err != nil {
				return err
			}
			return printValue(a, cmd.OutOrStdout(), &ans, v, func(w io.Writer, t *client.Tenant) {
				fmt.Fprintf(w, "updated tenant %s to version %d: max %d clusters (%d used), %d nodes (%d used); %d workers\n",
					t.ID, t.Version, t.MaxClusters, t.Usage.Clusters, t.MaxNodes, t.Usage.Nodes, t.Workers)
			})
		},
	}
	f := cmd.Flags()
	f.IntVar(&maxClusters, "max-clusters", 0, "how many live clusters the tenant may have (not below what it has)")
	f.IntVar(&maxNodes, "max-nodes", 0, "how many nodes its clusters may have in all (not below what they have)")
	f.IntVar(&workers, "workers", 0, "how many of its tasks run at once (0 to 1000)")
	f.StringVar(&description, "description", "", "what the tenant is for")
	return cmd
}
