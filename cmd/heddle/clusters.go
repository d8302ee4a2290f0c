package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/heddle-io/heddle/client"
	"github.com/heddle-io/heddle/internal/api"
	"github.com/heddle-io/heddle/internal/cluster"
	"github.com/heddle-io/heddle/internal/domain"
)

func newClustersCommand(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "clusters",
		Aliases: []string{"cluster"},
		Short:   "Create, inspect and operate clusters",
	}
	cmd.AddCommand(
		newClustersCreateCommand(a),
		newClustersListCommand(a),
		newClustersShowCommand(a),
		newClustersNodesCommand(a),
		newClustersDeleteCommand(a),
		newClustersExpandCommand(a),
		newClustersShrinkCommand(a),
		newClustersReconfigureCommand(a),
		newClustersAddServicesCommand(a),
		newClustersRemoveServicesCommand(a),
		newClustersSyncCommand(a),
		newServiceActionCommand(a, "start", "Start services (all when --services is not given)"),
		newServiceActionCommand(a, "stop", "Stop services (all when --services is not given)"),
		newServiceActionCommand(a, "restart", "Restart services (all when --services is not given)"),
		newServiceActionCommand(a, "rolling-restart", "Restart services a batch of nodes at a time"),
		newClustersExtendCommand(a),
		newClustersManageCommand(a),
		newClustersVerifyCommand(a),
		newClustersDriftCommand(a),
		newClustersRepairCommand(a),
		newClustersAutoscaleCommand(a),
		newClustersMetricsCommand(a),
		newClustersEventsCommand(a),
		newClustersHistoryCommand(a),
		newClustersRollbackCommand(a),
	)
	// Every command but create and list acts on one cluster, named by its
	// first argument: an id or a name.
	for _, sub := range cmd.Commands() {
		if sub.Name() != "create" && sub.Name() != "list" {
			clusterArgs(a, sub, 0, -1)
		}
	}
	return cmd
}

// mutationFlags are what every job-submitting command takes.
type mutationFlags struct {
	dryRun        bool
	wait          bool
	failOnRefusal bool
}

func (m *mutationFlags) register(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&m.dryRun, "dry-run", false, "show the plan and change nothing")
	cmd.Flags().BoolVar(&m.failOnRefusal, "fail-on-refusal", false, "with --dry-run: exit 2 when the request would be refused (the tenant's quota, a static pool's free hosts)")
	cmd.Flags().BoolVar(&m.wait, "wait", false, "watch the job until it ends (as heddle jobs watch does)")
	cmd.MarkFlagsMutuallyExclusive("dry-run", "wait")
}

// mutation is one job-submitting call of the client.
type mutation func(ctx context.Context, c *Client, m client.Mutate) (*client.Result, error)

// submit sends the mutation at method and path (with query extra) through
// the client's raw call, as submitWith sends a typed one.
func (a *app) submit(cmd *cobra.Command, method, path string, body any, m mutationFlags, extra url.Values) error {
	return a.submitWith(cmd, func(ctx context.Context, c *Client, mu client.Mutate) (*client.Result, error) {
		q := url.Values{}
		for k, v := range extra {
			q[k] = v
		}
		if mu.DryRun {
			q.Set("dryRun", "true")
		}
		return client.Send[client.Result](ctx, c, method, path, q, body)
	}, m)
}

// submitWith sends a mutation and prints its job, or the preview of a dry
// run; with --wait it then watches the job.
func (a *app) submitWith(cmd *cobra.Command, send mutation, m mutationFlags) error {
	c, err := a.client(cmd)
	if err != nil {
		return err
	}
	var ans answer
	res, err := send(ans.keep(cmd.Context()), c, client.Mutate{DryRun: m.dryRun})
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	if err := printValue(a, out, &ans, res, func(w io.Writer, res *client.Result) { printSubmitted(w, res, m.wait) }); err != nil {
		return err
	}
	if m.wait && res.Job != nil {
		return a.watch(cmd, c, res.Cluster.ID, res.Job.ID)
	}
	if res.Refusal != nil && m.failOnRefusal {
		return &exitError{code: 2}
	}
	return nil
}

// printSubmitted prints a mutation's answer: the preview of a dry run, or
// the cluster and its job.
func printSubmitted(w io.Writer, res *client.Result, waiting bool) {
	if res.DryRun || res.Job == nil {
		printPreview(w, res)
		return
	}
	fmt.Fprintf(w, "cluster  %s (%s, %s)\n", res.Cluster.ID, res.Cluster.Name, res.Cluster.Status)
	fmt.Fprintf(w, "job      %s (%s, %s)\n", res.Job.ID, res.Job.Operation, res.Job.Status)
	if !waiting {
		fmt.Fprintf(w, "watch it with: heddle jobs watch %s %s\n", res.Cluster.ID, res.Job.ID)
	}
}

// printPreview renders a dry run: the layout change, the plan's summary and
// the layout groups.
func printPreview(w io.Writer, res *cluster.Result) {
	pv := res.Preview
	if pv == nil {
		fmt.Fprintf(w, "dry run for cluster %s: no plan\n", dash(res.Cluster.ID))
		return
	}
	fmt.Fprintf(w, "dry run: %s", pv.Operation)
	if res.Cluster.Name != "" {
		fmt.Fprintf(w, " of cluster %s", res.Cluster.Name)
	}
	fmt.Fprintln(w, "; nothing was changed")
	tw := newTable(w)
	d := pv.Diff
	if d.IsEmpty() {
		fmt.Fprintf(tw, "  layout\tunchanged\n")
	}
	for _, n := range d.AddedNodes {
		fmt.Fprintf(tw, "  + node\t%s\t%s/%s\t%s\n", n.ID, n.HardwareType, n.ImageType, strings.Join(n.Services, ","))
	}
	for _, n := range d.RemovedNodes {
		fmt.Fprintf(tw, "  - node\t%s\t%s/%s\t%s\n", n.ID, n.HardwareType, n.ImageType, strings.Join(n.Services, ","))
	}
	for _, n := range d.ChangedNodes {
		var parts []string
		for _, s := range n.AddedServices {
			parts = append(parts, "+"+s)
		}
		for _, s := range n.RemovedServices {
			parts = append(parts, "-"+s)
		}
		fmt.Fprintf(tw, "  ~ node\t%s\t\t%s\n", n.ID, strings.Join(parts, " "))
	}
	for _, s := range d.Services {
		fmt.Fprintf(tw, "  ~ service\t%s\t%d -> %d nodes\t\n", s.Service, s.Before, s.After)
	}
	_ = tw.Flush()
	if o := pv.Omitted; o != nil && o.AddedNodes+o.RemovedNodes+o.ChangedNodes > 0 {
		fmt.Fprintf(w, "  and %d more added, %d more removed, %d more changed nodes (the preview lists the first %d of each)\n",
			o.AddedNodes, o.RemovedNodes, o.ChangedNodes, cluster.PreviewItems)
	}
	fmt.Fprintf(w, "%d work tasks, %d joins, %d edges, %d stages\n",
		pv.Summary.WorkTasks, pv.Summary.Joins, pv.Summary.Edges, pv.Summary.Stages)
	for _, sk := range pv.Skipped {
		fmt.Fprintf(w, "skipped: %s\n", sk)
	}
	if cp := pv.CriticalPath; cp != nil {
		fmt.Fprintf(w, "critical path %s (strict stages %s)\n", cp.Length, cp.StageMakespan)
	}
	if pv.Rollback != nil {
		fmt.Fprintf(w, "rollback if it fails: %d work tasks\n", pv.Rollback.Summary.WorkTasks)
	}
	if a := res.Autoscale; a != nil {
		fmt.Fprintf(w, "autoscale: its policy may size it between %d and %d nodes (the tenant's free quota allows %d now)\n", a.Min, a.Max, a.QuotaMax)
	}
	if r := res.Refusal; r != nil {
		fmt.Fprintf(w, "refused if sent for real (%s): %s\n", r.Code, r.Message)
		fmt.Fprintln(w, "  (this dry run still exits 0; with --fail-on-refusal it exits 2)")
	}
	if len(res.Layout) > 0 {
		fmt.Fprintln(w, "\nlayout:")
		tw = newTable(w)
		fmt.Fprintf(tw, "  NODES\tHARDWARE\tIMAGE\tSERVICES\n")
		for _, g := range res.Layout {
			fmt.Fprintf(tw, "  %d\t%s\t%s\t%s\n", g.Count, g.HardwareType, g.ImageType, strings.Join(g.Services, ","))
		}
		_ = tw.Flush()
	}
}

// configValue reads --config: inline JSON, or @FILE.
func configValue(v string) (json.RawMessage, error) {
	if v == "" {
		return nil, nil
	}
	data := []byte(v)
	if strings.HasPrefix(v, "@") {
		var err error
		if data, err = os.ReadFile(v[1:]); err != nil {
			return nil, err
		}
	}
	var obj map[string]any
	if err := json.Unmarshal(data, &obj); err != nil {
		return nil, fmt.Errorf("--config must be a JSON object (or @FILE holding one): %w", err)
	}
	return json.RawMessage(data), nil
}

// leaseValue checks a duration such as 24h or 7d.
func leaseValue(flag, v string) (domain.Duration, error) {
	d, err := domain.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("--%s %q: %w", flag, v, err)
	}
	return d, nil
}

func clusterPath(id string, rest ...string) string {
	p := "/v1/clusters/" + pathEscape(id)
	for _, r := range rest {
		p += "/" + r
	}
	return p
}

func newClustersCreateCommand(a *app) *cobra.Command {
	var (
		req          cluster.CreateRequest
		config       string
		lease        string
		providerArgs []string
		m            mutationFlags
	)
	cmd := &cobra.Command{
		Use:   "create NAME --template T --size N",
		Short: "Create a cluster from a template",
		Example: `  heddle clusters create web1 --template web --size 5 --dry-run
  heddle clusters create web1 --template web --size 5 --services nginx,php --lease 24h --wait`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			req.Name = args[0]
			var err error
			if req.Config, err = configValue(config); err != nil {
				return err
			}
			if lease != "" {
				if req.Lease, err = leaseValue("lease", lease); err != nil {
					return err
				}
			}
			for _, kv := range providerArgs {
				k, v, ok := strings.Cut(kv, "=")
				if !ok || k == "" {
					return fmt.Errorf("--provider-field %q is not NAME=VALUE", kv)
				}
				if req.ProviderFields == nil {
					req.ProviderFields = map[string]string{}
				}
				req.ProviderFields[k] = v
			}
			return a.submitWith(cmd, func(ctx context.Context, c *Client, mu client.Mutate) (*client.Result, error) {
				return c.CreateCluster(ctx, req, mu)
			}, m)
		},
	}
	f := cmd.Flags()
	f.StringVar(&req.Template, "template", "", "the cluster template to build from")
	f.IntVar(&req.TemplateVersion, "template-version", 0, "the template's version (default: the latest)")
	f.IntVar(&req.Size, "size", 0, "how many nodes")
	f.StringSliceVar(&req.Services, "services", nil, "the services to run (default: the template's)")
	f.StringVar(&req.Provider, "provider", "", "the provider (default: the template's)")
	f.StringVar(&req.HardwareType, "hardware-type", "", "the hardware type (default: the template's)")
	f.StringVar(&req.ImageType, "image-type", "", "the image type (default: the template's)")
	f.StringArrayVar(&providerArgs, "provider-field", nil, "a provider field as NAME=VALUE (repeatable)")
	f.StringVar(&config, "config", "", "the cluster config, a JSON object (or @FILE)")
	f.StringVar(&req.Description, "description", "", "what the cluster is for")
	f.StringVar(&req.DNSSuffix, "dns-suffix", "", "the DNS suffix of the nodes' hostnames")
	f.StringVar(&lease, "lease", "", "a first lease shorter than the template's, e.g. 24h or 3d")
	f.BoolVar(&req.KeepOnFailure, "keep-on-failure", false, "keep what a failed create made, for debugging")
	m.register(cmd)
	_ = cmd.MarkFlagRequired("template")
	_ = cmd.MarkFlagRequired("size")
	_ = cmd.RegisterFlagCompletionFunc("template", a.completeEntities(domain.KindClusterTemplate))
	return cmd
}

func newClustersListCommand(a *app) *cobra.Command {
	var (
		status, template, owner string
		all                     bool
	)
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List clusters (TERMINATED ones only with --all or --status)",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.client(cmd)
			if err != nil {
				return err
			}
			// Every page (a filter may leave a page short of its limit).
			f := client.ClusterFilter{Status: domain.ClusterStatus(strings.ToUpper(status)), Template: template, Owner: owner, All: all}
			items, err := client.Collect(c.Clusters(cmd.Context(), f))
			if err != nil {
				return err
			}
			return printValue(a, cmd.OutOrStdout(), nil, &api.Page[domain.Cluster]{Items: items}, func(w io.Writer, clusters *api.Page[domain.Cluster]) {
				printClusters(w, clusters.Items, time.Now())
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&status, "status", "", "only clusters in this status (PENDING, ACTIVE, INCONSISTENT, FAILED, DELETING, TERMINATED)")
	f.StringVar(&template, "template", "", "only clusters from this template")
	f.StringVar(&owner, "owner", "", "only clusters of this user")
	f.BoolVar(&all, "all", false, "include TERMINATED clusters")
	_ = cmd.RegisterFlagCompletionFunc("status", cobra.FixedCompletions([]string{"PENDING", "ACTIVE", "INCONSISTENT", "FAILED", "DELETING", "TERMINATED"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

func printClusters(w io.Writer, clusters []domain.Cluster, now time.Time) {
	if len(clusters) == 0 {
		fmt.Fprintln(w, "no clusters")
		return
	}
	tw := newTable(w)
	fmt.Fprintf(tw, "ID\tNAME\tTEMPLATE\tSTATUS\tHEALTH\tNODES\tOWNER\tEXPIRES\n")
	for i := range clusters {
		cl := &clusters[i]
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\n", cl.ID, cl.Name, templateName(cl.Template), cl.Status, healthWord(cl.Health), cl.NodeCount, cl.Owner, clusterExpiry(cl, now))
	}
	_ = tw.Flush()
}

func templateName(t domain.TemplateRef) string {
	if t.Version > 0 {
		return fmt.Sprintf("%s@%d", t.Name, t.Version)
	}
	return t.Name
}

// clusterExpiry is when the lease ends; a TERMINATED cluster has none.
func clusterExpiry(c *domain.Cluster, now time.Time) string {
	if c.Status.Terminal() {
		return "-"
	}
	return expiry(c.ExpiresAt, now)
}

func newClustersShowCommand(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "show CLUSTER",
		Short: "Show a cluster: its nodes, the progress of its latest job, its lease",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client(cmd)
			if err != nil {
				return err
			}
			var ans answer
			v, err := c.GetCluster(ans.keep(cmd.Context()), args[0])
			if err != nil {
				return err
			}
			return printValue(a, cmd.OutOrStdout(), &ans, v, func(w io.Writer, v *cluster.View) {
				printCluster(w, v, time.Now())
			})
		},
	}
}

func printCluster(w io.Writer, v *cluster.View, now time.Time) {
	tw := newTable(w)
	fmt.Fprintf(tw, "id\t%s\n", v.ID)
	fmt.Fprintf(tw, "name\t%s\n", v.Name)
	if v.Description != "" {
		fmt.Fprintf(tw, "description\t%s\n", v.Description)
	}
	fmt.Fprintf(tw, "template\t%s\n", templateName(v.Template))
	status := string(v.Status)
	if v.StatusMessage != "" {
		status += ": " + v.StatusMessage
	}
	fmt.Fprintf(tw, "status\t%s\n", status)
	fmt.Fprintf(tw, "owner\t%s\n", v.Owner)
	if v.ManagedBy != "" {
		fmt.Fprintf(tw, "managed by\t%s\n", v.ManagedBy)
	}
	fmt.Fprintf(tw, "provider\t%s\n", dash(v.Provider))
	fmt.Fprintf(tw, "services\t%s\n", dash(strings.Join(v.Services, ", ")))
	fmt.Fprintf(tw, "created\t%s\n", humanTime(v.CreatedAt))
	fmt.Fprintf(tw, "lease expires\t%s\n", clusterExpiry(&v.Cluster, now))
	if p := v.Progress; p != nil {
		fmt.Fprintf(tw, "progress\t%s\n", progressLine(p))
	}
	if len(v.NodeStatus) > 0 {
		fmt.Fprintf(tw, "nodes\t%s\n", statusCounts(v.NodeStatus))
	}
	_ = tw.Flush()
	printHealth(w, v.Health)
	printDrift(w, v.Drift)
	fmt.Fprintln(w)
	if len(v.Nodes) == 0 {
		fmt.Fprintln(w, "no nodes")
		return
	}
	tw = newTable(w)
	fmt.Fprintf(tw, "LAYOUT\tNODES\tHARDWARE\tIMAGE\tSERVICES\n")
	for i, g := range v.Layout {
		fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%s\n", i+1, g.Count, g.HardwareType, g.ImageType, dash(strings.Join(g.Services, ",")))
	}
	_ = tw.Flush()
	fmt.Fprintln(w)
	printNodes(w, v.Nodes)
	if v.NodesOmitted > 0 {
		fmt.Fprintf(w, "and %d more nodes: heddle clusters nodes %s --all\n", v.NodesOmitted, v.ID)
	}
}

func printNodes(w io.Writer, nodes []domain.Node) {
	tw := newTable(w)
	fmt.Fprintf(tw, "NODE\tHOSTNAME\tADDRESS\tSERVICES\tSTATUS\n")
	for _, n := range nodes {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", n.ID, dash(n.Hostname), dash(n.Addresses["access_v4"]), dash(serviceStates(n)), n.Status)
	}
	_ = tw.Flush()
	for _, n := range nodes {
		for _, s := range n.Services {
			if st := n.ServiceStates[s]; st.State == domain.RunFailed {
				fmt.Fprintf(w, "%s: %s %s failed in job %s: %s\n", n.ID, s, st.Action, st.JobID, dash(st.Message))
			}
		}
	}
}

// serviceStates lists a node's services with their recorded run states
// ("kv:running,web:stopped"); a service with no recorded state stands alone.
func serviceStates(n domain.Node) string {
	parts := make([]string, 0, len(n.Services))
	for _, s := range n.Services {
		if st := n.ServiceStates[s]; st.Known() {
			s += ":" + string(st.State)
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ",")
}

// statusCounts renders counts by status, in status order: "3 ACTIVE, 1 FAILED".
func statusCounts[S ~string](counts map[S]int) string {
	keys := make([]S, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%d %s", counts[k], k)
	}
	return strings.Join(parts, ", ")
}

func newClustersNodesCommand(a *app) *cobra.Command {
	var (
		pf     pageFlags
		status string
	)
	cmd := &cobra.Command{
		Use:   "nodes CLUSTER",
		Short: "List a cluster's nodes by id, a page at a time (--all for every page)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			q := url.Values{}
			if status != "" {
				q.Set("status", strings.ToUpper(status))
			}
			raw, err := pf.list(a, cmd, clusterPath(args[0], "nodes"), q)
			if err != nil {
				return err
			}
			return printAnswer(a, cmd.OutOrStdout(), raw, func(w io.Writer, p *api.Page[domain.Node]) {
				printNodes(w, p.Items)
				printMore(w, p.NextCursor)
			})
		},
	}
	pf.register(cmd, "nodes")
	cmd.Flags().StringVar(&status, "status", "", "only nodes in this status (PLANNED, CREATING, ACTIVE, DELETING, DELETED, FAILED)")
	return cmd
}

// progressLine says how far the cluster's latest job is. The stages are
// counted from the tasks themselves, so when the view has them the line
// adds up from them (done, running, failed and waiting make the total);
// the job's own done counter trails its workers.
func progressLine(p *cluster.Progress) string {
	s := fmt.Sprintf("job %s (%s) %s, ", p.JobID, p.Operation, p.Status)
	if len(p.Stages) == 0 {
		s += fmt.Sprintf("%d/%d tasks done", p.Done, p.Total)
		if p.Total > 0 {
			s += fmt.Sprintf(" (%d%%)", p.Done*100/p.Total)
		}
		return s
	}
	var all cluster.StageProgress
	for _, st := range p.Stages {
		all.Total += st.Total
		all.Done += st.Done
		all.Running += st.Running
		all.Failed += st.Failed
	}
	s += fmt.Sprintf("%d tasks: %s", all.Total, stageCounts(all))
	for _, st := range p.Stages {
		if st.Done < st.Total {
			s += fmt.Sprintf("; stage %d of %d: %d tasks: %s", st.Stage, len(p.Stages), st.Total, stageCounts(st))
			break
		}
	}
	return s
}

// stageCounts splits a count of tasks so that the parts add up to its
// total: "3 done, 1 running, 1 failed, 2 waiting" (parts of 0 left out).
func stageCounts(st cluster.StageProgress) string {
	parts := []string{fmt.Sprintf("%d done", st.Done)}
	for _, p := range []struct {
		n    int
		what string
	}{{st.Running, "running"}, {st.Failed, "failed"}, {st.Total - st.Done - st.Running - st.Failed, "waiting"}} {
		if p.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", p.n, p.what))
		}
	}
	return strings.Join(parts, ", ")
}

func newClustersDeleteCommand(a *app) *cobra.Command {
	var (
		force bool
		m     mutationFlags
	)
	cmd := &cobra.Command{
		Use:   "delete CLUSTER",
		Short: "Delete a cluster: stop and remove its services, then delete its nodes",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.submitWith(cmd, func(ctx context.Context, c *Client, mu client.Mutate) (*client.Result, error) {
				return c.DeleteCluster(ctx, args[0], force, mu)
			}, m)
		},
	}
	cmd.Flags().BoolVar(&force, "force", false, "delete the nodes without stopping and removing services first")
	m.register(cmd)
	return cmd
}

// newMutationCommand is a job-submitting command on one cluster: it POSTs
// body (a pointer to the request its flags fill) to the cluster's action,
// after prepare (when not nil) has finished the request. The caller adds the
// request's flags.
func newMutationCommand(a *app, action, use, short string, body any, prepare func() error) *cobra.Command {
	var m mutationFlags
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if prepare != nil {
				if err := prepare(); err != nil {
					return err
				}
			}
			return a.submitWith(cmd, func(ctx context.Context, c *Client, mu client.Mutate) (*client.Result, error) {
				return c.Mutation(ctx, args[0], action, body, mu)
			}, m)
		},
	}
	m.register(cmd)
	return cmd
}

func newClustersExpandCommand(a *app) *cobra.Command {
	var req cluster.ExpandRequest
	cmd := newMutationCommand(a, "expand", "expand CLUSTER --count N", "Add nodes to a cluster", &req, nil)
	f := cmd.Flags()
	f.IntVar(&req.Count, "count", 0, "how many nodes to add")
	f.StringVar(&req.HardwareType, "hardware-type", "", "the new nodes' hardware type")
	f.StringVar(&req.ImageType, "image-type", "", "the new nodes' image type")
	f.BoolVar(&req.Restart, "restart", false, "restart the services whose configuration the new nodes change")
	_ = cmd.MarkFlagRequired("count")
	return cmd
}

func newClustersShrinkCommand(a *app) *cobra.Command {
	var req cluster.ShrinkRequest
	cmd := newMutationCommand(a, "shrink", "shrink CLUSTER (--count N | --nodes a,b)",
		"Remove nodes from a cluster (the newest first, or the ones named)", &req, nil)
	f := cmd.Flags()
	f.IntVar(&req.Count, "count", 0, "how many nodes to remove, newest first")
	f.StringSliceVar(&req.NodeIDs, "nodes", nil, "the ids of the nodes to remove")
	f.BoolVar(&req.Force, "force", false, "delete the nodes without stopping and removing their services first")
	f.BoolVar(&req.Restart, "restart", false, "restart the services whose configuration the removal changes")
	cmd.MarkFlagsMutuallyExclusive("count", "nodes")
	cmd.MarkFlagsOneRequired("count", "nodes")
	return cmd
}

func newClustersReconfigureCommand(a *app) *cobra.Command {
	var (
		req    cluster.ReconfigureRequest
		config string
	)
	cmd := newMutationCommand(a, "reconfigure", "reconfigure CLUSTER",
		"Re-run configure on services (all when --services is not given), optionally with a new config", &req,
		func() (err error) {
			req.Config, err = configValue(config)
			return err
		})
	f := cmd.Flags()
	f.StringSliceVar(&req.Services, "services", nil, "the services to reconfigure (default: all)")
	f.StringVar(&config, "config", "", "a new cluster config, a JSON object (or @FILE)")
	f.BoolVar(&req.Restart, "restart", false, "restart the reconfigured services")
	f.BoolVar(&req.StaleOnly, "stale-only", false, "only the nodes whose applied configuration differs from what the cluster renders now (heddle clusters drift)")
	return cmd
}

func newClustersAddServicesCommand(a *app) *cobra.Command {
	var req cluster.AddServicesRequest
	cmd := newMutationCommand(a, "add-services", "add-services CLUSTER --services a,b",
		"Add services to a cluster: onto its nodes, or onto at most --max-new-nodes new ones where the constraints need them", &req, nil)
	f := cmd.Flags()
	f.StringSliceVar(&req.Services, "services", nil, "the services to add")
	f.IntVar(&req.MaxNewNodes, "max-new-nodes", 0, "how many new nodes the services may take")
	f.BoolVar(&req.Restart, "restart", false, "restart what the added services reconfigure")
	_ = cmd.MarkFlagRequired("services")
	return cmd
}

func newClustersRemoveServicesCommand(a *app) *cobra.Command {
	var req cluster.RemoveServicesRequest
	cmd := newMutationCommand(a, "remove-services", "remove-services CLUSTER --services a,b",
		"Stop and remove services from a cluster (refused while a remaining service needs them)", &req, nil)
	f := cmd.Flags()
	f.StringSliceVar(&req.Services, "services", nil, "the services to remove")
	f.BoolVar(&req.Restart, "restart", false, "restart what the removal reconfigures")
	_ = cmd.MarkFlagRequired("services")
	return cmd
}

func newClustersSyncCommand(a *app) *cobra.Command {
	var req cluster.SyncRequest
	cmd := newMutationCommand(a, "sync", "sync CLUSTER [--template-version N]",
		"Move a cluster to another version of its template (the latest by default) and the catalog's current service definitions", &req, nil)
	f := cmd.Flags()
	f.IntVar(&req.TemplateVersion, "template-version", 0, "the template version (default: the latest)")
	f.BoolVar(&req.Restart, "restart", false, "restart the reconfigured services")
	return cmd
}

func newServiceActionCommand(a *app, action, short string) *cobra.Command {
	var req cluster.ServiceActionRequest
	use := action + " CLUSTER"
	if action == "rolling-restart" {
		use += " --batch-size K"
	}
	cmd := newMutationCommand(a, action, use, short, &req, nil)
	cmd.Flags().StringSliceVar(&req.Services, "services", nil, "the services (default: all)")
	cmd.Flags().BoolVar(&req.StaleOnly, "stale-only", false, "only the nodes whose applied configuration differs from what the cluster renders now (heddle clusters drift)")
	if action == "rolling-restart" {
		cmd.Flags().IntVar(&req.BatchSize, "batch-size", 0, "how many nodes restart at a time")
		_ = cmd.MarkFlagRequired("batch-size")
	}
	return cmd
}

func newClustersExtendCommand(a *app) *cobra.Command {
	var by string
	cmd := &cobra.Command{
		Use:   "extend CLUSTER --by 24h",
		Short: "Extend a cluster's lease (within its template's lease policy)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			d, err := leaseValue("by", by)
			if err != nil {
				return err
			}
			if d <= 0 {
				return errors.New("--by must be a positive duration, e.g. 24h or 7d")
			}
			return call(a, cmd, http.MethodPost, clusterPath(args[0], "lease"), cluster.ExtendRequest{By: d}, func(w io.Writer, cl *domain.Cluster) {
				fmt.Fprintf(w, "cluster %s: lease expires %s\n", cl.ID, expiry(cl.ExpiresAt, time.Now()))
			})
		},
	}
	cmd.Flags().StringVar(&by, "by", "", "how much longer, e.g. 24h or 7d")
	_ = cmd.MarkFlagRequired("by")
	return cmd
}
