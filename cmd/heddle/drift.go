package main

import (
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/spf13/cobra"

	"github.com/heddle-io/heddle/internal/cluster"
	"github.com/heddle-io/heddle/internal/domain"
)

// exitDrifted is the exit status of `clusters drift --wait` and `--last`
// when some node drifted: a script can act on it without parsing output.
const exitDrifted = 2

func newClustersDriftCommand(a *app) *cobra.Command {
	var (
		m    mutationFlags
		last bool
	)
	cmd := &cobra.Command{
		Use:   "drift ID",
		Short: "Check a cluster for drift: compare heddle's record with the real machines, services and configs",
		Long: `Start a drift check of the cluster, a read-only job: every active node is
probed (the provider's view of its machine where it can tell, then one SSH
command with the pinned host key: unreachable, host key changed, rebooted),
every service heddle recorded running or stopped runs its check action, and
every service's last applied configuration is compared with what the
cluster's definition renders now. With --wait the command watches the job,
then prints the report; --last prints the latest report without starting a
check. Both exit 2 when some node drifted.`,
		Example: `  heddle clusters drift c-1a2b3c --wait
  heddle clusters drift c-1a2b3c --last`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !last {
				if err := a.submit(cmd, http.MethodPost, clusterPath(args[0], "drift"), struct{}{}, m, nil); err != nil || !m.wait {
					return err
				}
			}
			c, err := a.client(cmd)
			if err != nil {
				return err
			}
			raw, err := c.Do(cmd.Context(), http.MethodGet, clusterPath(args[0]), nil, nil, "")
			if err != nil {
				return err
			}
			cl, err := decodeBody[domain.Cluster](raw)
			if err != nil {
				return err
			}
			if a.jsonOut() {
				if err := printJSON(cmd.OutOrStdout(), mustMarshal(cl.Drift)); err != nil {
					return err
				}
			} else {
				printDrift(cmd.OutOrStdout(), cl.Drift)
			}
			if cl.Drift != nil && cl.Drift.Drifted > 0 {
				return &exitError{code: exitDrifted}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&m.wait, "wait", false, "watch the drift check until it ends, then print the report")
	cmd.Flags().BoolVar(&last, "last", false, "print the latest report; start no check")
	cmd.MarkFlagsMutuallyExclusive("wait", "last")
	return cmd
}

// printDrift renders the latest drift check: a summary line and one line
// per finding.
func printDrift(w io.Writer, d *domain.ClusterDrift) {
	if d == nil {
		fmt.Fprintln(w, "drift    not checked yet: heddle clusters drift ID")
		return
	}
	fmt.Fprintf(w, "drift    %s (checked %s by job %s)\n", driftSummary(d), humanTime(d.At), d.JobID)
	for _, f := range d.Findings {
		fmt.Fprintf(w, "  %s %s %s since %s: %s\n", f.Node, dash(f.Service), f.Kind, humanTime(f.Since), dash(firstLine(f.Detail)))
	}
}

func driftSummary(d *domain.ClusterDrift) string {
	if d.Drifted == 0 {
		return fmt.Sprintf("none (%d nodes checked)", d.Nodes)
	}
	var parts []string
	for _, k := range domain.DriftKinds {
		if n := d.Counts[k]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, k))
		}
	}
	return fmt.Sprintf("%d of %d nodes drifted (%s)", d.Drifted, d.Nodes, strings.Join(parts, ", "))
}

func newClustersRepairCommand(a *app) *cobra.Command {
	var req cluster.RepairRequest
	cmd := newMutationCommand(a, "repair", "repair ID",
		"Repair what the latest drift check found: replace lost nodes, or restart stopped services and reconfigure stale nodes (within the template's maxUnhealthy)", &req, nil)
	cmd.Flags().StringSliceVar(&req.Nodes, "nodes", nil, "the drifted nodes to repair (default: all)")
	return cmd
}
