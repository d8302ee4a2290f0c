package access

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/store"
	"github.com/heddle-io/heddle/internal/store/boltstore"
)

type testBundle struct {
	ctx context.Context
	acc *Access
	db  store.Store
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	db, err := boltstore.Open(filepath.Join(t.TempDir(), "heddle.db"), boltstore.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	return &testBundle{ctx: context.Background(), acc: New(db), db: db}
}

// use takes capacity the way cluster creation will: a conditional add on
// the free counters.
func (b *testBundle) use(t *testing.T, tenant string, clusters, nodes int64) {
	t.Helper()
	_, err := b.db.Write(b.ctx, store.Update(tenantKey(tenant),
		store.Condition{CountersAtLeast: map[string]int64{FreeClusters: clusters, FreeNodes: nodes}},
		store.Changes{Add: map[string]int64{FreeClusters: -clusters, FreeNodes: -nodes}}))
	require.NoError(t, err)
}

func TestBootstrap(t *testing.T) {
	t.Parallel()
	b := setup(t)
	secret, err := b.acc.Bootstrap(b.ctx, "")
	require.NoError(t, err)
	require.True(t, ValidKeySecret(secret))
	p, err := b.acc.Authenticate(b.ctx, secret)
	require.NoError(t, err)
	require.Equal(t, Principal{Tenant: domain.SystemTenant, User: "admin", Role: domain.RoleSuperadmin, KeyID: p.KeyID}, p)

	again, err := b.acc.Bootstrap(b.ctx, "")
	require.NoError(t, err)
	require.Empty(t, again, "the key is shown only on the first start")

	given := NewKeySecret()
	registered, err := b.acc.Bootstrap(b.ctx, given)
	require.NoError(t, err)
	require.Equal(t, given, registered)
	_, err = b.acc.Authenticate(b.ctx, given)
	require.NoError(t, err)
	_, err = b.acc.Bootstrap(b.ctx, "hdl_short")
	require.Error(t, err)
}

func TestKeysAreStoredOnlyAsHashes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, key, err := b.acc.CreateTenant(b.ctx, domain.Tenant{ID: "acme", MaxClusters: 1, MaxNodes: 1}, "ann")
	require.NoError(t, err)
	for _, pk := range []string{"APIKEYS", store.TenantPK("acme", "KEYS#ann")} {
		page, err := b.db.Query(b.ctx, pk, store.Query{})
		require.NoError(t, err)
		require.Len(t, page.Items, 1)
		require.NotContains(t, string(page.Items[0].Data), key.Secret)
		require.NotContains(t, page.Items[0].SK, key.Secret)
	}
	for _, bad := range []string{"", "Bearer x", key.Secret + "x", "hdl_" + key.Secret[5:]} {
		_, err := b.acc.Authenticate(b.ctx, bad)
		require.ErrorIs(t, err, ErrUnauthorized, bad)
	}
}

func TestQuotasCannotDropBelowUse(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, _, err := b.acc.CreateTenant(b.ctx, domain.Tenant{ID: "acme", Workers: 2, MaxClusters: 3, MaxNodes: 10}, "")
	require.NoError(t, err)
	b.use(t, "acme", 2, 7)

	v, err := b.acc.GetTenant(b.ctx, "acme")
	require.NoError(t, err)
	require.Equal(t, domain.TenantUsage{Clusters: 2, Nodes: 7}, v.Usage)

	_, err = b.acc.UpdateTenant(b.ctx, domain.Tenant{ID: "acme", MaxClusters: 1, MaxNodes: 6}, 0)
	var ps domain.Problems
	require.ErrorAs(t, err, &ps)
	require.Equal(t, []string{"maxClusters", "maxNodes"}, []string{ps[0].Field, ps[1].Field})

	v, err = b.acc.UpdateTenant(b.ctx, domain.Tenant{ID: "acme", Workers: 5, MaxClusters: 2, MaxNodes: 20}, v.Version)
	require.NoError(t, err)
	require.Equal(t, domain.TenantUsage{Clusters: 2, Nodes: 7}, v.Usage, "usage survives a quota change")
	require.Equal(t, 5, v.Workers)
	_, err = b.acc.UpdateTenant(b.ctx, domain.Tenant{ID: "acme", MaxClusters: 2, MaxNodes: 20}, v.Version-1)
	require.ErrorIs(t, err, ErrConflict)

	require.ErrorIs(t, b.acc.DeleteTenant(b.ctx, "acme", nil), ErrConflict, "a tenant with clusters stays")
	b.use(t, "acme", -2, -7)
	dropped := ""
	require.NoError(t, b.acc.DeleteTenant(b.ctx, "acme", func(_ context.Context, tenant string) error { dropped = tenant; return nil }))
	require.Equal(t, "acme", dropped)
	_, err = b.acc.GetTenant(b.ctx, "acme")
	require.ErrorIs(t, err, ErrNotFound)
}

func TestUsersAndKeys(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, _, err := b.acc.CreateTenant(b.ctx, domain.Tenant{ID: "acme"}, "")
	require.NoError(t, err)
	_, err = b.acc.CreateUser(b.ctx, "acme", domain.User{Name: "root", Role: domain.RoleSuperadmin})
	var ps domain.Problems
	require.ErrorAs(t, err, &ps)
	_, err = b.acc.CreateUser(b.ctx, "nowhere", domain.User{Name: "bob", Role: domain.RoleUser})
	require.ErrorIs(t, err, ErrNotFound)

	_, err = b.acc.CreateUser(b.ctx, "acme", domain.User{Name: "bob", Role: domain.RoleUser})
	require.NoError(t, err)
	_, err = b.acc.CreateUser(b.ctx, "acme", domain.User{Name: "bob", Role: domain.RoleUser})
	require.ErrorIs(t, err, ErrExists)
	_, err = b.acc.CreateKey(b.ctx, "acme", "ghost")
	require.ErrorIs(t, err, ErrNotFound)

	k1, err := b.acc.CreateKey(b.ctx, "acme", "bob")
	require.NoError(t, err)
	k2, err := b.acc.CreateKey(b.ctx, "acme", "bob")
	require.NoError(t, err)
	keys, _, err := b.acc.ListKeys(b.ctx, "acme", "bob", 10, "")
	require.NoError(t, err)
	require.Len(t, keys, 2)
	for _, k := range keys {
		require.Empty(t, k.Secret)
	}
	require.NoError(t, b.acc.DeleteKey(b.ctx, "acme", "bob", k1.ID))
	_, err = b.acc.Authenticate(b.ctx, k1.Secret)
	require.ErrorIs(t, err, ErrUnauthorized)
	_, err = b.acc.Authenticate(b.ctx, k2.Secret)
	require.NoError(t, err)

	require.NoError(t, b.acc.DeleteUser(b.ctx, "acme", "bob"))
	_, err = b.acc.Authenticate(b.ctx, k2.Secret)
	require.ErrorIs(t, err, ErrUnauthorized, "deleting a user revokes their keys")
	page, err := b.db.Query(b.ctx, "APIKEYS", store.Query{})
	require.NoError(t, err)
	require.Empty(t, page.Items, "no lookup item outlives its key")
}

// FuzzAuthenticate checks that no bearer value panics or authenticates.
func FuzzAuthenticate(f *testing.F) {
	f.Add("hdl_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA")
	f.Add("")
	f.Add("hdl_")
	db, err := boltstore.Open(filepath.Join(f.TempDir(), "heddle.db"), boltstore.Options{})
	require.NoError(f, err)
	f.Cleanup(func() { _ = db.Close() })
	acc := New(db)
	f.Fuzz(func(t *testing.T, secret string) {
		_, err := acc.Authenticate(context.Background(), secret)
		require.ErrorIs(t, err, ErrUnauthorized)
	})
}
