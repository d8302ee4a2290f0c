package opsmodel

import (
	"net/http"
	"time"

	"pgregory.net/rapid"

	"github.com/heddle-io/heddle/client"
	"github.com/heddle-io/heddle/internal/cluster"
)

// pushLoad pushes a drawn value of the sim template's metric for a drawn
// cluster, as an outside monitor would; the janitor's policy then expands
// or shrinks the cluster between its passes and the model's other steps.
// A push for a cluster with no policy (template ops) or one deleted is
// refused and changes nothing. Every push then checks every cluster's
// policy (checkPolicies).
func (w *world) pushLoad(t *rapid.T) {
	c := w.drawCluster(t)
	value := rapid.SampledFrom([]float64{0, 5, 10, 40}).Draw(t, "load")
	before := w.policy(t, c.id)
	ctx, cancel := callCtx()
	data, err := w.admin.JSON(ctx, http.MethodPost, "/v1/clusters/"+c.id+"/metrics", nil,
		cluster.MetricsRequest{Metrics: []cluster.MetricValue{{Name: "load", Value: value}}})
	cancel()
	if err == nil {
		// Let the janitor's next pass evaluate it (unless a job holds the
		// cluster), so that the checks below see its decision.
		v, derr := client.Decode[cluster.AutoscaleView](data)
		if derr != nil {
			t.Fatalf("cluster %s's policy: %v", c.id, derr)
		}
		at := v.Metrics["load"].At
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			now := w.cluster(t, c.id)
			if last := w.policy(t, c.id).Last; now.ActiveJobID != "" || now.Status != "ACTIVE" || last != nil && last.At.After(at) {
				break
			}
		}
	}
	if err != nil {
		ce := refused(t, "metrics "+c.id, err)
		if after := w.policy(t, c.id); len(after.Metrics) != len(before.Metrics) || after.Metrics["load"] != before.Metrics["load"] {
			t.Fatalf("a refused push (%d %s) changed the metrics from %v to %v", ce.Status, ce.Code, before.Metrics, after.Metrics)
		}
		t.Logf("metrics %s load=%g: refused %d %s", c.id, value, ce.Status, ce.Code)
	} else {
		t.Logf("metrics %s load=%g", c.id, value)
	}
	w.checkPolicies(t)
}

func (w *world) policy(t *rapid.T, id string) cluster.AutoscaleView {
	ctx, cancel := callCtx()
	defer cancel()
	data, err := w.admin.JSON(ctx, http.MethodGet, "/v1/clusters/"+id+"/autoscale", nil, nil)
	if err != nil {
		t.Fatalf("reading cluster %s's policy: %v", id, err)
	}
	v, err := client.Decode[cluster.AutoscaleView](data)
	if err != nil {
		t.Fatalf("cluster %s's policy: %v", id, err)
	}
	return v
}

// checkPolicies: a policy never decides a size outside its range [min,
// max]; each job it submitted is the expand or shrink of its decision, in
// its name; and no job of a policy overlaps another job of its cluster (a
// user's, or the janitor's delete of an expired lease).
func (w *world) checkPolicies(t *rapid.T) {
	for _, id := range w.m.order {
		v := w.policy(t, id)
		if v.Policy == nil {
			continue
		}
		jobs := w.jobs(t, id)
		byID := map[string]client.Job{}
		for _, j := range jobs {
			byID[j.ID] = j
		}
		for _, d := range v.Decisions {
			if d.To < v.Min || d.To > v.Max {
				t.Fatalf("cluster %s: the policy decided %d -> %d, outside [%d, %d] (%s)", id, d.From, d.To, v.Min, v.Max, d.Reason)
			}
			if d.Job == "" {
				continue
			}
			j, ok := byID[d.Job]
			want := "expand"
			if d.To < d.From {
				want = "shrink"
			}
			if !ok || j.RequestedBy != cluster.PolicyActor || string(j.Operation) != want {
				t.Fatalf("cluster %s: decision %d -> %d names job %s, which is not the policy's %s: %+v", id, d.From, d.To, d.Job, want, j)
			}
		}
		for _, p := range jobs {
			if p.RequestedBy != cluster.PolicyActor {
				continue
			}
			for _, o := range jobs {
				// A retried job's interval runs from its first submission
				// to its last end, across whatever ran between.
				if o.ID == p.ID || o.Retries > 0 {
					continue
				}
				if p.CreatedAt.Before(endOf(o)) && o.CreatedAt.Before(endOf(p)) {
					t.Fatalf("cluster %s: the policy's job %s (%s, %s..%s) overlaps job %s (%s by %s, %s..%s)", id,
						p.ID, p.Operation, p.CreatedAt, p.EndedAt, o.ID, o.Operation, o.RequestedBy, o.CreatedAt, o.EndedAt)
				}
			}
		}
	}
}

// endOf is when a job let go of its cluster; one still running holds it.
func endOf(j client.Job) time.Time {
	if j.EndedAt.IsZero() {
		return time.Now().Add(24 * time.Hour)
	}
	return j.EndedAt
}

// quietPolicies brings every live cluster's policy to rest before the way
// out, so that no decision takes the lock between the listing and a
// delete: a value at the target holds the size (and, once stale, so does
// no value), after the policy has brought a cluster a user grew past its
// maximum back into its range. Then it checks every policy.
func (w *world) quietPolicies(t *rapid.T) {
	// push sends the target value, which also makes the policy due at the
	// janitor's next pass (a decision's job otherwise waits a period).
	push := func(id string) time.Time {
		ctx, cancel := callCtx()
		data, err := w.admin.JSON(ctx, http.MethodPost, "/v1/clusters/"+id+"/metrics", nil,
			cluster.MetricsRequest{Metrics: []cluster.MetricValue{{Name: "load", Value: 10}}})
		cancel()
		if err != nil && w.cluster(t, id).Status == "TERMINATED" {
			return time.Time{} // the janitor's delete of an expired lease ended it
		}
		if err != nil {
			t.Fatalf("pushing the target value for cluster %s: %v", id, err)
		}
		v, err := client.Decode[cluster.AutoscaleView](data)
		if err != nil {
			t.Fatalf("cluster %s's policy: %v", id, err)
		}
		return v.Metrics["load"].At
	}
	pushed := map[string]time.Time{}
	for _, c := range w.clusters(t) {
		if c.Status == "TERMINATED" || w.policy(t, c.ID).Policy == nil {
			continue
		}
		pushed[c.ID] = push(c.ID)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for round := 0; len(pushed) > 0; round++ {
		w.settle(t)
		if round > 0 && round%10 == 0 {
			for id := range pushed {
				pushed[id] = push(id)
			}
		}
		for id, at := range pushed {
			v, c := w.policy(t, id), w.cluster(t, id)
			switch {
			case c.ActiveJobID != "":
			case c.Status != "ACTIVE":
				delete(pushed, id) // a policy acts on ACTIVE clusters only
			case v.Last != nil && v.Last.At.After(at) && v.Last.To == v.Size && v.Size >= v.Min && v.Size <= v.Max:
				delete(pushed, id)
			}
		}
		if len(pushed) > 0 && time.Now().After(deadline) {
			t.Fatalf("policies still deciding 2 minutes after the target value was pushed: %v", pushed)
		}
		time.Sleep(100 * time.Millisecond)
	}
	w.checkPolicies(t)
}
