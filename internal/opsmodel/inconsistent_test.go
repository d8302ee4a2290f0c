package opsmodel

import (
	"context"
	"net/http"
	"time"

	"pgregory.net/rapid"

	"github.com/heddle-io/heddle/client"
	"github.com/heddle-io/heddle/internal/domain"
)

// expandAfterFailedAdd composes, on one "ops" cluster no job holds, an
// add-services of "extra" whose install fails (the faults file says fail),
// which leaves the cluster INCONSISTENT, and then, the faults cleared, an
// expand that succeeds. A successful job makes the cluster ACTIVE, so its
// nodes must all carry their services' run states (checkRunStates), the
// failed add's service included: either the expand installs it, or the
// failed add left it out of the layouts. The random steps reach this
// sequence rarely; here it is one step. The faults mode is left "ok".
//
// What the steps take (the cluster's lock, the expand's quota) is taken by
// each submission and given back by the transaction that ends its job.
func (w *world) expandAfterFailedAdd(t *rapid.T) {
	var target *mcluster
	for _, id := range w.m.order {
		c := w.m.clusters[id]
		if c.template != "ops" {
			continue
		}
		if v := w.cluster(t, id); v.Status == domain.ClusterActive && v.ActiveJobID == "" && !c.leased {
			target = c
			break
		}
	}
	if target == nil {
		t.Skip("no idle ACTIVE ops cluster")
	}
	// How the add ends: its installs fail, or it is aborted after a drawn
	// delay while they hang (some nodes' installs then never started).
	how := rapid.SampledFrom([]string{"fail", "abort"}).Draw(t, "addEnds")
	var abortAfter time.Duration
	if how == "abort" {
		abortAfter = time.Duration(rapid.IntRange(0, 20).Draw(t, "abortAfterTenths")) * 100 * time.Millisecond
		w.setFaults(t, "hang")
	} else {
		w.setFaults(t, "fail")
	}
	add := w.runToEnd(t, target, "/v1/clusters/{cluster}/add-services", func(ctx context.Context) (*client.Result, error) {
		r, err := w.admin.AddServices(ctx, target.id, client.AddServicesRequest{Services: []string{"extra"}}, client.Mutate{})
		if err == nil && how == "abort" {
			time.Sleep(abortAfter)
			if _, err := w.admin.ControlJob(ctx, target.id, r.Job.ID, "abort"); err == nil {
				w.m.accept(http.MethodPost, "/v1/clusters/{cluster}/jobs/{job}/abort", target.id)
			} else {
				refused(t, "abort "+r.Job.ID, err)
			}
		}
		return r, err
	})
	w.setFaults(t, "ok")
	if add == nil {
		return
	}
	t.Logf("add-services %s ended %s; cluster %s", add.ID, add.Status, w.cluster(t, target.id).Status)
	expand := w.runToEnd(t, target, "/v1/clusters/{cluster}/expand", func(ctx context.Context) (*client.Result, error) {
		return w.admin.Expand(ctx, target.id, client.ExpandRequest{Count: 1}, client.Mutate{})
	})
	if expand == nil {
		return
	}
	v := w.cluster(t, target.id)
	t.Logf("expand %s ended %s; cluster %s", expand.ID, expand.Status, v.Status)
	if v.Status == domain.ClusterInconsistent && v.ActiveJobID == "" && add.Status != domain.JobSucceeded {
		// The way out: retry the failed add, now that its installs work.
		ctx, cancel := callCtx()
		_, err := w.admin.ControlJob(ctx, target.id, add.ID, "retry")
		cancel()
		if err != nil {
			ce := refused(t, "retry "+add.ID, err)
			t.Logf("retry of add-services %s: refused %d %s", add.ID, ce.Status, ce.Code)
			return
		}
		w.m.accept(http.MethodPost, "/v1/clusters/{cluster}/jobs/{job}/retry", target.id)
		deadline := time.Now().Add(2 * time.Minute)
		for v = w.cluster(t, target.id); v.ActiveJobID != ""; v = w.cluster(t, target.id) {
			if time.Now().After(deadline) {
				t.Fatalf("the retry of add-services %s did not end within 2 minutes", add.ID)
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Logf("retry of add-services %s: cluster %s", add.ID, v.Status)
	}
	if v.Status == domain.ClusterActive && v.ActiveJobID == "" {
		w.checkRunStates(t, v.Cluster)
	}
}

// runToEnd sends one job-submitting request through mutate and waits for
// the job it started to end (resuming nothing: no step pauses it
// meanwhile); nil when it was refused.
func (w *world) runToEnd(t *rapid.T, c *mcluster, route string, call func(ctx context.Context) (*client.Result, error)) *client.JobView {
	n := len(c.jobs)
	w.mutate(t, c, http.MethodPost, route, call)
	if len(c.jobs) == n {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	j, err := w.admin.WaitJob(ctx, c.id, c.jobs[n], client.WaitOptions{Interval: 50 * time.Millisecond, MaxInterval: 200 * time.Millisecond})
	if err != nil {
		t.Fatalf("waiting for job %s: %v", c.jobs[n], err)
	}
	return j
}
