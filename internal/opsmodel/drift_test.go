package opsmodel

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/heddle-io/heddle/client"
	"github.com/heddle-io/heddle/internal/domain"
)

// maxUnhealthy is the "ops" template's administration.repair.maxUnhealthy
// (testdata/catalog.yaml; mode auto).
const maxUnhealthy = 1

// Counted across checks, for the focused test's closing line: proof that
// its runs lose nodes, replace them and halt, not only that nothing broke.
var (
	driftSeen      struct{ lost, halted, replaced, inPlace atomic.Int64 }
	countedRepairs sync.Map // cluster/job of the repairs counted
)

// TestOperationsModelDrift runs the model with the drift and repair steps
// drawn as often as all the others together, among the steps that change
// a cluster's nodes and jobs, so that losses, replacements, halts and
// their races with users' jobs are common in a short run; every check of
// TestOperationsModel holds after each step.
func TestOperationsModelDrift(t *testing.T) {
	if testing.Short() {
		t.Skip("the whole model covers the drift steps in -short runs")
	}
	t.Parallel()
	root := t.TempDir()
	t.Cleanup(func() {
		t.Logf("%d nodes lost, %d replaced, %d repaired in place, %d halts past the cap", driftSeen.lost.Load(),
			driftSeen.replaced.Load(), driftSeen.inPlace.Load(), driftSeen.halted.Load())
	})
	rapid.Check(t, func(rt *rapid.T) {
		w := newWorld(rt, root)
		defer w.close()
		all := w.actions()
		// The cap after every step here, not only after drift steps.
		actions := map[string]func(*rapid.T){"": func(t *rapid.T) { all[""](t); w.checkRepairs(t) }}
		for _, name := range []string{"create", "expand", "shrink", "serviceAction", "jobControl", "faults", "settle"} {
			actions[name] = all[name]
		}
		for i := range 7 {
			actions[fmt.Sprintf("drift%d", i)] = w.driftStep
		}
		// A cluster to lose nodes of from the first step: rapid ends a
		// sequence whose first steps all skip.
		w.create(rt, client.CreateRequest{Name: "lossy", Template: "ops", Size: rapid.IntRange(2, 3).Draw(rt, "size")})
		rt.Repeat(actions)
		w.wayOut(rt)
		w.checkRepairs(rt)
	})
}

// driftStep is one of the drift and repair steps: lose one or two of a
// cluster's nodes (the local provider stops their SSH servers and
// processes, as a machine that died) and check it for drift, which under
// the "ops" template's repair auto makes the janitor replace a lost node,
// or halt when more than maxUnhealthy drifted; check a cluster for drift
// with nothing lost; or ask for a repair by hand. After it, the repair cap
// must hold (checkRepairs).
func (w *world) driftStep(t *rapid.T) {
	switch rapid.SampledFrom([]string{"lose", "check", "repair"}).Draw(t, "drift") {
	case "lose":
		w.loseNodes(t)
	case "check":
		c := w.drawCluster(t)
		w.driftCheck(t, c)
	case "repair":
		c := w.drawCluster(t)
		w.mutate(t, c, http.MethodPost, "/v1/clusters/{cluster}/repair", func(ctx context.Context) (*client.Result, error) {
			return w.post(ctx, c.id, "repair", map[string]any{})
		})
	}
	w.checkRepairs(t)
}

func (w *world) post(ctx context.Context, cluster, op string, body any) (*client.Result, error) {
	data, err := w.admin.JSON(ctx, http.MethodPost, "/v1/clusters/"+cluster+"/"+op, nil, body)
	if err != nil {
		return nil, err
	}
	return client.Decode[*client.Result](data)
}

// driftCheck asks for a drift check of c and waits (bounded) for its end:
// a user's later step may end it first, which is its right (invariant 15).
func (w *world) driftCheck(t *rapid.T, c *mcluster) string {
	var job string
	w.mutate(t, c, http.MethodPost, "/v1/clusters/{cluster}/drift", func(ctx context.Context) (*client.Result, error) {
		r, err := w.post(ctx, c.id, "drift", nil)
		if err == nil && r.Job != nil {
			job = r.Job.ID
		}
		return r, err
	})
	if job == "" {
		return ""
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := callCtx()
		j, err := w.admin.GetJob(ctx, c.id, job)
		cancel()
		if err != nil {
			t.Fatalf("reading drift check %s: %v", job, err)
		}
		if j.Status.Terminal() {
			return job
		}
		if time.Now().After(deadline) {
			t.Fatalf("drift check %s did not end within a minute (%s)", job, j.Status)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// loseNodes loses one or two live nodes of an "ops" cluster and checks it
// for drift. Past the cap a repair by hand must be refused with
// repair_halted and start nothing. The lost machines come back at the end
// of the step, as machines powered on again, unless heddle replaced them
// meanwhile: a later plain delete would otherwise fail on them, which is
// how a lost machine behaves, not something the model checks here.
// nodeLoser is what losing a node needs of the check's server: the
// in-process local server can stop a node's SSH server and processes; a
// child process of the kill variant cannot be asked to.
type nodeLoser interface {
	LoseNode(tenant, cluster, node string) error
	FindNodes(ctx context.Context) error
}

func (w *world) loseNodes(t *rapid.T) {
	srv, ok := w.srv.(nodeLoser)
	if !ok {
		t.Skip("the server is a child process (the kill variant): its nodes cannot be lost from here")
	}
	var ops []string
	for _, id := range w.m.order {
		if w.m.clusters[id].template == "ops" {
			ops = append(ops, id)
		}
	}
	if len(ops) == 0 {
		t.Skip("no cluster on the local provider: the latency provider's nodes cannot be lost")
	}
	c := w.m.clusters[rapid.SampledFrom(ops).Draw(t, "cluster")]
	var live []string
	for _, n := range w.nodes(t, c.id) {
		if n.Status == domain.NodeActive {
			live = append(live, n.ID)
		}
	}
	if len(live) == 0 {
		t.Skip("no active node")
	}
	k := rapid.IntRange(1, min(2, len(live))).Draw(t, "lost")
	var lost []string
	for _, id := range rapid.Permutation(live).Draw(t, "order")[:k] {
		// A node that no process serves (deleted meanwhile) is no loss.
		if err := srv.LoseNode(tenantID, c.id, id); err == nil {
			lost = append(lost, id)
		}
	}
	defer func() {
		ctx, cancel := callCtx()
		defer cancel()
		if err := srv.FindNodes(ctx); err != nil {
			t.Fatalf("bringing the lost nodes back: %v", err)
		}
	}()
	driftSeen.lost.Add(int64(len(lost)))
	t.Logf("lost %v of cluster %s", lost, c.id)
	job := w.driftCheck(t, c)
	v := w.cluster(t, c.id)

	if job == "" || v.Drift == nil || v.Drift.JobID != job || v.Drift.Drifted <= maxUnhealthy {
		return
	}
	// Past the cap: the janitor halts, and so does a repair by hand.
	before := mine(w.jobs(t, c.id))
	ctx, cancel := callCtx()
	_, err := w.post(ctx, c.id, "repair", map[string]any{})
	cancel()
	if err == nil {
		t.Fatalf("cluster %s: %d nodes drifted (cap %d), and a repair was accepted", c.id, v.Drift.Drifted, maxUnhealthy)
	}
	ce := refused(t, "repair past the cap", err)
	if ce.Code == "repair_halted" {
		driftSeen.halted.Add(1)
	}
	if ce.Code != "repair_halted" && ce.Code != "job_state" && ce.Code != "cluster_busy" {
		t.Fatalf("cluster %s: a repair past the cap was refused with %d %s, not repair_halted: %v", c.id, ce.Status, ce.Code, ce)
	}
	for _, j := range w.jobs(t, c.id) {
		if j.RequestedBy == adminName && !before[j.ID] {
			t.Fatalf("a refused repair started job %s (%s)", j.ID, j.Operation)
		}
	}
}

// checkRepairs is the repair cap (invariant 15): every repair job, the
// janitor's and the model's, repaired at most maxUnhealthy nodes (a
// replacement: the nodes it deleted; in place: the nodes it ran on), and
// none overlapped another job of its cluster.
func (w *world) checkRepairs(t *rapid.T) {
	for _, c := range w.clusters(t) {
		if w.m.clusters[c.ID].template != "ops" {
			continue
		}
		js := w.jobs(t, c.ID)
		for _, r := range js {
			if r.Operation != domain.OpRepair {
				continue
			}
			n, replaced := w.repairedNodes(t, c.ID, r.ID)
			if r.Status == domain.JobSucceeded {
				if _, seen := countedRepairs.LoadOrStore(c.ID+"/"+r.ID, true); !seen && replaced {
					driftSeen.replaced.Add(1)
				} else if !seen {
					driftSeen.inPlace.Add(1)
				}
			}
			if n > maxUnhealthy {
				t.Fatalf("repair %s of cluster %s (by %s) repaired %d nodes, more than maxUnhealthy %d", r.ID, c.ID, r.RequestedBy, n, maxUnhealthy)
			}
			for _, j := range js {
				if j.ID == r.ID || !overlap(r, j) {
					continue
				}
				t.Fatalf("repair %s of cluster %s (%s to %s) overlapped job %s (%s, by %s, %s to %s)",
					r.ID, c.ID, r.CreatedAt.Format(time.RFC3339Nano), ended(r), j.ID, j.Operation, j.RequestedBy, j.CreatedAt.Format(time.RFC3339Nano), ended(j))
			}
		}
	}
}

func ended(j client.Job) string {
	if j.EndedAt.IsZero() {
		return "now"
	}
	return j.EndedAt.Format(time.RFC3339Nano)
}

// overlap: two jobs of one cluster ran at the same time. One still
// running overlaps whatever began after it.
func overlap(a, b client.Job) bool {
	far := time.Now().Add(time.Hour)
	end := func(j client.Job) time.Time {
		if j.EndedAt.IsZero() {
			return far
		}
		return j.EndedAt
	}
	return a.CreatedAt.Before(end(b)) && b.CreatedAt.Before(end(a))
}

// repairedNodes is how many nodes a repair job repaired, and whether it
// replaced them.
func (w *world) repairedNodes(t *rapid.T, cluster, job string) (int, bool) {
	ctx, cancel := callCtx()
	defer cancel()
	tasks, err := client.Collect(w.admin.Tasks(ctx, cluster, job, client.TaskFilter{}))
	if err != nil {
		t.Fatalf("listing repair %s's tasks: %v", job, err)
	}
	var deleted, touched []string
	for _, task := range tasks {
		switch {
		case task.NodeID == "" || task.Rollback: // a rollback undoes, and repairs nothing
		case task.Action == domain.ActionDelete:
			deleted = append(deleted, task.NodeID)
		case !slices.Contains(touched, task.NodeID):
			touched = append(touched, task.NodeID)
		}
	}
	if len(deleted) > 0 {
		return len(deleted), true
	}
	return len(touched), false
}
