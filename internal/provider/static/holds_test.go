package static

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/provider"
	"github.com/heddle-io/heddle/internal/store"
)

// TestReserveCountsFreeHostsLessPromises: a reservation sees the free,
// undrained hosts less those promised to other live jobs' nodes that hold
// no host yet; taking it is conditional, so of two reservations read from
// the same state only the first commits; a hold no job holds any more
// counts for nothing and goes with the next reservation.
func TestReserveCountsFreeHostsLessPromises(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := testCtx(t)
	_, pem := newKey(t)
	for i := range 5 {
		_, err := f.pool.Register(ctx, "acme", "rack", spec(fmt.Sprintf("h%d", i), pem))
		require.NoError(t, err)
	}
	_, err := f.pool.Drain(ctx, "acme", "rack", "h4")
	require.NoError(t, err)
	live := map[string]bool{"c1": true, "c2": true, "c3": true}
	isLive := func(_ context.Context, id string) (bool, error) { return live[id], nil }
	commit := func(r Reservation) error { return f.pool.store.Transact(ctx, r.Take) }

	r1, err := f.pool.Reserve(ctx, "acme", "rack", "c1", []string{"c1-1000", "c1-1001", "c1-1002"}, isLive)
	require.NoError(t, err)
	require.Equal(t, 4, r1.Free, "five registered, one drained")
	require.NoError(t, commit(r1))

	_, err = f.pool.Reserve(ctx, "acme", "rack", "c2", []string{"c2-1000", "c2-1001"}, isLive)
	var ex *ExhaustedError
	require.ErrorAs(t, err, &ex)
	require.ErrorIs(t, err, ErrNoHost)
	require.Equal(t, ExhaustedError{Provider: "rack", Free: 1, Needed: 2, Registered: 5, Idle: 4, Promised: 3}, *ex)
	require.Contains(t, err.Error(), "pool `rack` has 1 free host, 2 needed")

	// A node that takes its host leaves the free hosts and its promise.
	_, err = f.pool.take(ctx, "acme", "rack", "c1", "c1-1000", "tok")
	require.NoError(t, err)
	_, err = f.pool.Reserve(ctx, "acme", "rack", "c2", []string{"c2-1000", "c2-1001"}, isLive)
	require.ErrorAs(t, err, &ex)
	require.Equal(t, 1, ex.Free)
	require.Equal(t, 2, ex.Promised)

	// Two submissions that each fit alone, read at once: one commits.
	a, err := f.pool.Reserve(ctx, "acme", "rack", "c2", []string{"c2-1000"}, isLive)
	require.NoError(t, err)
	b, err := f.pool.Reserve(ctx, "acme", "rack", "c3", []string{"c3-1000"}, isLive)
	require.NoError(t, err)
	require.NoError(t, commit(a))
	require.ErrorIs(t, commit(b), store.ErrConditionFailed, "the second read the head before the first took it")
	_, err = f.pool.Reserve(ctx, "acme", "rack", "c3", []string{"c3-1000"}, isLive)
	require.ErrorAs(t, err, &ex, "read again, it does not fit")

	// c1's job ended without giving its hold back (a release from before
	// holds): it counts for nothing, and the next reservation deletes it.
	live["c1"] = false
	r3, err := f.pool.Reserve(ctx, "acme", "rack", "c3", []string{"c3-1000", "c3-1001"}, isLive)
	require.NoError(t, err)
	require.Equal(t, 2, r3.Free, "three free hosts less c2's promise")
	require.NoError(t, commit(r3))
	_, err = store.Scoped(f.pool.store, "acme").Get(ctx, store.Key{PK: holdsPK("rack"), SK: "c1"})
	require.ErrorIs(t, err, store.ErrNotFound)
	require.Equal(t, store.Key{PK: store.TenantPK("acme", "HOSTHOLD#rack"), SK: "c3"}, r3.Item)
}

func TestHoldRecordsKeepNodeIDsShort(t *testing.T) {
	t.Parallel()
	rec := newHoldRecord("c1", []string{"c1-1000", "c1-1001"})
	require.Equal(t, holdRecord{Prefix: "c1-", Nodes: []string{"1000", "1001"}}, rec)
	require.Equal(t, []string{"c1-1000", "c1-1001"}, rec.nodeIDs())
	other := newHoldRecord("c1", []string{"c1-1000", "x"})
	require.Equal(t, []string{"c1-1000", "x"}, other.nodeIDs())
}

// TestDeleteOfANodeNeverMade: a node whose create found no host holds no
// claim; its delete is done at once and touches no host (issue 28).
func TestDeleteOfANodeNeverMade(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := testCtx(t)
	_, pem := newKey(t)
	_, err := f.pool.Register(ctx, "acme", "rack1", spec("h0", pem))
	require.NoError(t, err)
	key, _ := newKey(t)
	p, err := f.static.Delete(ctx, provider.Request{Tenant: "acme", ClusterID: "c1", Provider: "rack1", Key: key,
		Node: domain.Node{ID: "c1-1000", ClusterID: "c1"}, Fields: map[string]string{FieldWipeScript: "exit 1"}})
	require.NoError(t, err)
	require.False(t, p.Pending())
	require.Equal(t, []string{"h0"}, hostsByStatus(t, f, StatusFree))
}
