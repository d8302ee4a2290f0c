package opsmodel

import (
	"context"
	"fmt"
	"net/http"
	"sync"

	"pgregory.net/rapid"

	"github.com/heddle-io/heddle/client"
	"github.com/heddle-io/heddle/internal/desired"
)

// applyRace runs two `heddle apply -f` of one document at once. Each does
// what the CLI's first round does (cmd/heddle converge.go, on
// internal/desired): list the tenant's clusters, plan the document against
// them (desired.Compute; with problems it sends nothing), and send the
// plan's first step for the cluster (the CLI then waits for its job and
// plans again: a second step sent now would only meet the cluster busy).
// Both plan before either sends, so both may plan a create of a name no
// cluster has: names are claimed with a conditional write, so at most one
// create is accepted and the other is refused name_taken (the after-step
// check then finds the name once among the live clusters). Two changes of
// one cluster meet its lock: one job, one refusal.
//
// Who gives back what a step takes: a create's name claim, quota and
// cluster lock are the create's submission transaction's, given back by
// the transaction that ends the cluster or the job (engine: veto, rollback,
// abort, janitor); a refused step took nothing.
func (w *world) applyRace(t *rapid.T) {
	name := rapid.SampledFrom(names).Draw(t, "name")
	doc := fmt.Sprintf("apiVersion: heddle/v1\nclusters:\n  - {name: %s, template: %s, size: %d}\n",
		name, rapid.SampledFrom(templates).Draw(t, "template"), rapid.IntRange(1, 3).Draw(t, "size"))
	parsed, err := desired.Parse([]byte(doc))
	if err != nil {
		t.Fatalf("the model's apply document: %v\n%s", err, doc)
	}
	opts := desired.Options{Adopt: rapid.Bool().Draw(t, "adopt")}

	var planned sync.WaitGroup
	planned.Add(2)
	type outcome struct {
		step desired.Step
		res  *client.Result
		err  error
	}
	outs := make([]*outcome, 2)
	var wg sync.WaitGroup
	for i := range outs {
		wg.Go(func() {
			ctx, cancel := callCtx()
			defer cancel()
			current, err := client.Collect(w.admin.Clusters(ctx, client.ClusterFilter{}))
			planned.Done()
			if err != nil {
				outs[i] = &outcome{err: err}
				return
			}
			plan := desired.Compute(parsed.Clusters, current, opts)
			planned.Wait() // both have read the clusters: the race is real
			if len(plan.Problems) > 0 || len(plan.Steps) == 0 {
				return // refused by the plan, or nothing to do: nothing sent
			}
			o := &outcome{step: plan.Steps[0]}
			o.res, o.err = sendApplyStep(ctx, w.admin, o.step)
			outs[i] = o
		})
	}
	wg.Wait()
	for _, o := range outs {
		switch {
		case o == nil:
		case o.step.Kind == "":
			t.Fatalf("apply: listing the clusters: %v", o.err)
		case o.err != nil:
			ce := refused(t, "apply: "+o.step.String(), o.err)
			t.Logf("apply %s: refused %d %s", o.step, ce.Status, ce.Code)
		case o.step.Kind == desired.Create:
			w.m.created(o.res, o.step.Request.(client.CreateRequest))
			t.Logf("apply %s: cluster %s job %s", o.step, o.res.Cluster.ID, o.res.Job.ID)
		case o.step.Kind == desired.Adopt:
			w.m.accept(http.MethodPost, "/v1/clusters/{cluster}/managed-by", o.step.ClusterID)
			t.Logf("apply %s: adopted", o.step)
		default:
			c := w.m.clusters[o.step.ClusterID]
			if c == nil || o.res.Job == nil {
				t.Fatalf("apply %s: accepted on a cluster the model does not know, or without a job: %+v", o.step, o.res)
			}
			c.jobs = append(c.jobs, o.res.Job.ID)
			w.m.accept(http.MethodPost, "/v1/clusters/{cluster}/"+string(o.step.Kind), c.id)
			t.Logf("apply %s: job %s", o.step, o.res.Job.ID)
		}
	}
}

// sendApplyStep sends one step as the CLI's sendStep does.
func sendApplyStep(ctx context.Context, c *client.Client, s desired.Step) (*client.Result, error) {
	switch s.Kind {
	case desired.Create:
		return c.CreateCluster(ctx, s.Request.(client.CreateRequest), client.Mutate{})
	case desired.Delete:
		return c.DeleteCluster(ctx, s.ClusterID, false, client.Mutate{})
	case desired.Adopt:
		cl, err := c.Manage(ctx, s.ClusterID, s.Request.(client.ManageRequest))
		if err != nil {
			return nil, err
		}
		return &client.Result{Cluster: *cl}, nil
	}
	return c.Mutation(ctx, s.ClusterID, string(s.Kind), s.Request, client.Mutate{})
}
