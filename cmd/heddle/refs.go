package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/heddle-io/heddle/client"
	"github.com/heddle-io/heddle/internal/domain"
)

// A command's arguments that name a cluster take its id or its name, and
// an argument that names one of its jobs takes an id or "latest": the root
// command resolves them (resolveRefs) before the command runs, so every
// command sends ids to the API. The annotations say which arguments they
// are.
const (
	clusterArgKey = "heddle/cluster-arg"
	jobArgKey     = "heddle/job-arg"
)

// latestJob names a cluster's newest job wherever a JOB argument is taken.
const latestJob = "latest"

// clusterArgs marks cmd's argument clusterAt as naming a cluster and, when
// jobAt >= 0, argument jobAt as naming one of its jobs; the shell completes
// the cluster's argument with the names of the caller's clusters.
func clusterArgs(a *app, cmd *cobra.Command, clusterAt, jobAt int) *cobra.Command {
	if cmd.Annotations == nil {
		cmd.Annotations = map[string]string{}
	}
	cmd.Annotations[clusterArgKey] = strconv.Itoa(clusterAt)
	if jobAt >= 0 {
		cmd.Annotations[jobArgKey] = strconv.Itoa(jobAt)
	}
	cmd.ValidArgsFunction = func(cmd *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
		switch len(args) {
		case clusterAt:
			return a.completeClusters(cmd)
		case jobAt:
			return []cobra.Completion{cobra.CompletionWithDesc(latestJob, "the cluster's newest job")}, cobra.ShellCompDirectiveNoFileComp
		}
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return cmd
}

// resolveRefs turns the cluster and job references among args into ids,
// in place (cobra hands RunE the same slice). When a cluster's id and
// another cluster's name are spelled the same, the id wins and stderr says
// so.
func (a *app) resolveRefs(cmd *cobra.Command, args []string) error {
	at, ok := argIndex(cmd, clusterArgKey, args)
	if !ok {
		return nil
	}
	c, err := a.client(cmd)
	if err != nil {
		return err
	}
	ref, err := c.ResolveCluster(cmd.Context(), args[at])
	if err != nil {
		return err
	}
	if len(ref.Shadowed) > 0 {
		others := make([]string, len(ref.Shadowed))
		for i, cl := range ref.Shadowed {
			others[i] = cl.ID
		}
		fmt.Fprintf(cmd.ErrOrStderr(), "heddle: %q is the id of cluster %s and the name of %s; using the cluster with that id (name the other by its id)\n",
			args[at], clusterLabel(ref.ID, ref.Name), strings.Join(others, ", "))
	}
	args[at] = ref.ID
	a.clusterNames = map[string]string{ref.ID: ref.Name}
	if j, ok := argIndex(cmd, jobArgKey, args); ok && args[j] == latestJob {
		if args[j], err = c.LatestJob(cmd.Context(), ref.ID); err != nil {
			return err
		}
	}
	return nil
}

func argIndex(cmd *cobra.Command, key string, args []string) (int, bool) {
	v, ok := cmd.Annotations[key]
	if !ok {
		return 0, false
	}
	i, err := strconv.Atoi(v)
	return i, err == nil && i < len(args)
}

// clusterLabel is "id (name)", or the id alone when the name is empty.
func clusterLabel(id, name string) string {
	if name == "" || name == id {
		return id
	}
	return id + " (" + name + ")"
}

// completeClusters offers the names of the caller's live clusters, each
// with its id and status.
func (a *app) completeClusters(cmd *cobra.Command) ([]cobra.Completion, cobra.ShellCompDirective) {
	c, err := a.client(cmd)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveError
	}
	var out []cobra.Completion
	for cl, err := range c.Clusters(cmd.Context(), client.ClusterFilter{}) {
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveError
		}
		out = append(out, cobra.CompletionWithDesc(cl.Name, fmt.Sprintf("%s %s", cl.ID, cl.Status)))
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// completeEntities offers the names of the catalog's entities of kind.
func (a *app) completeEntities(kind domain.Kind) cobra.CompletionFunc {
	return func(cmd *cobra.Command, _ []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
		c, err := a.client(cmd)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveError
		}
		var out []cobra.Completion
		for e, err := range client.Each[struct {
			Name        string `json:"name"`
			Description string `json:"description"`
		}](cmd.Context(), c, "/v1/"+string(kind), nil, 0) {
			if err != nil {
				return nil, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveError
			}
			out = append(out, cobra.CompletionWithDesc(e.Name, oneLine(e.Description, 60)))
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}
