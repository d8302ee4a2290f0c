package opsmodel

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"pgregory.net/rapid"

	"github.com/heddle-io/heddle/client"
	"github.com/heddle-io/heddle/internal/domain"
)

// mcluster is what the model knows of a cluster it created.
type mcluster struct {
	id, name, template string
	// jobs are the jobs the model's own requests started on it, in order.
	jobs []string
	// leased: its lease runs out within the check, and the janitor then
	// submits its delete in its owner's name.
	leased bool
}

// mutation is an accepted request that must have its audit record.
type mutation struct {
	method, route, cluster string
}

// model is the test's own record: the clusters its accepted creates made
// and every mutation the server accepted.
type model struct {
	clusters map[string]*mcluster
	order    []string // cluster ids in creation order, for drawing
	accepted []mutation
}

func newModel() *model { return &model{clusters: map[string]*mcluster{}} }

func (m *model) accept(method, route, cluster string) {
	m.accepted = append(m.accepted, mutation{method, route, cluster})
}

// created records an accepted create.
func (m *model) created(r *client.Result, req client.CreateRequest) {
	c := &mcluster{id: r.Cluster.ID, name: req.Name, template: req.Template, leased: req.Lease != 0}
	if r.Job != nil {
		c.jobs = append(c.jobs, r.Job.ID)
	}
	m.clusters[c.id] = c
	m.order = append(m.order, c.id)
	// The create's audit record names the cluster it made (api.noteMade).
	m.accept(http.MethodPost, "/v1/clusters", r.Cluster.ID)
}

// drawCluster picks one of the model's clusters (TERMINATED ones too: what
// is asked of them must be refused and change nothing); with none yet the
// step is skipped.
func (w *world) drawCluster(t *rapid.T) *mcluster {
	if len(w.m.order) == 0 {
		t.Skip("no cluster yet")
	}
	return w.m.clusters[rapid.SampledFrom(w.m.order).Draw(t, "cluster")]
}

// clusterIDs is the set of clusters the server lists.
func clusterIDs(cs []client.Cluster) map[string]bool {
	out := map[string]bool{}
	for _, c := range cs {
		out[c.ID] = true
	}
	return out
}

// mine lists the jobs of a cluster that the tenant's admin asked for (the
// janitor's verifications run alongside; its delete of an expired lease is
// in the owner's name, and mutate allows for it).
func mine(js []client.Job) map[string]bool {
	out := map[string]bool{}
	for _, j := range js {
		if j.RequestedBy == adminName {
			out[j.ID] = true
		}
	}
	return out
}

// mutate sends one job-submitting request on cluster c and checks its
// outcome: an accepted one is recorded (job and audit), a refused one must
// have started no job.
func (w *world) mutate(t *rapid.T, c *mcluster, method, route string, call func(ctx context.Context) (*client.Result, error)) {
	before := mine(w.jobs(t, c.id))
	ctx, cancel := callCtx()
	r, err := call(ctx)
	cancel()
	if err != nil {
		ce := refused(t, route+" "+c.id, err)
		for _, j := range w.jobs(t, c.id) {
			if j.RequestedBy != adminName || before[j.ID] || (c.leased && j.Operation == domain.OpDelete) {
				continue
			}
			t.Fatalf("%s %s was refused (%d %s: %v) but started job %s (%s)", method, route, ce.Status, ce.Code, ce, j.ID, j.Operation)
		}
		t.Logf("%s %s %s: refused %d %s", method, route, c.id, ce.Status, ce.Code)
		return
	}
	if r.Job == nil {
		t.Fatalf("%s %s %s: accepted without a job: %+v", method, route, c.id, r)
	}
	c.jobs = append(c.jobs, r.Job.ID)
	w.m.accept(method, route, c.id)
	t.Logf("%s %s %s: job %s", method, route, c.id, r.Job.ID)
}

// create asks for a cluster; a refusal must have made none.
func (w *world) create(t *rapid.T, req client.CreateRequest) {
	before := clusterIDs(w.clusters(t))
	ctx, cancel := callCtx()
	r, err := w.admin.CreateCluster(ctx, req, client.Mutate{})
	cancel()
	if err != nil {
		ce := refused(t, "create "+req.Name, err)
		for id := range clusterIDs(w.clusters(t)) {
			if !before[id] {
				t.Fatalf("create %q was refused (%d %s: %v) but cluster %s appeared", req.Name, ce.Status, ce.Code, ce, id)
			}
		}
		t.Logf("create %s (%s, %d): refused %d %s", req.Name, req.Template, req.Size, ce.Status, ce.Code)
		return
	}
	w.m.created(r, req)
	t.Logf("create %s (%s, %d): cluster %s job %s", req.Name, req.Template, req.Size, r.Cluster.ID, r.Job.ID)
}

var (
	names     = []string{"alpha", "beta", "gamma", "delta"}
	templates = []string{"ops", "sim"}
)

func (w *world) drawCreate(t *rapid.T) client.CreateRequest {
	pool := names
	if !duplicateNamesFixed {
		pool = w.freeNames(t)
	}
	req := client.CreateRequest{
		Name:     rapid.SampledFrom(pool).Draw(t, "name"),
		Template: rapid.SampledFrom(templates).Draw(t, "template"),
		Size:     rapid.IntRange(1, 3).Draw(t, "size"),
	}
	if rapid.IntRange(0, 5).Draw(t, "shortLease") == 0 {
		// Short enough to run out within the check: the janitor's delete
		// joins the interleaving.
		req.Lease = domain.Duration(2 * time.Second)
	}
	return req
}

// freeNames are the names no live cluster has (one whose create is still
// to be planned counts as live: it is listed as soon as it is accepted).
func (w *world) freeNames(t *rapid.T) []string {
	taken := map[string]bool{}
	for _, c := range w.clusters(t) {
		if c.Status != domain.ClusterTerminated {
			taken[c.Name] = true
		}
	}
	var out []string
	for _, n := range names {
		if !taken[n] {
			out = append(out, n)
		}
	}
	if len(out) == 0 {
		t.Skip("every name is taken")
	}
	return out
}

// actions are the model's ways in, each one step.
func (w *world) actions() map[string]func(*rapid.T) {
	return map[string]func(*rapid.T){
		"": w.checkStep,
		"create": func(t *rapid.T) {
			w.create(t, w.drawCreate(t))
		},
		// Two creates of one name at once: at most one may live.
		"createRace": func(t *rapid.T) {
			if !duplicateNamesFixed {
				t.Skip("racing creates wait for the duplicate-names fix (duplicateNamesFixed)")
			}
			req := w.drawCreate(t)
			for _, r := range w.concurrently(t, 2, func(ctx context.Context) (*client.Result, error) {
				return w.admin.CreateCluster(ctx, req, client.Mutate{})
			}) {
				w.m.created(r, req)
				t.Logf("racing create %s: cluster %s", req.Name, r.Cluster.ID)
			}
		},
		// A catalog write (a new version of every template) racing a create.
		"importRacingCreate": func(t *rapid.T) {
			req := w.drawCreate(t)
			doc := w.catalogVersion(t)
			var wg sync.WaitGroup
			var importErr error
			wg.Go(func() {
				ctx, cancel := callCtx()
				defer cancel()
				_, importErr = w.admin.ImportCatalog(ctx, doc, "application/yaml")
			})
			w.create(t, req)
			wg.Wait()
			if importErr != nil {
				t.Fatalf("importing the catalog: %v", importErr)
			}
			w.m.accept(http.MethodPost, "/v1/catalog", "")
		},
		"delete": func(t *rapid.T) {
			c := w.drawCluster(t)
			force := rapid.Bool().Draw(t, "force")
			w.mutate(t, c, http.MethodDelete, "/v1/clusters/{cluster}", func(ctx context.Context) (*client.Result, error) {
				return w.admin.DeleteCluster(ctx, c.id, force, client.Mutate{})
			})
		},
		"expand": func(t *rapid.T) {
			c := w.drawCluster(t)
			n := rapid.IntRange(1, 2).Draw(t, "count")
			w.mutate(t, c, http.MethodPost, "/v1/clusters/{cluster}/expand", func(ctx context.Context) (*client.Result, error) {
				return w.admin.Expand(ctx, c.id, client.ExpandRequest{Count: n}, client.Mutate{})
			})
		},
		"shrink": func(t *rapid.T) {
			c := w.drawCluster(t)
			force := rapid.Bool().Draw(t, "force")
			w.mutate(t, c, http.MethodPost, "/v1/clusters/{cluster}/shrink", func(ctx context.Context) (*client.Result, error) {
				return w.admin.Shrink(ctx, c.id, client.ShrinkRequest{Count: 1, Force: force}, client.Mutate{})
			})
		},
		"serviceAction": func(t *rapid.T) {
			c := w.drawCluster(t)
			action := rapid.SampledFrom([]string{"start", "stop", "restart", "rolling-restart"}).Draw(t, "action")
			req := client.ServiceActionRequest{}
			if action == "rolling-restart" {
				req.BatchSize = 1
			}
			w.mutate(t, c, http.MethodPost, "/v1/clusters/{cluster}/"+action, func(ctx context.Context) (*client.Result, error) {
				return w.admin.ServiceAction(ctx, c.id, action, req, client.Mutate{})
			})
		},
		"reconfigure": func(t *rapid.T) {
			c := w.drawCluster(t)
			restart := rapid.Bool().Draw(t, "restart")
			w.mutate(t, c, http.MethodPost, "/v1/clusters/{cluster}/reconfigure", func(ctx context.Context) (*client.Result, error) {
				return w.admin.Reconfigure(ctx, c.id, client.ReconfigureRequest{Config: []byte(`{"step":"` + time.Now().Format(time.RFC3339Nano) + `"}`), Restart: restart}, client.Mutate{})
			})
		},
		"addServices": func(t *rapid.T) {
			c := w.drawCluster(t)
			w.mutate(t, c, http.MethodPost, "/v1/clusters/{cluster}/add-services", func(ctx context.Context) (*client.Result, error) {
				return w.admin.AddServices(ctx, c.id, client.AddServicesRequest{Services: []string{"extra"}}, client.Mutate{})
			})
		},
		"removeServices": func(t *rapid.T) {
			c := w.drawCluster(t)
			w.mutate(t, c, http.MethodPost, "/v1/clusters/{cluster}/remove-services", func(ctx context.Context) (*client.Result, error) {
				return w.admin.RemoveServices(ctx, c.id, client.RemoveServicesRequest{Services: []string{"extra"}}, client.Mutate{})
			})
		},
		"sync": func(t *rapid.T) {
			c := w.drawCluster(t)
			w.mutate(t, c, http.MethodPost, "/v1/clusters/{cluster}/sync", func(ctx context.Context) (*client.Result, error) {
				return w.admin.Sync(ctx, c.id, client.SyncRequest{}, client.Mutate{})
			})
		},
		"extendLease": func(t *rapid.T) {
			c := w.drawCluster(t)
			before := w.cluster(t, c.id)
			ctx, cancel := callCtx()
			after, err := w.admin.ExtendLease(ctx, c.id, client.ExtendRequest{By: domain.Duration(24 * time.Hour)})
			cancel()
			if err != nil {
				ce := refused(t, "lease "+c.id, err)
				if now := w.cluster(t, c.id); !now.ExpiresAt.Equal(before.ExpiresAt) {
					t.Fatalf("a refused extension (%s) moved the expiry from %s to %s", ce.Code, before.ExpiresAt, now.ExpiresAt)
				}
				return
			}
			if !before.ExpiresAt.IsZero() && after.ExpiresAt.Sub(before.ExpiresAt) != 24*time.Hour {
				t.Fatalf("an extension by 24h moved the expiry from %s to %s", before.ExpiresAt, after.ExpiresAt)
			}
			w.m.accept(http.MethodPost, "/v1/clusters/{cluster}/lease", c.id)
		},
		// abort, pause, resume or retry of the cluster's latest job.
		"jobControl": func(t *rapid.T) {
			c := w.drawCluster(t)
			action := rapid.SampledFrom([]string{"abort", "pause", "resume", "retry"}).Draw(t, "control")
			job := w.cluster(t, c.id).LatestJobID
			if job == "" {
				t.Skip("no job")
			}
			ctx, cancel := callCtx()
			before, err := w.admin.GetJob(ctx, c.id, job)
			if err != nil {
				cancel()
				t.Fatalf("reading job %s: %v", job, err)
			}
			_, err = w.admin.ControlJob(ctx, c.id, job, action)
			cancel()
			if err != nil {
				ce := refused(t, action+" "+job, err)
				t.Logf("%s job %s (%s): refused %d %s", action, job, before.Status, ce.Status, ce.Code)
				return
			}
			w.m.accept(http.MethodPost, "/v1/clusters/{cluster}/jobs/{job}/"+action, c.id)
			t.Logf("%s job %s (%s): accepted", action, job, before.Status)
		},
		"faults": func(t *rapid.T) {
			w.setFaults(t, rapid.SampledFrom([]string{"ok", "fail", "hang", "flaky"}).Draw(t, "mode"))
		},
		"veto": func(t *rapid.T) {
			on := rapid.Bool().Draw(t, "veto")
			if on && !vetoUndoFixed {
				t.Skip("vetoes wait for their undo's fix (vetoUndoFixed)")
			}
			w.veto.Store(on)
		},
		"restartServer": func(t *rapid.T) {
			if !preStartRestartFixed {
				w.skipIfPending(t)
			}
			w.restart(t)
		},
		"rollback": w.rollback,
		"wait": func(t *rapid.T) {
			time.Sleep(time.Duration(rapid.IntRange(1, 10).Draw(t, "tenths")) * 100 * time.Millisecond)
		},
		"drift":           w.driftStep,
		"pushLoad":        w.pushLoad,
		"importOrphaned":  w.importOrphaned,
		"backupWhileBusy": w.backupWhileBusy,
		"applyRace":       w.applyRace,
		"staticPool":      w.staticStep,
		"failedAddExpand": w.expandAfterFailedAdd,
		"killImport":      w.killDuringImport,
		"killBackup":      w.killDuringBackup,
		"settle": func(t *rapid.T) {
			w.settle(t)
			w.checkQuiet(t)
		},
	}
}

// skipIfPending skips the step while some job is PENDING (see
// preStartRestartFixed).
func (w *world) skipIfPending(t *rapid.T) {
	for _, c := range w.clusters(t) {
		if c.ActiveJobID == "" {
			continue
		}
		ctx, cancel := callCtx()
		j, err := w.admin.GetJob(ctx, c.ID, c.ActiveJobID)
		cancel()
		if err == nil && j.Status == domain.JobPending {
			t.Skip("a job waits for its pre-start hooks, and restarts then wait for their fix (preStartRestartFixed)")
		}
	}
}

// concurrently runs n copies of call at once and returns what succeeded;
// each failure must be a refusal.
func (w *world) concurrently(t *rapid.T, n int, call func(ctx context.Context) (*client.Result, error)) []*client.Result {
	var mu sync.Mutex
	var wg sync.WaitGroup
	var errs []error
	var out []*client.Result
	for range n {
		wg.Go(func() {
			ctx, cancel := callCtx()
			defer cancel()
			r, err := call(ctx)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return
			}
			out = append(out, r)
		})
	}
	wg.Wait()
	for _, err := range errs {
		refused(t, "racing create", err)
	}
	return out
}

// catalogVersion is the catalog with a new description on every template,
// so that importing it makes new template versions for sync to move to.
func (w *world) catalogVersion(t *rapid.T) []byte {
	doc := w.catalog(t)
	stamp := fmt.Sprintf("version of %s", time.Now().Format(time.RFC3339Nano))
	return []byte(strings.ReplaceAll(string(doc), "description: Local nodes running base (and extra when added).",
		"description: Local nodes running base, "+stamp))
}

// checkStep holds after every step, with jobs in flight.
func (w *world) checkStep(t *rapid.T) {
	cs, u := w.consistent(t)
	w.checkCounters(t, cs, u)
}

// consistent reads the clusters between two reads of the tenant that
// agree: the listing then saw the counters' state (a job that released a
// reservation meanwhile changes the second read, and the pair is read again).
func (w *world) consistent(t *rapid.T) ([]client.Cluster, domain.TenantUsage) {
	for try := 0; ; try++ {
		u1 := w.tenant(t).Usage
		cs := w.clusters(t)
		u2 := w.tenant(t).Usage
		if u1 == u2 {
			return cs, u1
		}
		if try == 20 {
			t.Fatalf("the tenant's usage changed under every listing (%+v, %+v)", u1, u2)
		}
	}
}

func (w *world) checkCounters(t *rapid.T, cs []client.Cluster, u domain.TenantUsage) {
	if u.Clusters < 0 || u.Clusters > maxClusters || u.Nodes < 0 || u.Nodes > maxNodes {
		t.Fatalf("usage %+v is outside 0..%d clusters, 0..%d nodes", u, maxClusters, maxNodes)
	}
	live := 0
	byName := map[string]string{}
	for _, c := range cs {
		if _, ok := w.m.clusters[c.ID]; !ok {
			t.Fatalf("cluster %s (%s) exists, but no create of the model's was accepted for it", c.ID, c.Name)
		}
		if c.Status == domain.ClusterTerminated {
			continue
		}
		live++
		if other, dup := byName[c.Name]; dup {
			t.Fatalf("two live clusters are named %q: %s and %s", c.Name, other, c.ID)
		}
		byName[c.Name] = c.ID
	}
	ids := clusterIDs(cs)
	for id := range w.m.clusters {
		if !ids[id] {
			t.Fatalf("cluster %s, accepted, is not listed", id)
		}
	}
	if u.Clusters != live {
		t.Fatalf("the cluster counter says %d, but %d clusters live: %s", u.Clusters, live, describe(cs))
	}
}

func describe(cs []client.Cluster) string {
	var b strings.Builder
	for _, c := range cs {
		fmt.Fprintf(&b, "\n  %s %s %s nodes=%d job=%s %s", c.ID, c.Name, c.Status, c.NodeCount, c.LatestJobID, c.StatusMessage)
	}
	return b.String()
}

// settle waits until no cluster has a job, resuming the paused ones (the
// model paused them; left alone they would hold their cluster for ever).
// A job that does not end within the deadline fails the check.
func (w *world) settle(t *rapid.T) {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		var busy []string
		for _, c := range w.clusters(t) {
			if c.ActiveJobID == "" {
				continue
			}
			ctx, cancel := callCtx()
			j, err := w.admin.GetJob(ctx, c.ID, c.ActiveJobID)
			if err == nil && j.Status == domain.JobPaused {
				_, err = w.admin.ControlJob(ctx, c.ID, c.ActiveJobID, "resume")
				if err == nil {
					w.m.accept(http.MethodPost, "/v1/clusters/{cluster}/jobs/{job}/resume", c.ID)
				}
			}
			cancel()
			if err != nil && !client.IsNotFound(err) {
				refused(t, "resuming "+c.ActiveJobID, err)
			}
			status := "?"
			if j != nil {
				status = string(j.Status)
			}
			busy = append(busy, fmt.Sprintf("%s (%s) job %s %s", c.ID, c.Status, c.ActiveJobID, status))
		}
		if len(busy) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("jobs did not end within 2 minutes: %s", strings.Join(busy, "; "))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// checkQuiet holds when no job runs: counters equal what exists, every
// job ended, ACTIVE clusters' services carry run states, node-hours grow
// by the live nodes only, and every accepted mutation has its audit record.
//
// The janitor may start a job meanwhile (the delete of an expired lease):
// then the checks wait for it and start again.
func (w *world) checkQuiet(t *rapid.T) {
	for try := 0; ; try++ {
		if !w.quiet(t) {
			return
		}
		if try == 5 {
			t.Fatalf("jobs kept starting while nothing was asked")
		}
		w.settle(t)
	}
}

// busy says whether a job holds one of the clusters now.
func (w *world) busy(t *rapid.T) bool {
	for _, c := range w.clusters(t) {
		if c.ActiveJobID != "" {
			return true
		}
	}
	return false
}

// quiet runs checkQuiet's checks once; true: a job started meanwhile, and
// they are to run again once it ends.
func (w *world) quiet(t *rapid.T) bool {
	cs, u := w.consistent(t)
	w.checkCounters(t, cs, u)
	for _, c := range cs {
		if c.ActiveJobID != "" {
			return true
		}
	}
	nodes, counted := 0, 0
	liveNodes := map[string]int{}
	for _, c := range cs {
		for _, j := range w.jobs(t, c.ID) {
			if !j.Status.Terminal() {
				if w.cluster(t, c.ID).ActiveJobID == j.ID {
					return true // started since the listing
				}
				t.Fatalf("cluster %s (%s) holds no job, but its job %s (%s) is %s", c.ID, c.Status, j.ID, j.Operation, j.Status)
			}
		}
		n := 0
		var statuses []string
		for _, node := range w.nodes(t, c.ID) {
			if node.Status != domain.NodeDeleted {
				n++
				statuses = append(statuses, node.ID+" "+string(node.Status))
			}
		}
		liveNodes[c.ID] = n
		if c.Status == domain.ClusterTerminated {
			if n != 0 {
				t.Fatalf("TERMINATED cluster %s (%s) has %d nodes not deleted: %s", c.ID, c.StatusMessage, n, strings.Join(statuses, ", "))
			}
			continue
		}
		nodes += n
		counted += c.NodeCount
		if c.Status == domain.ClusterActive {
			w.checkRunStates(t, c)
		}
	}
	if (u.Nodes != nodes || counted != nodes) && !w.busy(t) {
		t.Fatalf("the node counter says %d, the clusters' node counts add to %d, and %d nodes live: %s", u.Nodes, counted, nodes, describe(cs))
	}
	if w.busy(t) || w.checkPool(t, cs) {
		return true
	}
	if msg := w.checkUsage(t, liveNodes); msg != "" {
		if w.busy(t) {
			return true
		}
		t.Fatalf("%s", msg)
	}
	w.checkAudit(t)
	return false
}

// checkRunStates: every service of every node of an ACTIVE cluster carries
// a run state (failed too: ACTIVE says only that the last job succeeded,
// and a sync after an aborted add-services leaves the service as it was);
// after a successful create, start or restart they all run, after a stop
// none does.
func (w *world) checkRunStates(t *rapid.T, c client.Cluster) {
	if w.m.clusters[c.ID].template != "ops" {
		return // the latency provider's nodes run no action
	}
	if now := w.cluster(t, c.ID); now.Status != domain.ClusterActive || now.ActiveJobID != "" {
		return // the janitor's delete of an expired lease began since the listing
	}
	var want domain.RunState
	if c.LatestJobID != "" {
		ctx, cancel := callCtx()
		j, err := w.admin.GetJob(ctx, c.ID, c.LatestJobID)
		cancel()
		if err != nil {
			t.Fatalf("reading job %s: %v", c.LatestJobID, err)
		}
		if j.Status == domain.JobSucceeded {
			switch j.Operation {
			case domain.OpCreate, domain.OpStartServices, domain.OpRestartServices, domain.OpRollingRestart:
				want = domain.RunRunning
			case domain.OpStopServices:
				want = domain.RunStopped
			}
		}
	}
	for _, n := range w.nodes(t, c.ID) {
		if n.Status == domain.NodeDeleted {
			continue
		}
		for _, s := range n.Services {
			st, ok := n.ServiceStates[s]
			switch {
			case !ok || st.State == "":
				t.Fatalf("ACTIVE cluster %s: node %s carries no run state for %s; its jobs:%s", c.ID, n.ID, s, w.history(t, c.ID))
			case want != "" && st.State != want:
				t.Fatalf("ACTIVE cluster %s after its job %s: node %s's %s is %s, not %s; its jobs:%s", c.ID, c.LatestJobID, n.ID, s, st.State, want, w.history(t, c.ID))
			}
		}
	}
}

// history describes a cluster's jobs, oldest first, for messages.
func (w *world) history(t *rapid.T, id string) string {
	js := w.jobs(t, id)
	sort.Slice(js, func(i, j int) bool { return js[i].ID < js[j].ID })
	var b strings.Builder
	for _, j := range js {
		fmt.Fprintf(&b, "\n  %s %s %s by %s (%d/%d tasks) %s", j.ID, j.Operation, j.Status, j.RequestedBy, j.TaskDone, j.TaskTotal, j.StatusMessage)
	}
	return b.String()
}

// checkUsage: between two usage reports with nothing running, a cluster's
// node-hours grow by its live nodes times the time between the reports
// (bounded by the client's clock around each), and not at all when it has
// none: node lifetimes open and close with the nodes. It answers what is
// wrong, "" when nothing is.
func (w *world) checkUsage(t *rapid.T, live map[string]int) string {
	r1, a1, b1 := w.usageTotals(t)
	time.Sleep(50 * time.Millisecond)
	r2, a2, b2 := w.usageTotals(t)
	const eps = 1e-9
	for id, n := range live {
		d := r2[id] - r1[id]
		lo, hi := float64(n)*a2.Sub(b1).Hours(), float64(n)*b2.Sub(a1).Hours()
		if d < lo-eps || d > hi+eps {
			return fmt.Sprintf("cluster %s with %d live nodes gained %.9f node-hours between two reports, not within [%.9f, %.9f]", id, n, d, lo, hi)
		}
	}
	for id, v := range r2 {
		if _, ok := live[id]; !ok && math.Abs(v-r1[id]) > eps {
			return fmt.Sprintf("usage grows for %s, which is no cluster of the tenant", id)
		}
	}
	return ""
}

// checkAudit: each accepted mutation has a "done" record of its route and
// cluster (the client's resends of one request may add more).
func (w *world) checkAudit(t *rapid.T) {
	have := map[mutation]int{}
	for _, r := range w.audit(t) {
		if r.Outcome == "done" {
			have[mutation{r.Method, r.Route, r.Target["cluster"]}]++
		}
	}
	want := map[mutation]int{}
	for _, m := range w.m.accepted {
		want[m]++
	}
	var missing []string
	for m, n := range want {
		if have[m] < n {
			missing = append(missing, fmt.Sprintf("%s %s %s: %d accepted, %d recorded", m.method, m.route, m.cluster, n, have[m]))
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Fatalf("accepted mutations without an audit record:\n  %s", strings.Join(missing, "\n  "))
	}
}

// wayOut ends a check: with the faults and the veto cleared, every live
// cluster's documented way out, a plain delete, must be accepted and
// succeed, which leaves the tenant's counters at zero. (A cluster whose
// lease ran out may be under the janitor's delete already; it must end
// TERMINATED all the same, or take the plain delete after.)
func (w *world) wayOut(t *rapid.T) {
	w.setFaults(t, "ok")
	w.veto.Store(false)
	w.quietPolicies(t)
	w.checkQuiet(t)
	asked := map[string]bool{} // a plain delete was asked, true: a forced one too
	for round := 0; ; round++ {
		left := 0
		for _, c := range w.clusters(t) {
			if c.Status == domain.ClusterTerminated {
				continue
			}
			left++
			if c.ActiveJobID != "" {
				continue // the janitor's delete of an expired lease
			}
			force, done := asked[c.ID]
			switch {
			case done && (force || failedDeleteFixed):
				t.Fatalf("cluster %s is %s after its delete, with no fault left: %s; its jobs:%s", c.ID, c.Status, c.StatusMessage, w.history(t, c.ID))
			case done:
				// See failedDeleteFixed: the plain delete failed on nodes a
				// failed delete had removed; a forced one must still work.
				t.Logf("cluster %s is %s after its plain delete (failedDeleteFixed); forcing it: %s", c.ID, c.Status, c.StatusMessage)
				force = true
			}
			ctx, cancel := callCtx()
			r, err := w.admin.DeleteCluster(ctx, c.ID, force, client.Mutate{})
			cancel()
			if err != nil {
				t.Fatalf("cluster %s is %s (%s) and its delete is refused: %v; its jobs:%s", c.ID, c.Status, c.StatusMessage, err, w.history(t, c.ID))
			}
			asked[c.ID] = force
			w.m.clusters[c.ID].jobs = append(w.m.clusters[c.ID].jobs, r.Job.ID)
			w.m.accept(http.MethodDelete, "/v1/clusters/{cluster}", c.ID)
		}
		if left == 0 {
			break
		}
		if round == 4 {
			t.Fatalf("clusters still live after their deletes:%s", describe(w.clusters(t)))
		}
		w.settle(t)
	}
	w.checkQuiet(t)
	if u := w.tenant(t).Usage; u.Clusters != 0 || u.Nodes != 0 {
		t.Fatalf("every cluster is deleted, but the tenant uses %+v", u)
	}
}
