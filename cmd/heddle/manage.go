package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/heddle-io/heddle/client"
	"github.com/heddle-io/heddle/internal/domain"
)

func newClustersManageCommand(a *app) *cobra.Command {
	var by string
	cmd := &cobra.Command{
		Use:   "manage CLUSTER --by TOOL",
		Short: `Mark which tool owns a cluster's desired state ("apply"), or hand it back to people with --by ""`,
		Long: `Set the cluster's managedBy mark. heddle apply changes, and with --prune
deletes, only clusters marked "apply" (the ones it made, or took over with
--adopt); --by "" clears the mark, so apply leaves the cluster alone.`,
		Example: `  heddle clusters manage c-1a2b3c --by apply
  heddle clusters manage c-1a2b3c --by ""`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client(cmd)
			if err != nil {
				return err
			}
			var ans answer
			cl, err := c.Manage(ans.keep(cmd.Context()), args[0], client.ManageRequest{ManagedBy: by})
			if err != nil {
				return err
			}
			return printValue(a, cmd.OutOrStdout(), &ans, cl, func(w io.Writer, cl *domain.Cluster) {
				fmt.Fprintf(w, "cluster %s (%s): managed by %s\n", cl.ID, cl.Name, dash(cl.ManagedBy))
			})
		},
	}
	cmd.Flags().StringVar(&by, "by", "", `the managing tool ("apply"), or "" for none`)
	_ = cmd.MarkFlagRequired("by")
	return cmd
}
