package opsmodel

import (
	"context"
	"net/http"
	"time"

	"pgregory.net/rapid"

	"github.com/heddle-io/heddle/client"
	"github.com/heddle-io/heddle/internal/domain"
)

// rollbackRoute is the route a rollback step's audit records name.
const rollbackRoute = "/v1/clusters/{cluster}/rollback"

// rollback is the model's rollback step: back to a revision drawn from
// the cluster's history, one step a request as the CLI does, each step's
// job awaited. A refused step must start no job (mutate's check); once
// the server answers that nothing is left (rollback.done), the cluster's
// definition must be the revision's: its digest equals the revision's.
// The history it reads must number revisions once each, newest first.
func (w *world) rollback(t *rapid.T) {
	c := w.drawCluster(t)
	last := w.cluster(t, c.id).LastRevision
	if last == 0 {
		t.Skip("no revision yet")
	}
	to := rapid.Int64Range(1, last).Draw(t, "revision")
	w.checkHistory(t, c.id, last)
	for step := 0; step < 6; step++ {
		// A dry run first: a plan with nothing left answers without a job,
		// which mutate would take for a fault.
		res, err := w.sendRollback(to, c.id, true)
		if err != nil {
			w.mutate(t, c, http.MethodPost, rollbackRoute, func(context.Context) (*client.Result, error) { return nil, err })
			return
		}
		if res.Rollback.Done {
			w.checkRolledBack(t, c.id, to)
			return
		}
		var job *domain.Job
		w.mutate(t, c, http.MethodPost, rollbackRoute, func(context.Context) (*client.Result, error) {
			r, err := w.sendRollback(to, c.id, false)
			if r != nil {
				job = r.Job
			}
			return r, err
		})
		if job == nil {
			return // refused: mutate checked that it started nothing
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		v, err := w.admin.WaitJob(ctx, c.id, job.ID, client.WaitOptions{Interval: 50 * time.Millisecond, MaxInterval: 200 * time.Millisecond})
		cancel()
		if err != nil {
			t.Fatalf("waiting for rollback step %s of cluster %s: %v", job.ID, c.id, err)
		}
		if v.Status != domain.JobSucceeded {
			t.Logf("rollback of %s to %d: step %s %s; the rollback stops there", c.id, to, job.ID, v.Status)
			return
		}
	}
	t.Fatalf("the rollback of cluster %s to revision %d still had steps after 5 jobs", c.id, to)
}

func (w *world) sendRollback(to int64, id string, dry bool) (*client.Result, error) {
	ctx, cancel := callCtx()
	defer cancel()
	return w.admin.Rollback(ctx, id, client.RollbackRequest{Revision: to}, client.Mutate{DryRun: dry})
}

// checkRolledBack: the invariant of a successful rollback to n.
func (w *world) checkRolledBack(t *rapid.T, id string, n int64) {
	ctx, cancel := callCtx()
	defer cancel()
	rev, err := w.admin.GetRevision(ctx, id, n)
	if err != nil {
		t.Fatalf("reading revision %d of cluster %s: %v", n, id, err)
	}
	c := w.cluster(t, id)
	def := domain.ClusterDefinition{Template: c.Template, Services: c.Services, Config: c.Config, Size: c.NodeCount}
	if def.Digest() != rev.Digest {
		t.Fatalf("cluster %s was rolled back to revision %d but its definition %+v is not the revision's %+v", id, n, def, rev.Def)
	}
	t.Logf("rollback of %s to %d: done, at revision %d", id, n, c.Revision)
}

// checkHistory: the revisions are numbered once each, newest first, up to
// the cluster's last.
func (w *world) checkHistory(t *rapid.T, id string, last int64) {
	ctx, cancel := callCtx()
	defer cancel()
	revs, err := client.Collect(w.admin.Revisions(ctx, id))
	if err != nil {
		t.Fatalf("listing cluster %s's revisions: %v", id, err)
	}
	if int64(len(revs)) != last {
		t.Fatalf("cluster %s's last revision is %d but it lists %d", id, last, len(revs))
	}
	for i, r := range revs {
		if r.Number != last-int64(i) {
			t.Fatalf("cluster %s's revisions are not numbered once each, newest first: #%d is %d", id, i, r.Number)
		}
	}
}
