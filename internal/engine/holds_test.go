package engine

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/store"
)

// poolHold is a reservation as a static pool takes one: a head item whose
// version serializes the submissions that read it, and an item of the
// job's own.
func poolHold(head store.Item, headExists bool, item string) Hold {
	cond := store.Condition{MustNotExist: true}
	if headExists {
		cond = store.Condition{Version: head.Version}
	}
	key := store.Key{PK: "HOLDS", SK: item}
	return Hold{
		Take: []store.Op{
			store.Update(store.Key{PK: "HOLDS", SK: "#head"}, cond, store.Changes{Add: map[string]int64{"taken": 1}}),
			store.Put(store.Item{Key: key}, store.Condition{}),
		},
		Items: []store.Key{key},
	}
}

func (b *testBundle) exists(t testing.TB, k store.Key) bool {
	t.Helper()
	_, err := b.db.Get(b.ctx, k)
	if err == nil {
		return true
	}
	require.ErrorIs(t, err, store.ErrNotFound)
	return false
}

// TestHoldsAreTakenAndGivenBackWithTheJob: a submission's hold is taken in
// its first transaction, conditionally (of two submissions that read the
// same state, one wins and the other is refused with ErrHoldChanged,
// having written nothing); the job's end deletes it in the transaction
// that ends the job; a retry takes it again, and the retried job's end
// gives it back again.
func TestHoldsAreTakenAndGivenBackWithTheJob(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T) {
		b := setup(t, nil, Config{})
		headKey := store.Key{PK: "HOLDS", SK: "#head"}

		first := createSubmission(t, "c1", 3, failAppStart(failsFirstRun))
		first.Plan.Rollback = nil
		first.Hold = poolHold(store.Item{}, false, "c1")
		second := createSubmission(t, "c2", 3, nil)
		second.Hold = poolHold(store.Item{}, false, "c2") // read before the first was taken
		job, err := b.eng.Submit(b.ctx, first)
		require.NoError(t, err)
		_, err = b.eng.Submit(b.ctx, second)
		require.ErrorIs(t, err, ErrHoldChanged, "the hold read before the first submission's is refused")
		_, err = b.eng.Cluster(b.ctx, tenant, "c2")
		require.ErrorIs(t, err, ErrNotFound, "the refused submission wrote nothing")
		require.False(t, b.exists(t, store.Key{PK: "HOLDS", SK: "c2"}))
		require.True(t, b.exists(t, store.Key{PK: "HOLDS", SK: "c1"}), "the job holds its reservation while it runs")

		stop := b.run(t, 4, 50*time.Millisecond)
		defer stop()
		failed := b.waitJob(t, "c1", job.ID, 30*time.Second)
		require.Equal(t, domain.JobFailed, failed.Status)
		require.False(t, b.exists(t, store.Key{PK: "HOLDS", SK: "c1"}), "the failed job's end gave it back")

		head, err := b.db.Get(b.ctx, headKey)
		require.NoError(t, err)
		stale := poolHold(store.Item{Version: head.Version + 7}, true, "c1") // as read before other takes
		_, err = b.eng.RetryHolding(b.ctx, tenant, "c1", job.ID, "ann", func(rollback bool, _ []string) (Hold, error) {
			require.False(t, rollback, "the forward plan continues")
			return stale, nil
		})
		require.ErrorIs(t, err, ErrHoldChanged, "a retry's hold is conditional too")
		_, err = b.eng.RetryHolding(b.ctx, tenant, "c1", job.ID, "ann", func(bool, []string) (Hold, error) {
			return poolHold(head, true, "c1"), nil
		})
		require.NoError(t, err)
		final := b.waitJob(t, "c1", job.ID, 30*time.Second)
		require.Equal(t, domain.JobSucceeded, final.Status, "%s%s", final.StatusMessage, b.failures(t, final.ID))
		require.False(t, b.exists(t, store.Key{PK: "HOLDS", SK: "c1"}), "the retried job's end gave it back")
		checkInvariants(t, b)
	})
}

// TestAVetoedOrUndoneSubmissionGivesItsHoldBack: a job that never starts
// (a pre-start hook refuses it, or the janitor undoes it) ends in
// failPending, which gives the hold back with the lock and the quota.
func TestAVetoedOrUndoneSubmissionGivesItsHoldBack(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, Config{})
	sub := createSubmission(t, "c1", 3, nil)
	sub.Hold = poolHold(store.Item{}, false, "c1")
	job, err := b.eng.Submit(b.ctx, sub)
	require.NoError(t, err)
	lj, err := b.eng.loadJob(b.ctx, tenant, "c1", job.ID)
	require.NoError(t, err)
	require.NotEqual(t, domain.JobPending, lj.job.Status, "started")
	// A PENDING job as a crash leaves it: its first transaction only.
	sub2 := createSubmission(t, "c2", 3, nil)
	head, err := b.db.Get(b.ctx, store.Key{PK: "HOLDS", SK: "#head"})
	require.NoError(t, err)
	sub2.Hold = poolHold(head, true, "c2")
	job2 := jobRecord{Job: domain.Job{ID: NewJobID(time.Now()), TenantID: tenant, ClusterID: "c2", Operation: domain.OpCreate,
		Status: domain.JobPending, CreatedAt: time.Now()}, Created: true, TakenClusters: 1, TakenNodes: 3, Holds: sub2.Hold.Items}
	_, err = b.eng.stepOne(b.ctx, sub2, &job2, nil, nil)
	require.NoError(t, err)
	require.True(t, b.exists(t, store.Key{PK: "HOLDS", SK: "c2"}))
	lj2, err := b.eng.loadJob(b.ctx, tenant, "c2", job2.ID)
	require.NoError(t, err)
	require.NoError(t, b.eng.failPending(b.ctx, tenant, "c2", lj2, "vetoed"))
	require.False(t, b.exists(t, store.Key{PK: "HOLDS", SK: "c2"}), "failPending gave the hold back")
	c, err := b.eng.Cluster(b.ctx, tenant, "c2")
	require.NoError(t, err)
	require.Equal(t, domain.ClusterTerminated, c.Status)
}

// TestAnAbortedJobGivesItsHoldBack: abort, then the rollback runs and the
// job's end (ABORTED) deletes the hold with the rest of its end.
func TestAnAbortedJobGivesItsHoldBack(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, Config{})
	sub := createSubmission(t, "c1", 3, nil)
	sub.Hold = poolHold(store.Item{}, false, "c1")
	job, err := b.eng.Submit(b.ctx, sub)
	require.NoError(t, err)
	require.True(t, b.exists(t, store.Key{PK: "HOLDS", SK: "c1"}))
	require.NoError(t, b.eng.Abort(b.ctx, tenant, "c1", job.ID, "ann"))
	stop := b.run(t, 4, 50*time.Millisecond)
	defer stop()
	ended := b.waitJob(t, "c1", job.ID, 30*time.Second)
	require.Equal(t, domain.JobAborted, ended.Status)
	require.False(t, b.exists(t, store.Key{PK: "HOLDS", SK: "c1"}), "the aborted job's end gave it back")
	stop()
	checkInvariants(t, b)
}

// TestAVetoedJobRetriedTakesItsHoldAgain: a vetoed expand gives its hold
// back with its quota (failPending) and its new node becomes DELETED; its
// retry is a new submission, so the hold is asked for again for exactly
// that node and taken in the transaction that resubmits the job; the job's
// end gives it back. Without it a retried expand on a static pool ran on
// hosts it had not reserved.
func TestAVetoedJobRetriedTakesItsHoldAgain(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T) {
		b := setup(t, nil, Config{})
		hook := &gate{}
		b.eng.SetHooks(hook)
		stop := b.run(t, 3, 50*time.Millisecond)
		defer stop()
		final := b.submitAndWait(t, createSubmission(t, "c1", 2, nil))
		require.Equal(t, domain.JobSucceeded, final.Status, b.failures(t, final.ID))

		hook.set(true)
		sub := b.expandSubmission(t, "c1", 1)
		sub.Hold = poolHold(store.Item{}, false, "c1")
		vetoed := b.submitAndWait(t, sub)
		require.True(t, vetoed.Withdrawn)
		require.False(t, b.exists(t, store.Key{PK: "HOLDS", SK: "c1"}), "the veto gave the hold back")

		hook.set(false)
		head, err := b.db.Get(b.ctx, store.Key{PK: "HOLDS", SK: "#head"})
		require.NoError(t, err)
		var asked []string
		_, err = b.eng.RetryHolding(b.ctx, tenant, "c1", vetoed.ID, "ann", func(rollback bool, unmade []string) (Hold, error) {
			require.False(t, rollback)
			asked = unmade
			return poolHold(head, true, "c1"), nil
		})
		require.NoError(t, err)
		require.Equal(t, []string{sub.NewNodes[0].ID}, asked, "the hold is asked for the vetoed job's new node")
		retried := b.waitJob(t, "c1", vetoed.ID, 60*time.Second)
		require.Equal(t, domain.JobSucceeded, retried.Status, "%s%s", retried.StatusMessage, b.failures(t, retried.ID))
		require.False(t, b.exists(t, store.Key{PK: "HOLDS", SK: "c1"}), "the retried job's end gave it back")
		require.Equal(t, int64(2), mustCounter(t, b, "taken"), "taken twice: the submission and the retry")
		checkInvariants(t, b)
	})
}

func mustCounter(t *testing.T, b *testBundle, name string) int64 {
	t.Helper()
	head, err := b.db.Get(b.ctx, store.Key{PK: "HOLDS", SK: "#head"})
	require.NoError(t, err)
	return head.Counter(name)
}
