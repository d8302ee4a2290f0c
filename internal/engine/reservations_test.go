package engine

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/store"
	"github.com/heddle-io/heddle/planner"
)

// Which path gives each reservation back, as these tests drive them:
//
//	quota (clusters, nodes) and node count
//	  taken:      step 1 of a submission (stepOne), a retry (reopenJob),
//	              a retry of a withdrawn job (resubmit)
//	  given back: a job's end (finish: the ending's effect), a withdrawal
//	              (failPending: a pre-start veto or the janitor's undo)
//	name
//	  taken:      step 1 of a create, a retry of a withdrawn create
//	  given back: the transaction that makes the cluster TERMINATED
//	              (finish of a delete or a rolled-back create, failPending
//	              of a create)
//
// Each give-back is in the transaction that moves the job out of the
// status it was taken in, conditioned on that status: a second give-back
// finds the job moved and writes nothing.

// gate is a tenant's pre-start hook: it refuses while closed.
type gate struct {
	mu     sync.Mutex
	closed bool
	asked  int
}

func (g *gate) set(closed bool) { g.mu.Lock(); g.closed = closed; g.mu.Unlock() }

func (g *gate) Deliver(context.Context, string, string, string) (time.Duration, error) {
	return 0, nil
}
func (g *gate) Dispatch(context.Context) (int, error)   { return 0, nil }
func (g *gate) ResendLost(context.Context) (int, error) { return 0, nil }
func (g *gate) HasPreStart(context.Context, string) (bool, error) {
	return true, nil
}

func (g *gate) PreStart(_ context.Context, _ string, _ domain.Job) (bool, string, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.asked++
	if g.closed {
		return false, "change freeze", nil
	}
	return true, "", nil
}

// expandSubmission adds k app nodes to the cluster, as the cluster
// service's Expand does: quota taken for them, given back by a rollback.
func (b *testBundle) expandSubmission(t *testing.T, cluster string, k int) Submission {
	t.Helper()
	nodes, err := b.eng.Nodes(b.ctx, tenant, cluster)
	require.NoError(t, err)
	var live []domain.Node
	for _, n := range nodes {
		if n.Status != domain.NodeDeleted {
			live = append(live, n)
		}
	}
	next := len(nodes) // numbers are never reused, deleted nodes included
	var added []domain.Node
	var ids []string
	for i := range k {
		num := 1000 + next + i
		n := domain.Node{ID: fmt.Sprintf("%s-%d", cluster, num), Num: num,
			NodeLayout: domain.NodeLayout{HardwareType: "small", ImageType: "debian", Services: []string{"app"}}}
		added, ids = append(added, n), append(ids, n.ID)
	}
	plan, err := planner.Build(planner.Request{Operation: domain.OpExpand, Old: live, New: append(append([]domain.Node{}, live...), added...), Services: services()})
	require.NoError(t, err)
	c, err := b.eng.Cluster(b.ctx, tenant, cluster)
	require.NoError(t, err)
	return Submission{Tenant: tenant, Cluster: c, NewNodes: added, Operation: domain.OpExpand, RequestedBy: "ann", Plan: plan, TakeNodes: k,
		OnSuccess: Effect{ClusterStatus: domain.ClusterActive, NodeStatus: domain.NodeActive, Nodes: ids},
		OnFailure: Effect{ClusterStatus: domain.ClusterInconsistent, Message: "expand failed"},
		OnRollback: Effect{ClusterStatus: domain.ClusterActive, ReleaseNodes: k, NodeCountDelta: -k,
			NodeStatus: domain.NodeDeleted, Nodes: ids}}
}

// deleteSubmission deletes the cluster, as the cluster service's Delete
// does: it gives back one cluster and its live nodes.
func (b *testBundle) deleteSubmission(t *testing.T, cluster string) Submission {
	t.Helper()
	nodes, err := b.eng.Nodes(b.ctx, tenant, cluster)
	require.NoError(t, err)
	var live []domain.Node
	var ids []string
	for _, n := range nodes {
		if n.Status != domain.NodeDeleted {
			live, ids = append(live, n), append(ids, n.ID)
		}
	}
	plan, err := planner.Build(planner.Request{Operation: domain.OpDelete, Old: live, Services: services()})
	require.NoError(t, err)
	c, err := b.eng.Cluster(b.ctx, tenant, cluster)
	require.NoError(t, err)
	return Submission{Tenant: tenant, Cluster: c, ClusterStatus: domain.ClusterDeleting, RetiringNodes: ids,
		Operation: domain.OpDelete, RequestedBy: "ann", Plan: plan,
		OnSuccess: Effect{ClusterStatus: domain.ClusterTerminated, ReleaseClusters: 1, ReleaseNodes: len(ids), NodeStatus: domain.NodeDeleted, Nodes: ids},
		OnFailure: Effect{ClusterStatus: domain.ClusterInconsistent, Message: "delete failed"}}
}

// limitNodes sets the tenant's node quota.
func (b *testBundle) limitNodes(t *testing.T, maxNodes int) {
	t.Helper()
	v, err := b.acc.GetTenant(b.ctx, tenant)
	require.NoError(t, err)
	ten := v.Tenant
	ten.MaxNodes = maxNodes
	_, err = b.acc.UpdateTenant(b.ctx, ten, 0)
	require.NoError(t, err)
}

func (b *testBundle) usage(t *testing.T) domain.TenantUsage {
	t.Helper()
	v, err := b.acc.GetTenant(b.ctx, tenant)
	require.NoError(t, err)
	return v.Usage
}

// submitAndWait submits sub and waits for its job to end.
func (b *testBundle) submitAndWait(t *testing.T, sub Submission) jobRecord {
	t.Helper()
	job, err := b.eng.Submit(b.ctx, sub)
	require.NoError(t, err)
	return b.waitJob(t, sub.Cluster.ID, job.ID, 60*time.Second)
}

// TestAVetoedExpandRetriedTakesItsQuotaAgain is issue 28's scenario: a
// tenant of 3 nodes with a 2-node cluster; a pre-start hook vetoes an
// expand by one (its quota goes back); the hook then accepts and the
// vetoed job is retried: the retry takes the node's quota again in its own
// transaction, so a second expand by one no longer fits, and a retry that
// no longer fits is refused with nothing changed. Deleting everything
// leaves the counters at 0. Before the fix, the retry took nothing back,
// the second expand was accepted (4 nodes, usage 3), and the counters read
// -1 after the delete.
func TestAVetoedExpandRetriedTakesItsQuotaAgain(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T) {
		b := setup(t, nil, Config{})
		b.limitNodes(t, 3)
		hook := &gate{}
		b.eng.SetHooks(hook)
		stop := b.run(t, 3, 50*time.Millisecond)
		defer stop()

		final := b.submitAndWait(t, createSubmission(t, "c1", 2, nil))
		require.Equal(t, domain.JobSucceeded, final.Status, b.failures(t, final.ID))
		require.Equal(t, domain.TenantUsage{Clusters: 1, Nodes: 2}, b.usage(t))

		hook.set(true)
		vetoed := b.submitAndWait(t, b.expandSubmission(t, "c1", 1))
		require.Equal(t, domain.JobFailed, vetoed.Status)
		require.True(t, vetoed.Withdrawn)
		require.Equal(t, domain.TenantUsage{Clusters: 1, Nodes: 2}, b.usage(t), "the veto gave the node back")
		checkInvariants(t, b) // the vetoed node is DELETED: the cluster counts 2 and has 2

		hook.set(false)
		_, err := b.eng.Retry(b.ctx, tenant, "c1", vetoed.ID, "ann")
		require.NoError(t, err)
		require.Equal(t, domain.TenantUsage{Clusters: 1, Nodes: 3}, b.usage(t), "the retry took the node again")
		retried := b.waitJob(t, "c1", vetoed.ID, 60*time.Second)
		require.Equal(t, domain.JobSucceeded, retried.Status, "%s%s", retried.StatusMessage, b.failures(t, retried.ID))
		checkInvariants(t, b)

		_, err = b.eng.Submit(b.ctx, b.expandSubmission(t, "c1", 1))
		require.ErrorIs(t, err, ErrQuota, "3 of 3 nodes are in use")

		// A retry that no longer fits: veto an expand, shrink the quota's
		// room away, retry.
		b.limitNodes(t, 4)
		hook.set(true)
		vetoed = b.submitAndWait(t, b.expandSubmission(t, "c1", 1))
		require.Equal(t, domain.JobFailed, vetoed.Status)
		hook.set(false)
		b.limitNodes(t, 3)
		_, err = b.eng.Retry(b.ctx, tenant, "c1", vetoed.ID, "ann")
		var short *QuotaRefusal
		require.ErrorAs(t, err, &short)
		require.Equal(t, QuotaRefusal{Nodes: 1}, *short)
		lj, err := b.eng.loadJob(b.ctx, tenant, "c1", vetoed.ID)
		require.NoError(t, err)
		require.Equal(t, domain.JobFailed, lj.job.Status, "the refused retry changed nothing")
		require.Equal(t, domain.TenantUsage{Clusters: 1, Nodes: 3}, b.usage(t))
		checkInvariants(t, b)

		final = b.submitAndWait(t, b.deleteSubmission(t, "c1"))
		require.Equal(t, domain.JobSucceeded, final.Status, b.failures(t, final.ID))
		require.Equal(t, domain.TenantUsage{}, b.usage(t), "deleting everything gives everything back, once")
		checkInvariants(t, b)
	})
}

// TestAVetoedCreateRetriedComesBackWithItsQuotaAndName: a vetoed create
// ends TERMINATED and gives back its cluster, nodes and name; another
// cluster may then take the name, and the retry is refused (name_taken,
// nothing changed) until that one is deleted; then it takes all three
// again and the cluster is built. Before the fix the retry took nothing,
// and deleting the cluster left the counters at -1.
func TestAVetoedCreateRetriedComesBackWithItsQuotaAndName(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T) {
		b := setup(t, nil, Config{})
		hook := &gate{closed: true}
		b.eng.SetHooks(hook)
		stop := b.run(t, 3, 50*time.Millisecond)
		defer stop()

		vetoed := b.submitAndWait(t, createSubmission(t, "c1", 3, nil))
		require.Equal(t, domain.JobFailed, vetoed.Status)
		c, err := b.eng.Cluster(b.ctx, tenant, "c1")
		require.NoError(t, err)
		require.Equal(t, domain.ClusterTerminated, c.Status)
		require.Equal(t, domain.TenantUsage{}, b.usage(t))
		checkInvariants(t, b)

		hook.set(false)
		other := createSubmission(t, "c2", 2, nil)
		other.Cluster.Name = "c1"
		final := b.submitAndWait(t, other)
		require.Equal(t, domain.JobSucceeded, final.Status, b.failures(t, final.ID))

		_, err = b.eng.Retry(b.ctx, tenant, "c1", vetoed.ID, "ann")
		var taken *NameTakenError
		require.ErrorAs(t, err, &taken)
		require.Equal(t, NameTakenError{Name: "c1", By: "c2"}, *taken)
		c, err = b.eng.Cluster(b.ctx, tenant, "c1")
		require.NoError(t, err)
		require.Equal(t, domain.ClusterTerminated, c.Status, "the refused retry changed nothing")
		require.Equal(t, domain.TenantUsage{Clusters: 1, Nodes: 2}, b.usage(t))

		final = b.submitAndWait(t, b.deleteSubmission(t, "c2"))
		require.Equal(t, domain.JobSucceeded, final.Status, b.failures(t, final.ID))
		hook.mu.Lock()
		asked := hook.asked
		hook.mu.Unlock()
		_, err = b.eng.Retry(b.ctx, tenant, "c1", vetoed.ID, "ann")
		require.NoError(t, err)
		require.Equal(t, domain.TenantUsage{Clusters: 1, Nodes: 3}, b.usage(t), "the retry took the cluster and its nodes again")
		retried := b.waitJob(t, "c1", vetoed.ID, 60*time.Second)
		require.Equal(t, domain.JobSucceeded, retried.Status, "%s%s", retried.StatusMessage, b.failures(t, retried.ID))
		hook.mu.Lock()
		require.Equal(t, asked+1, hook.asked, "the retry asked the hook again")
		hook.mu.Unlock()
		checkInvariants(t, b)

		final = b.submitAndWait(t, b.deleteSubmission(t, "c1"))
		require.Equal(t, domain.JobSucceeded, final.Status, b.failures(t, final.ID))
		require.Equal(t, domain.TenantUsage{}, b.usage(t))
		checkInvariants(t, b)
	})
}

// TestConcurrentCreatesOfOneNameOneWins: creates of one name race on the
// name's reservation; exactly one commits, the others are refused with
// ErrNameTaken and write nothing.
func TestConcurrentCreatesOfOneNameOneWins(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T) {
		b := setup(t, nil, Config{})
		const racers = 4
		errs := make([]error, racers)
		var wg sync.WaitGroup
		for i := range racers {
			sub := createSubmission(t, fmt.Sprintf("r%d", i), 2, nil)
			sub.Cluster.Name = "racer"
			wg.Go(func() { _, errs[i] = b.eng.Submit(b.ctx, sub) })
		}
		wg.Wait()
		won := 0
		for _, err := range errs {
			if err == nil {
				won++
				continue
			}
			require.ErrorIs(t, err, ErrNameTaken)
		}
		require.Equal(t, 1, won, "%v", errs)
		require.Equal(t, domain.TenantUsage{Clusters: 1, Nodes: 2}, b.usage(t), "the refused creates took nothing")
		page, err := b.db.Query(b.ctx, store.TenantPK(tenant, "CLUSTERS"), store.Query{})
		require.NoError(t, err)
		require.Len(t, page.Items, 1, "the refused creates wrote no cluster")
		stop := b.run(t, 3, 50*time.Millisecond)
		defer stop()
		winner, err := b.eng.Cluster(b.ctx, tenant, page.Items[0].SK)
		require.NoError(t, err)
		final := b.waitJob(t, winner.ID, winner.LatestJobID, 60*time.Second)
		require.Equal(t, domain.JobSucceeded, final.Status, b.failures(t, final.ID))
		checkInvariants(t, b)
	})
}

// TestAClusterWithoutAReservationEndsAsBefore: a cluster from before name
// reservations holds none (removed here to make one). Deleting it releases
// nothing, in particular not the reservation of a newer cluster of the
// same name (one an older release created beside it mid-deploy), which
// keeps it.
func TestAClusterWithoutAReservationEndsAsBefore(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, Config{})
	stop := b.run(t, 3, 50*time.Millisecond)
	defer stop()
	final := b.submitAndWait(t, createSubmission(t, "old", 2, nil))
	require.Equal(t, domain.JobSucceeded, final.Status, b.failures(t, final.ID))
	_, err := b.db.Write(b.ctx, store.Delete(nameKey(tenant, "old"), store.Condition{MustExist: true}))
	require.NoError(t, err)
	newer := createSubmission(t, "new", 2, nil)
	newer.Cluster.Name = "old"
	final = b.submitAndWait(t, newer)
	require.Equal(t, domain.JobSucceeded, final.Status, b.failures(t, final.ID))

	final = b.submitAndWait(t, b.deleteSubmission(t, "old"))
	require.Equal(t, domain.JobSucceeded, final.Status, b.failures(t, final.ID))
	it, err := b.db.Get(b.ctx, nameKey(tenant, "old"))
	require.NoError(t, err)
	require.Equal(t, "new", it.Status, "the newer cluster keeps its reservation")
	require.Equal(t, domain.TenantUsage{Clusters: 1, Nodes: 2}, b.usage(t))
	checkInvariants(t, b)
}

// TestAReservationLeftByAnOlderReleaseIsDropped: an older release ending a
// cluster mid-deploy does not release its name; the next create of the
// name drops that reservation (its cluster is TERMINATED) instead of
// finding the name taken for good, and a live cluster's is kept.
func TestAReservationLeftByAnOlderReleaseIsDropped(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, Config{})
	stop := b.run(t, 3, 50*time.Millisecond)
	defer stop()
	final := b.submitAndWait(t, createSubmission(t, "c1", 2, nil))
	require.Equal(t, domain.JobSucceeded, final.Status, b.failures(t, final.ID))
	holder, err := b.eng.ReserveOldNames(b.ctx, tenant, "c1")
	require.NoError(t, err)
	require.Equal(t, "c1", holder, "the tenant's first pass finds the live cluster of the name")
	_, err = b.eng.Submit(b.ctx, createSubmission(t, "c1-again", 2, nil))
	require.NoError(t, err, "another name")
	again := createSubmission(t, "c2", 2, nil)
	again.Cluster.Name = "c1"
	_, err = b.eng.Submit(b.ctx, again)
	require.ErrorIs(t, err, ErrNameTaken, "the live cluster's reservation is kept")

	final = b.submitAndWait(t, b.deleteSubmission(t, "c1"))
	require.Equal(t, domain.JobSucceeded, final.Status, b.failures(t, final.ID))
	_, err = b.db.Write(b.ctx, store.Put(store.Item{Key: nameKey(tenant, "c1"), Status: "c1"}, store.Condition{MustNotExist: true}))
	require.NoError(t, err, "as an older release leaves it")
	_, err = b.eng.ReserveOldNames(b.ctx, tenant, "c1")
	require.NoError(t, err)
	final = b.submitAndWait(t, again)
	require.Equal(t, domain.JobSucceeded, final.Status, b.failures(t, final.ID))
	lj, err := b.eng.Cluster(b.ctx, tenant, "c1-again")
	require.NoError(t, err)
	b.waitJob(t, "c1-again", lj.LatestJobID, 60*time.Second)
	checkInvariants(t, b)
}
