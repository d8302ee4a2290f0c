package engine

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/store"
)

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
