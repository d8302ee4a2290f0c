package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/heddle-io/heddle/client"
	"github.com/heddle-io/heddle/internal/api"
	"github.com/heddle-io/heddle/internal/desired"
	"github.com/heddle-io/heddle/internal/domain"
)

// convergeFlags are what apply and diff take for declared clusters.
type convergeFlags struct {
	prune, yes, adopt bool
}

func (f *convergeFlags) register(cmd *cobra.Command, apply bool) {
	cmd.Flags().BoolVar(&f.prune, "prune", false, "delete the clusters apply manages that the document no longer declares")
	cmd.Flags().BoolVar(&f.adopt, "adopt", false, "take over declared clusters that exist but apply did not make")
	if apply {
		cmd.Flags().BoolVar(&f.yes, "yes", false, "delete what --prune finds without asking")
	}
}

func newDiffCommand(a *app) *cobra.Command {
	var (
		file string
		f    convergeFlags
	)
	cmd := &cobra.Command{
		Use:   "diff -f FILE",
		Short: "Show what heddle apply -f FILE would do to your clusters, changing nothing",
		Long: `Plan what heddle apply would do with the clusters the document declares and
show each operation as the preview its dry run gives. Nothing is changed.
The document's catalog part is not previewed: the dry runs use the catalog
as it is now.`,
		Example: `  heddle diff -f docs/examples/clusters.yaml --prune`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			data, err := readDocument(cmd.InOrStdin(), file)
			if err != nil {
				return err
			}
			doc, err := parseDesired(data)
			if err != nil {
				return err
			}
			if !doc.Declared {
				return errors.New("the document declares no clusters (a clusters list); diff compares declared clusters with yours")
			}
			c, err := a.client(cmd)
			if err != nil {
				return err
			}
			return a.converge(cmd, c, doc, f, true)
		},
	}
	cmd.Flags().StringVarP(&file, "file", "f", "", "the document (.yaml, .yml or .json; - for stdin)")
	_ = cmd.MarkFlagRequired("file")
	f.register(cmd, false)
	return cmd
}

// parseDesired reads a document's clusters; its problems come back as the
// API's would, by field.
func parseDesired(data []byte) (*desired.Document, error) {
	doc, err := desired.Parse(data)
	var ps domain.Problems
	if errors.As(err, &ps) {
		return nil, &APIError{ErrorDetail: api.ErrorDetail{Status: http.StatusUnprocessableEntity, Code: "invalid",
			Message: "the document is not valid; nothing was changed", Details: ps}}
	}
	return doc, err
}

// stepReport is one step of apply or diff as -o json prints it.
type stepReport struct {
	desired.Step
	Preview      *client.Result `json:"preview,omitempty"`
	PreviewError string         `json:"previewError,omitempty"`
	Job          *client.Job    `json:"job,omitempty"`
}

// convergeReport is what apply and diff print with -o json.
type convergeReport struct {
	Catalog   *client.ImportResult `json:"catalog,omitempty"`
	Steps     []stepReport         `json:"steps"`
	Unchanged []string             `json:"unchanged"`
	DryRun    bool                 `json:"dryRun,omitempty"`
}

// converge plans the document's clusters against the tenant's (refusing,
// with nothing changed, what apply may not touch), imports the document's
// catalog part (the dry runs then see it), previews every step as a dry run
// and, unless dryRun, runs them: cluster by cluster, one job at a time,
// planning again after each.
func (a *app) converge(cmd *cobra.Command, c *Client, doc *desired.Document, f convergeFlags, dryRun bool) error {
	ctx := cmd.Context()
	out := cmd.OutOrStdout()
	if a.jsonOut() {
		out = io.Discard
	}
	report := convergeReport{Steps: []stepReport{}, DryRun: dryRun}
	current, err := client.Collect(c.Clusters(ctx, client.ClusterFilter{}))
	if err != nil {
		return err
	}
	plan := desired.Compute(doc.Clusters, current, desired.Options{Prune: f.prune, Adopt: f.adopt})
	if len(plan.Problems) > 0 {
		return &APIError{ErrorDetail: api.ErrorDetail{Status: http.StatusConflict, Code: "conflict",
			Message: "apply would touch clusters it may not; nothing was changed", Details: plan.Problems}}
	}
	report.Unchanged = append(report.Unchanged, plan.Unchanged...)
	// What an error from here on may say was left alone.
	nothing := "nothing was changed"
	if doc.Catalog != nil {
		if dryRun {
			fmt.Fprintln(out, "catalog: not previewed (heddle apply imports it; the dry runs below use the catalog as it is)")
		} else {
			res, err := c.ImportCatalog(ctx, doc.Catalog, "application/json")
			if err != nil {
				return err
			}
			report.Catalog = res
			nothing = "no cluster was changed (the document's catalog part was imported)"
			fmt.Fprint(out, "catalog: ")
			printImport(out, res)
		}
	}
	previewed := map[string]bool{}
	for _, s := range plan.Steps {
		r := stepReport{Step: s}
		fmt.Fprintf(out, "\n%s\n", s)
		if s.Kind != desired.Adopt {
			res, err := sendStep(ctx, c, s, client.Mutate{DryRun: true})
			switch {
			case err != nil && !previewed[s.Name]:
				return fmt.Errorf("the dry run of %q failed, so %s: %w", s.String(), nothing, err)
			case err != nil:
				// It runs on the cluster as the steps before it leave it.
				r.PreviewError = err.Error()
				fmt.Fprintf(out, "  previewed once the steps before it ran; as the cluster is now: %v\n", err)
			default:
				r.Preview = res
				printPreview(out, res)
			}
			previewed[s.Name] = true
		} else {
			fmt.Fprintln(out, "  no job: the cluster is marked, nothing else changes")
		}
		report.Steps = append(report.Steps, r)
	}
	for _, name := range plan.Unchanged {
		fmt.Fprintf(out, "\n%s: as declared, nothing to do\n", name)
	}
	fmt.Fprintf(out, "\n%s\n", planSummary(plan))
	if dryRun || len(plan.Steps) == 0 {
		if a.jsonOut() {
			return printValue(a, cmd.OutOrStdout(), nil, &report, func(io.Writer, *convergeReport) {})
		}
		return nil
	}
	if err := confirmPrune(cmd, plan, f.yes, nothing); err != nil {
		return err
	}
	jobs, err := a.runPlan(cmd, c, doc, plan, current, f, out)
	for i := range report.Steps {
		report.Steps[i].Job = jobs[i]
	}
	if err != nil {
		return err
	}
	if a.jsonOut() {
		return printValue(a, cmd.OutOrStdout(), nil, &report, func(io.Writer, *convergeReport) {})
	}
	fmt.Fprintln(out, "applied: the clusters are as declared")
	return nil
}

func planSummary(p desired.Plan) string {
	counts := map[desired.Kind]int{}
	changed := map[string]bool{}
	for _, s := range p.Steps {
		counts[s.Kind]++
		if s.Kind != desired.Create && s.Kind != desired.Delete {
			changed[s.Name] = true
		}
	}
	return fmt.Sprintf("plan: %d to create, %d to change, %d to delete, %d unchanged",
		counts[desired.Create], len(changed), counts[desired.Delete], len(p.Unchanged))
}

// sendStep sends one step to the API.
func sendStep(ctx context.Context, c *Client, s desired.Step, m client.Mutate) (*client.Result, error) {
	switch s.Kind {
	case desired.Create:
		return c.CreateCluster(ctx, s.Request.(client.CreateRequest), m)
	case desired.Delete:
		return c.DeleteCluster(ctx, s.ClusterID, false, m)
	case desired.Adopt:
		cl, err := c.Manage(ctx, s.ClusterID, s.Request.(client.ManageRequest))
		if err != nil {
			return nil, err
		}
		return &client.Result{Cluster: *cl}, nil
	}
	return c.Mutation(ctx, s.ClusterID, string(s.Kind), s.Request, m)
}

// confirmPrune asks before --prune deletes, unless --yes: on a terminal it
// asks; elsewhere it refuses.
func confirmPrune(cmd *cobra.Command, p desired.Plan, yes bool, nothing string) error {
	var names []string
	for _, s := range p.Steps {
		if s.Kind == desired.Delete {
			names = append(names, fmt.Sprintf("%s (%s)", s.Name, s.ClusterID))
		}
	}
	if len(names) == 0 || yes {
		return nil
	}
	list := strings.Join(names, ", ")
	in, ok := cmd.InOrStdin().(*os.File)
	if !ok || !term.IsTerminal(int(in.Fd())) {
		return fmt.Errorf("--prune would delete %s; %s: pass --yes to delete them (there is no terminal to ask on)", list, nothing)
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "delete %s? [y/N] ", list)
	// The answer is read aside so that a cancelled command (Ctrl-C, where
	// the CLI turns it into a cancel) stops here too, deleting nothing.
	answers := make(chan string, 1)
	go func() {
		a, _ := bufio.NewReader(in).ReadString('\n')
		answers <- a
	}()
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	var answer string
	select {
	case answer = <-answers:
	case <-ctx.Done():
		fmt.Fprintln(cmd.ErrOrStderr())
		return fmt.Errorf("%s: interrupted before the deletes were confirmed", nothing)
	}
	if a := strings.ToLower(strings.TrimSpace(answer)); a != "y" && a != "yes" {
		return fmt.Errorf("%s: the deletes were not confirmed", nothing)
	}
	return nil
}

// maxRounds bounds the steps apply runs on one cluster: a plan that does
// not shrink after its steps ran (the server does other than asked) is
// reported rather than tried forever.
const maxRounds = 10

// runPlan runs the plan's steps. Each declared cluster is planned again
// before each step, from the cluster as the last job left it, so the steps
// that run are those the cluster still needs. It returns, for each step of
// the plan, the job that carried it out, nil where none ran.
func (a *app) runPlan(cmd *cobra.Command, c *Client, doc *desired.Document, plan desired.Plan, current []domain.Cluster, f convergeFlags, out io.Writer) ([]*client.Job, error) {
	ctx := cmd.Context()
	jobs := make([]*client.Job, len(plan.Steps))
	record := func(s desired.Step, j *client.Job) {
		for i, ps := range plan.Steps {
			if jobs[i] == nil && ps.Name == s.Name && ps.Kind == s.Kind {
				jobs[i] = j
				return
			}
		}
	}
	ids := map[string]string{}
	for _, cl := range current {
		if !cl.Status.Terminal() {
			ids[cl.Name] = cl.ID
		}
	}
	for i, d := range doc.Clusters {
		if !declaresName(plan.Steps, d.Name) {
			continue
		}
		for round := 0; ; round++ {
			var e *domain.Cluster
			if id := ids[d.Name]; id != "" {
				v, err := c.GetCluster(ctx, id)
				if err != nil {
					return jobs, err
				}
				if v.ActiveJobID != "" {
					fmt.Fprintf(out, "%s: waiting for its job %s\n", d.Name, v.ActiveJobID)
					if _, err := a.waitStep(cmd, c, v.ID, v.ActiveJobID, out); err != nil {
						return jobs, err
					}
					continue
				}
				e = &v.Cluster
			}
			steps, ps := desired.ForCluster(i, d, e, f.adopt)
			if len(ps) > 0 {
				return jobs, &APIError{ErrorDetail: api.ErrorDetail{Status: http.StatusConflict, Code: "conflict", Message: "apply stopped", Details: ps}}
			}
			if len(steps) == 0 {
				break
			}
			if round >= maxRounds {
				return jobs, fmt.Errorf("cluster %s is still not as declared after %d steps (next: %s); see heddle clusters show %s", d.Name, maxRounds, steps[0], ids[d.Name])
			}
			j, id, err := a.runStep(cmd, c, steps[0], out)
			if id != "" {
				ids[d.Name] = id
			}
			record(steps[0], j)
			if err != nil {
				return jobs, err
			}
		}
	}
	for _, s := range plan.Steps {
		if s.Kind == desired.Delete {
			j, _, err := a.runStep(cmd, c, s, out)
			record(s, j)
			if err != nil {
				return jobs, err
			}
		}
	}
	return jobs, nil
}

func declaresName(steps []desired.Step, name string) bool {
	for _, s := range steps {
		if s.Name == name && s.Kind != desired.Delete {
			return true
		}
	}
	return false
}

// runStep sends one step and waits for its job; it returns the job as it
// ended and the cluster's id.
func (a *app) runStep(cmd *cobra.Command, c *Client, s desired.Step, out io.Writer) (*client.Job, string, error) {
	fmt.Fprintf(out, "%s: ", s)
	res, err := sendStep(cmd.Context(), c, s, client.Mutate{})
	if err != nil {
		fmt.Fprintln(out, "refused")
		return nil, "", err
	}
	if res.Job == nil {
		fmt.Fprintln(out, "done")
		return nil, res.Cluster.ID, nil
	}
	fmt.Fprintf(out, "job %s\n", res.Job.ID)
	j, err := a.waitStep(cmd, c, res.Cluster.ID, res.Job.ID, out)
	return j, res.Cluster.ID, err
}

// waitStep waits for a job and prints how it ended; a job that did not
// succeed is reported as jobs watch reports it and stops apply.
func (a *app) waitStep(cmd *cobra.Command, c *Client, clusterID, jobID string, out io.Writer) (*client.Job, error) {
	ctx := cmd.Context()
	v, err := c.WaitJob(ctx, clusterID, jobID, client.WaitOptions{
		Interval: pollInterval, MaxInterval: 4 * pollInterval, MaxFailures: watchTransientErrors,
		OnRetry: func(err error) { fmt.Fprintf(cmd.ErrOrStderr(), "heddle: %v (trying again)\n", err) },
	})
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(out, "  job %s %s: %d/%d tasks in %s\n", v.ID, v.Status, v.TaskDone, v.TaskTotal, jobDuration(&v.Job, time.Now()))
	if v.Status == client.JobSucceeded {
		return &v.Job, nil
	}
	reportFailure(cmd.ErrOrStderr(), v, func(id string) (*domain.Task, error) { return c.GetTask(ctx, clusterID, jobID, id) })
	return &v.Job, &exitError{code: 1}
}
