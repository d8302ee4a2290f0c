package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/heddle-io/heddle/client"
	"github.com/heddle-io/heddle/internal/api"
	"github.com/heddle-io/heddle/internal/cluster"
	"github.com/heddle-io/heddle/internal/domain"
)

// The difference between two revisions is `heddle clusters history NAME
// --from 3 --to 5`, not a `diff` command: `heddle diff` already compares
// a desired-state file with the live clusters, and a second "diff" that
// compares a cluster with its own past would read as the same thing.
// Reading two points of a cluster's history is a view of its history.

func newClustersHistoryCommand(a *app) *cobra.Command {
	var (
		pf       pageFlags
		from, to int64
	)
	cmd := &cobra.Command{
		Use:   "history CLUSTER [--from N --to M]",
		Short: "List a cluster's revisions, newest first, or what changed between two of them",
		Long: `List a cluster's revisions, newest first: one per change of its definition
(create, expand, shrink, add-services, remove-services, reconfigure with a
new config, sync), with its job, who made it, when and a digest of the
definition; "*" marks the current one, and withdrawn ones (their job was
withdrawn before it started) never took effect. With --from and --to it
prints what changed from one revision to the other: template version,
services, config and size.`,
		Example: `  heddle clusters history web
  heddle clusters history web --from 1 --to 3`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if (from == 0) != (to == 0) {
				return fmt.Errorf("give both --from and --to to compare two revisions")
			}
			if from != 0 {
				return a.revisionDiff(cmd, args[0], from, to)
			}
			raw, err := pf.list(a, cmd, clusterPath(args[0], "revisions"), url.Values{})
			if err != nil {
				return err
			}
			c, err := a.client(cmd)
			if err != nil {
				return err
			}
			cl, err := c.GetCluster(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return printAnswer(a, cmd.OutOrStdout(), raw, func(w io.Writer, page *api.Page[domain.Revision]) {
				printRevisions(w, page.Items, cl.Cluster.Revision)
				printMore(w, page.NextCursor)
			})
		},
	}
	pf.register(cmd, "revisions")
	cmd.Flags().Int64Var(&from, "from", 0, "with --to: the revision to compare from")
	cmd.Flags().Int64Var(&to, "to", 0, "with --from: the revision to compare to")
	cmd.MarkFlagsRequiredTogether("from", "to")
	return cmd
}

func printRevisions(w io.Writer, revs []domain.Revision, current int64) {
	fmt.Fprintf(w, "%-4s %-8s %-16s %-20s %-10s %-5s %s\n", "REV", "", "OPERATION", "AT", "BY", "SIZE", "DIGEST")
	for _, r := range revs {
		mark := ""
		switch {
		case r.Number == current:
			mark = "*"
		case r.Withdrawn:
			mark = "withdrawn"
		}
		op := string(r.Operation)
		if r.RollbackOf != 0 {
			op = fmt.Sprintf("%s (rollback to %d)", op, r.RollbackOf)
		}
		fmt.Fprintf(w, "%-4d %-8s %-16s %-20s %-10s %-5d %s\n", r.Number, mark, op, r.At.UTC().Format(time.RFC3339), r.By, r.Def.Size, shortDigest(r.Digest))
	}
}

func shortDigest(d string) string {
	d = strings.TrimPrefix(d, "sha256:")
	if len(d) > 12 {
		return d[:12]
	}
	return d
}

func (a *app) revisionDiff(cmd *cobra.Command, clusterID string, from, to int64) error {
	c, err := a.client(cmd)
	if err != nil {
		return err
	}
	get := func(n int64) (*domain.Revision, error) { return c.GetRevision(cmd.Context(), clusterID, n) }
	a1, err := get(from)
	if err != nil {
		return err
	}
	b1, err := get(to)
	if err != nil {
		return err
	}
	changes := revisionChanges(a1.Def, b1.Def)
	return printValue(a, cmd.OutOrStdout(), nil, &revisionDiffView{From: from, To: to, Changes: changes}, func(w io.Writer, v *revisionDiffView) {
		fmt.Fprintf(w, "revision %d -> %d\n", from, to)
		if len(changes) == 0 {
			fmt.Fprintln(w, "  no change: the same definition")
		}
		for _, ch := range changes {
			fmt.Fprintf(w, "  %s\n", ch)
		}
	})
}

type revisionDiffView struct {
	From    int64    `json:"from"`
	To      int64    `json:"to"`
	Changes []string `json:"changes"`
}

// revisionChanges is what changed from definition a to b, one line each.
func revisionChanges(a, b domain.ClusterDefinition) []string {
	var out []string
	if a.Template != b.Template {
		out = append(out, fmt.Sprintf("template  %s v%d -> %s v%d", a.Template.Name, a.Template.Version, b.Template.Name, b.Template.Version))
	}
	for _, s := range b.Services {
		if !slices.Contains(a.Services, s) {
			out = append(out, "service   + "+s)
		}
	}
	for _, s := range a.Services {
		if !slices.Contains(b.Services, s) {
			out = append(out, "service   - "+s)
		}
	}
	if ca, cb := domain.CanonicalJSON(a.Config), domain.CanonicalJSON(b.Config); !bytes.Equal(ca, cb) {
		out = append(out, fmt.Sprintf("config    %s -> %s", orNone(ca), orNone(cb)))
	}
	if a.Size != b.Size {
		out = append(out, fmt.Sprintf("size      %d -> %d", a.Size, b.Size))
	}
	return out
}

func orNone(b []byte) string {
	if len(b) == 0 {
		return "(none)"
	}
	return string(b)
}

// maxRollbackSteps bounds the rollback loop: a plan has at most five
// steps (remove-services, sync, add-services, reconfigure, size), and each
// step removes one difference for good.
const maxRollbackSteps = 5

func newClustersRollbackCommand(a *app) *cobra.Command {
	var (
		req    cluster.RollbackRequest
		dryRun bool
	)
	cmd := &cobra.Command{
		Use:   "rollback CLUSTER --to N",
		Short: "Bring a cluster's definition back to an earlier revision",
		Long: `Bring a cluster's definition (template version, services, config, size)
back to revision N. The server plans the steps (remove-services, sync,
add-services, reconfigure, expand or shrink, only those needed, in that
order) and runs one at a time as an ordinary job that records a new
revision; this command runs them all, watching each job, until nothing
differs. --dry-run previews the first step and lists the plan.`,
		Example: `  heddle clusters rollback web --to 1 --dry-run
  heddle clusters rollback web --to 1`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client(cmd)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			send := func(ctx context.Context) (*client.Result, error) {
				return c.Rollback(ctx, args[0], req, client.Mutate{DryRun: dryRun})
			}
			for step := 0; ; step++ {
				var ans answer
				res, err := send(ans.keep(cmd.Context()))
				if err != nil {
					return err
				}
				if dryRun || res.Rollback == nil || res.Rollback.Done || res.Job == nil {
					return printValue(a, out, &ans, res, func(w io.Writer, res *client.Result) { printRollback(w, res) })
				}
				if step == maxRollbackSteps {
					return fmt.Errorf("the rollback to revision %d still has steps after %d jobs: %s", req.Revision, step, stepNames(res.Rollback.Steps))
				}
				if !a.jsonOut() {
					fmt.Fprintf(out, "step %d: %s (job %s); left after it: %s\n", step+1, stepName(res.Rollback.Steps[0]), res.Job.ID, stepNames(res.Rollback.Steps[1:]))
				}
				if err := a.watch(cmd, c, res.Cluster.ID, res.Job.ID); err != nil {
					return err
				}
			}
		},
	}
	f := cmd.Flags()
	f.Int64Var(&req.Revision, "to", 0, "the revision to go back to (heddle clusters history)")
	f.BoolVar(&req.Restart, "restart", false, "restart the services whose configuration a step changes")
	f.BoolVar(&dryRun, "dry-run", false, "preview the first step and list the plan; change nothing")
	_ = cmd.MarkFlagRequired("to")
	return cmd
}

func printRollback(w io.Writer, res *client.Result) {
	rb := res.Rollback
	if rb == nil {
		printSubmitted(w, res, false)
		return
	}
	if rb.Done {
		fmt.Fprintf(w, "cluster %s is at revision %d's definition (digest %s), as revision %d\n", res.Cluster.Name, rb.To, shortDigest(rb.Digest), res.Cluster.Revision)
		return
	}
	fmt.Fprintf(w, "rollback to revision %d: %s\n", rb.To, stepNames(rb.Steps))
	if res.DryRun {
		fmt.Fprintf(w, "first step, %s:\n", stepName(rb.Steps[0]))
		printPreview(w, res)
	}
}

func stepName(s cluster.RollbackStep) string {
	switch {
	case len(s.Services) > 0:
		return fmt.Sprintf("%s %s", s.Operation, strings.Join(s.Services, ","))
	case s.TemplateVersion != 0:
		return fmt.Sprintf("%s to template version %d", s.Operation, s.TemplateVersion)
	case s.Count != 0:
		return fmt.Sprintf("%s by %d", s.Operation, s.Count)
	}
	return string(s.Operation) + " config"
}

func stepNames(steps []cluster.RollbackStep) string {
	if len(steps) == 0 {
		return "nothing"
	}
	names := make([]string, len(steps))
	for i, s := range steps {
		names[i] = stepName(s)
	}
	return strings.Join(names, ", then ")
}
