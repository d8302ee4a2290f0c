package main

import (
	"fmt"
	"io"
	"net/url"
	"strings"

	"github.com/spf13/cobra"

	"github.com/heddle-io/heddle/client"
	"github.com/heddle-io/heddle/internal/usage"
)

func newUsageCommand(a *app) *cobra.Command {
	var from, to, groupBy, step, tenant string
	cmd := &cobra.Command{
		Use:   "usage",
		Short: "Node-hours over a range, grouped by tenant, user, cluster, template or hardware type",
		Long: `Show node-hours per group, per day or hour: your own clusters for a user, the
tenant for an admin, every tenant for the superadmin. A node counts from when
it was planned until it was deleted. On a terminal each group gets a bar.`,
		Example: `  heddle usage
  heddle usage --group-by user --step hour --from 2026-11-24T00:00:00Z
  heddle usage --group-by template -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.client(cmd)
			if err != nil {
				return err
			}
			q := url.Values{"groupBy": {groupBy}, "step": {step}}
			for k, v := range map[string]string{"from": from, "to": to, "tenant": tenant} {
				if v != "" {
					q.Set(k, v)
				}
			}
			raw, err := c.Do(cmd.Context(), "GET", "/v1/usage", q, nil, "")
			if err != nil {
				return err
			}
			bars := isTerminal(cmd.OutOrStdout())
			var names map[string]string
			if groupBy == string(usage.ByCluster) && !a.jsonOut() {
				// The report groups by id; a person knows clusters by name.
				// A cluster of another tenant (the superadmin's report) has
				// none here and shows "-".
				names = map[string]string{}
				for cl, err := range c.Clusters(cmd.Context(), client.ClusterFilter{All: true}) {
					if err != nil {
						return err
					}
					names[cl.ID] = cl.Name
				}
			}
			return printAnswer(a, cmd.OutOrStdout(), raw, func(w io.Writer, r *usage.Report) { printUsage(w, r, bars, names) })
		},
	}
	f := cmd.Flags()
	f.StringVar(&from, "from", "", "start, RFC 3339 (default: seven days before --to)")
	f.StringVar(&to, "to", "", "end, RFC 3339 (default: now)")
	f.StringVar(&groupBy, "group-by", "cluster", "tenant, user, cluster, template or hardwareType")
	f.StringVar(&step, "step", "day", "hour or day")
	f.StringVar(&tenant, "tenant", "", "one tenant (superadmin)")
	return cmd
}

// printUsage prints a row per group with its total and, with bars, a bar
// scaled to the largest total; with names (clusters by id) a NAME column
// follows the group's.
func printUsage(w io.Writer, r *usage.Report, bars bool, names map[string]string) {
	fmt.Fprintf(w, "node-hours from %s to %s by %s, per %s\n", r.From.Format("2006-01-02 15:04"), r.To.Format("2006-01-02 15:04"), r.GroupBy, r.Step)
	if len(r.Rows) == 0 {
		fmt.Fprintln(w, "no usage in this range")
		return
	}
	const width = 30
	top := r.Rows[0].Total // rows come largest first
	tw := newTable(w)
	head := strings.ToUpper(string(r.GroupBy))
	if names != nil {
		head += "\tNAME"
	}
	fmt.Fprintf(tw, "%s\tNODE-HOURS\t\n", head)
	for _, row := range r.Rows {
		bar := ""
		if bars && top > 0 {
			bar = strings.Repeat("█", max(1, int(row.Total/top*width+0.5)))
		}
		group := row.Group
		if names != nil {
			group += "\t" + dash(names[row.Group])
		}
		fmt.Fprintf(tw, "%s\t%.2f\t%s\n", group, row.Total, bar)
	}
	_ = tw.Flush()
}
