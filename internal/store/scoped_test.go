package store_test

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/store"
	"github.com/heddle-io/heddle/internal/store/boltstore"
	"github.com/heddle-io/heddle/internal/store/storetest"
)

func openBolt(t *testing.T) *boltstore.Store {
	t.Helper()
	s, err := boltstore.Open(filepath.Join(t.TempDir(), "heddle.db"), boltstore.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s
}

// The scoped view is a Store like any other: it passes the whole suite.
func TestScopedConformance(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) store.Store { return store.Scoped(openBolt(t), "acme") })
}

type tenants struct {
	raw      store.Store
	acme, bb store.Store
}

func setupTenants(t *testing.T) tenants {
	raw := openBolt(t)
	return tenants{raw: raw, acme: store.Scoped(raw, "acme"), bb: store.Scoped(raw, "bb")}
}

func TestScopedKeysLiveUnderTheTenantPrefix(t *testing.T) {
	t.Parallel()
	ts := setupTenants(t)
	k := store.Key{PK: "CLUSTER#c1", SK: "META"}
	written, err := ts.acme.Write(t.Context(), store.Put(store.Item{Key: k, Data: []byte("acme's")}, store.Condition{}))
	require.NoError(t, err)
	require.Equal(t, k, written.Key, "keys come back as the tenant named them")

	raw, err := ts.raw.Get(t.Context(), store.Key{PK: store.TenantPK("acme", "CLUSTER#c1"), SK: "META"})
	require.NoError(t, err)
	require.Equal(t, []byte("acme's"), raw.Data)
	_, err = ts.raw.Get(t.Context(), k)
	require.ErrorIs(t, err, store.ErrNotFound)
}

func TestScopedTenantsCannotReachEachOther(t *testing.T) {
	t.Parallel()
	ts := setupTenants(t)
	k := store.Key{PK: "CLUSTER#c1", SK: "META"}
	_, err := ts.acme.Write(t.Context(), store.Put(store.Item{Key: k, Data: []byte("acme's")}, store.Condition{}))
	require.NoError(t, err)

	_, err = ts.bb.Get(t.Context(), k)
	require.ErrorIs(t, err, store.ErrNotFound)
	require.NotContains(t, err.Error(), "T#", "errors name keys as the tenant does")

	p, err := ts.bb.Query(t.Context(), "CLUSTER#c1", store.Query{})
	require.NoError(t, err)
	require.Empty(t, p.Items)

	// Naming the other tenant's raw key only nests it in one's own scope.
	for _, pk := range []string{store.TenantPK("acme", "CLUSTER#c1"), "#acme#CLUSTER#c1", "T#acme", "../acme/CLUSTER#c1"} {
		_, err := ts.bb.Get(t.Context(), store.Key{PK: pk, SK: "META"})
		require.ErrorIs(t, err, store.ErrNotFound, pk)
		_, err = ts.bb.Write(t.Context(), store.Update(store.Key{PK: pk, SK: "META"}, store.Condition{MustExist: true}, store.Changes{Data: []byte("bb's")}))
		require.ErrorIs(t, err, store.ErrConditionFailed, pk)
	}
	it, err := ts.acme.Get(t.Context(), k)
	require.NoError(t, err)
	require.Equal(t, int64(1), it.Version)

	// The same logical key holds each tenant's own item.
	_, err = ts.bb.Write(t.Context(), store.Put(store.Item{Key: k, Data: []byte("bb's")}, store.Condition{MustNotExist: true}))
	require.NoError(t, err)
	it, err = ts.acme.Get(t.Context(), k)
	require.NoError(t, err)
	require.Equal(t, []byte("acme's"), it.Data)
}

func TestScopedCursorIsBoundToTheTenant(t *testing.T) {
	t.Parallel()
	ts := setupTenants(t)
	for _, s := range []store.Store{ts.acme, ts.bb} {
		for _, sk := range []string{"a", "b", "c"} {
			_, err := s.Write(t.Context(), store.Put(store.Item{Key: store.Key{PK: "LIST", SK: sk}}, store.Condition{}))
			require.NoError(t, err)
		}
	}
	p, err := ts.acme.Query(t.Context(), "LIST", store.Query{Limit: 1})
	require.NoError(t, err)
	require.NotEmpty(t, p.Next)
	_, err = ts.bb.Query(t.Context(), "LIST", store.Query{Limit: 1, Cursor: p.Next})
	require.ErrorIs(t, err, store.ErrBadCursor)
}

func TestScopedErrorsNameUnprefixedKeys(t *testing.T) {
	t.Parallel()
	ts := setupTenants(t)
	a, b := store.Key{PK: "P", SK: "a"}, store.Key{PK: "P", SK: "b"}
	_, err := ts.acme.Write(t.Context(), store.Put(store.Item{Key: a, Status: "X"}, store.Condition{}))
	require.NoError(t, err)

	_, err = ts.acme.Write(t.Context(), store.Put(store.Item{Key: a}, store.Condition{MustNotExist: true}))
	var ce *store.ConditionError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, a, ce.Key)
	require.Equal(t, &store.Item{Key: a, Version: 1, Status: "X"}, ce.Current)

	err = ts.acme.Transact(t.Context(), []store.Op{
		store.Check(a, store.Condition{StatusIn: []string{"Y"}}),
		store.Delete(b, store.Condition{MustExist: true}),
		store.Put(store.Item{Key: store.Key{PK: "P", SK: "c"}}, store.Condition{}),
	})
	var te *store.TransactionError
	require.ErrorAs(t, err, &te)
	require.True(t, errors.Is(err, store.ErrConditionFailed))
	require.Len(t, te.Reasons, 3)
	require.ErrorAs(t, te.Reasons[0], &ce)
	require.Equal(t, a, ce.Key)
	require.Equal(t, &store.Item{Key: a, Version: 1, Status: "X"}, ce.Current)
	require.ErrorAs(t, te.Reasons[1], &ce)
	require.Equal(t, &store.ConditionError{Key: b}, ce)
	require.NoError(t, te.Reasons[2])
}

// The index is shared across tenants (the janitor reads it unscoped); each
// tenant's view shows only its own entries.
func TestScopedIndexIsSharedButFiltered(t *testing.T) {
	t.Parallel()
	ts := setupTenants(t)
	for i, s := range []store.Store{ts.acme, ts.bb, ts.acme, ts.bb, ts.acme} {
		k := store.Key{PK: "TASK", SK: string(rune('a' + i))}
		_, err := s.Write(t.Context(), store.Put(store.Item{Key: k, Index: &store.IndexKey{Partition: "RUNNING#0", Sort: string(rune('0' + i))}}, store.Condition{}))
		require.NoError(t, err)
	}
	all, err := ts.raw.QueryIndex(t.Context(), "RUNNING#0", store.IndexQuery{})
	require.NoError(t, err)
	require.Len(t, all.Items, 5, "unscoped, the janitor sees every tenant")
	require.Equal(t, store.TenantPK("bb", "TASK"), all.Items[1].PK)

	mine, err := ts.acme.QueryIndex(t.Context(), "RUNNING#0", store.IndexQuery{})
	require.NoError(t, err)
	require.Equal(t, []store.Key{{PK: "TASK", SK: "a"}, {PK: "TASK", SK: "c"}, {PK: "TASK", SK: "e"}}, keys(mine.Items))

	// Pages keep their cursors even when another tenant's items filled them.
	var got []store.Key
	cursor := ""
	for pages := 0; ; pages++ {
		require.Less(t, pages, 10)
		p, err := ts.bb.QueryIndex(t.Context(), "RUNNING#0", store.IndexQuery{Limit: 1, Cursor: cursor})
		require.NoError(t, err)
		got = append(got, keys(p.Items)...)
		if cursor = p.Next; cursor == "" {
			break
		}
	}
	require.Equal(t, []store.Key{{PK: "TASK", SK: "b"}, {PK: "TASK", SK: "d"}}, got)
}

func TestScopedValidatesBeforePrefixing(t *testing.T) {
	t.Parallel()
	s := store.Scoped(openBolt(t), "acme")
	_, err := s.Write(t.Context(), store.Put(store.Item{Key: store.Key{SK: "x"}}, store.Condition{}))
	require.ErrorIs(t, err, store.ErrInvalidOp, "an empty PK must not become the bare prefix")
	_, err = s.Get(t.Context(), store.Key{SK: "x"})
	require.ErrorIs(t, err, store.ErrInvalidOp)
	_, err = s.Query(t.Context(), "", store.Query{})
	require.ErrorIs(t, err, store.ErrInvalidOp)
	err = s.Transact(t.Context(), []store.Op{store.Check(store.Key{PK: "", SK: "x"}, store.Condition{})})
	require.ErrorIs(t, err, store.ErrInvalidOp)
}

func TestScopedPanicsOnInvalidTenant(t *testing.T) {
	t.Parallel()
	for _, tenant := range []string{"", "a#b", "-x", "../x", "a b", string(make([]byte, 64))} {
		require.Panics(t, func() { store.Scoped(nil, tenant) }, "%q", tenant)
	}
	require.NotPanics(t, func() { store.Scoped(nil, "acme-1.prod_2") })
}

func keys(items []store.Item) []store.Key {
	out := make([]store.Key, len(items))
	for i, it := range items {
		out[i] = it.Key
	}
	return out
}

// FuzzScopedIsolation writes arbitrary keys through one tenant and reads
// arbitrary keys through another: nothing the second names may ever reach
// the first's items.
func FuzzScopedIsolation(f *testing.F) {
	raw, err := boltstore.Open(filepath.Join(f.TempDir(), "heddle.db"), boltstore.Options{NoSync: true})
	require.NoError(f, err)
	f.Cleanup(func() { raw.Close() })
	acme, bb := store.Scoped(raw, "acme"), store.Scoped(raw, "bb")
	f.Add("CLUSTER#1", "T#acme#CLUSTER#1")
	f.Add("x", "#acme#x")
	f.Add("\x00", "acme#\x00")
	f.Fuzz(func(t *testing.T, pkA, pkB string) {
		k := store.Key{PK: pkA, SK: "k"}
		written, err := acme.Write(t.Context(), store.Put(store.Item{Key: k, Data: []byte("acme")}, store.Condition{}))
		if errors.Is(err, store.ErrInvalidOp) {
			return // empty or over-long key
		}
		require.NoError(t, err)
		require.Equal(t, k, written.Key)

		_, err = bb.Get(t.Context(), store.Key{PK: pkB, SK: "k"})
		if !errors.Is(err, store.ErrInvalidOp) {
			require.ErrorIs(t, err, store.ErrNotFound)
		}
		p, err := bb.Query(t.Context(), pkB, store.Query{})
		if !errors.Is(err, store.ErrInvalidOp) {
			require.NoError(t, err)
			require.Empty(t, p.Items)
		}
		got, err := acme.Get(t.Context(), k)
		require.NoError(t, err)
		require.Equal(t, k, got.Key)
	})
}
