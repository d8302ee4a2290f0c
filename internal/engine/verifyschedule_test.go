package engine

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/store"
)

// TestVerifySchedule: what each job end does to the cluster's due
// verification. A verification that ended (whatever it found) drops the one
// that was due, so the janitor does not hold the cluster with another right after.
func TestVerifySchedule(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	active := domain.Cluster{ID: "c1", Status: domain.ClusterActive}
	every := active
	every.Resolved = &domain.ClusterTemplate{}
	every.Resolved.Administration.VerifyEvery = domain.Duration(time.Hour)
	verify := domain.Job{Operation: domain.OpVerify}
	create := domain.Job{Operation: domain.OpCreate}
	gone := active
	gone.Status = domain.ClusterTerminated

	for name, tc := range map[string]struct {
		c         domain.Cluster
		job       domain.Job
		effect    Effect
		succeeded bool
		want      store.OpKind // 0: no op
		dueAt     time.Time
	}{
		"create succeeded":             {c: active, job: create, effect: Effect{Verify: true}, succeeded: true, want: store.OpPut, dueAt: now},
		"create failed":                {c: active, job: create, effect: Effect{Verify: true}},
		"verification ran":             {c: active, job: verify, succeeded: true, want: store.OpDelete},
		"verification aborted":         {c: active, job: verify, want: store.OpDelete},
		"periodic verification ran":    {c: every, job: verify, succeeded: true, want: store.OpPut, dueAt: now.Add(time.Hour)},
		"cluster gone":                 {c: gone, job: create, succeeded: true, want: store.OpDelete},
		"periodic verification failed": {c: every, job: verify, want: store.OpPut, dueAt: now.Add(time.Hour)},
	} {
		ops := verifySchedule("acme", tc.c, tc.job, tc.effect, tc.succeeded, now)
		if tc.want == 0 {
			require.Empty(t, ops, name)
			continue
		}
		require.Len(t, ops, 1, name)
		require.Equal(t, tc.want, ops[0].Kind, name)
		require.Equal(t, verifyDueKey("acme", "c1"), ops[0].Key, name)
		if tc.want == store.OpPut {
			require.Equal(t, store.SortableTime(tc.dueAt), ops[0].Item.Index.Sort, name)
		}
	}
}

// TestVerificationEndDropsTheDueOne: a create makes a verification due at
// once; a verification that ends before the janitor starts that one (the
// user's own) drops it, so no automatic verification follows for nothing
// and holds the cluster against the user's next operation. A periodic
// template makes the next one due a period later instead.
func TestVerificationEndDropsTheDueOne(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := domain.Cluster{ID: "c1", Status: domain.ClusterActive, Resolved: &domain.ClusterTemplate{}}
	key := verifyDueKey("acme", "c1")

	created := verifySchedule("acme", c, domain.Job{Operation: domain.OpCreate}, Effect{Verify: true}, true, now)
	require.Len(t, created, 1)
	require.NotEqual(t, []store.Op{store.Delete(key, store.Condition{})}, created, "a create makes one due")

	ops := verifySchedule("acme", c, domain.Job{Operation: domain.OpVerify}, Effect{}, true, now)
	require.Equal(t, []store.Op{store.Delete(key, store.Condition{})}, ops)
	ops = verifySchedule("acme", c, domain.Job{Operation: domain.OpVerify}, Effect{}, false, now)
	require.Equal(t, []store.Op{store.Delete(key, store.Condition{})}, ops, "a verification that found problems ended too")

	c.Resolved.Administration.VerifyEvery = domain.Duration(time.Hour)
	ops = verifySchedule("acme", c, domain.Job{Operation: domain.OpVerify}, Effect{}, true, now)
	require.Len(t, ops, 1)
	require.NotEqual(t, []store.Op{store.Delete(key, store.Condition{})}, ops, "periodic: the next one is due an hour later")

	require.Nil(t, verifySchedule("acme", c, domain.Job{Operation: domain.OpExpand}, Effect{}, false, now), "a failed expand changes nothing")
}
