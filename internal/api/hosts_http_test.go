package api

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/provider"
	"github.com/heddle-io/heddle/internal/provider/static"
	"github.com/heddle-io/heddle/internal/secrets"
	"github.com/heddle-io/heddle/internal/sshexec"
	"github.com/heddle-io/heddle/internal/store"
)

// hostsBundle serves the API with the static provider over a pool in db,
// tenants acme and globex each having a static provider "rack".
type hostsBundle struct {
	*testBundle
	db   store.Store
	pool *static.Pool
	pem  string
}

func setupHosts(t testing.TB) hostsBundle {
	t.Helper()
	var pool *static.Pool
	b, db, _ := providersBundle(t, func(reg *provider.Registry, db store.Store, kr *secrets.Keyring) {
		pool = static.NewPool(db, kr)
		require.NoError(t, reg.Register(static.Type(), static.New(pool, static.Config{})))
	})
	b.acmeKey = b.createTenant(t, "acme")
	b.otherKey = b.createTenant(t, "globex")
	for _, k := range []string{b.acmeKey, b.otherKey} {
		status, body := b.do(t, k, http.MethodPut, "/v1/providers/rack", map[string]any{"providerType": "static"})
		require.Equal(t, http.StatusCreated, status, "%v", body)
	}
	kp, err := sshexec.GenerateKeyPair()
	require.NoError(t, err)
	return hostsBundle{testBundle: b, db: db, pool: pool, pem: string(kp.PrivateKey)}
}

func (b hostsBundle) host(id string) map[string]any {
	return map[string]any{"id": id, "address": "192.0.2.10", "user": "admin", "privateKey": b.pem}
}

func TestHostsThroughTheAPI(t *testing.T) {
	t.Parallel()
	b := setupHosts(t)
	ctx := context.Background()

	// Registration is all or nothing: one bad host, nothing written.
	bad := b.host("h2")
	bad["port"] = 70000
	status, body := b.do(t, b.acmeKey, http.MethodPost, "/v1/providers/rack/hosts", map[string]any{"hosts": []any{b.host("h0"), bad}})
	require.Equal(t, http.StatusUnprocessableEntity, status)
	require.Equal(t, []string{"hosts[1].port"}, problemPaths(t, body))
	status, body = b.do(t, b.acmeKey, http.MethodGet, "/v1/providers/rack/hosts", nil)
	require.Equal(t, http.StatusOK, status)
	require.Empty(t, body["items"])

	hosts := []any{b.host("h0"), b.host("h1"), b.host("h2")}
	status, body = b.do(t, b.acmeKey, http.MethodPost, "/v1/providers/rack/hosts", map[string]any{"hosts": hosts})
	require.Equal(t, http.StatusOK, status, "%v", body)
	items := body["items"].([]any)
	require.Len(t, items, 3)
	first := items[0].(map[string]any)
	require.Equal(t, "created", first["result"])
	require.Equal(t, static.NoteFirstContact, first["note"])
	require.Equal(t, "FREE", first["status"])
	status, body = b.do(t, b.acmeKey, http.MethodPost, "/v1/providers/rack/hosts", map[string]any{"hosts": hosts})
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "unchanged", body["items"].([]any)[2].(map[string]any)["result"], "registering again changes nothing")

	// The key never comes back, in any answer, and is sealed at rest.
	for _, path := range []string{"/v1/providers/rack/hosts", "/v1/providers/rack/hosts/h0"} {
		raw := b.body(t, b.acmeKey, path)
		require.NotContains(t, raw, "PRIVATE KEY")
	}
	page, err := b.db.Query(ctx, store.TenantPK("acme", "HOSTS#rack"), store.Query{})
	require.NoError(t, err)
	require.Len(t, page.Items, 3)
	for _, it := range page.Items {
		require.NotContains(t, string(it.Data), "PRIVATE KEY")
		require.Contains(t, string(it.Data), secrets.SealedPrefix)
	}

	// Paging with an opaque cursor.
	status, body = b.do(t, b.acmeKey, http.MethodGet, "/v1/providers/rack/hosts?limit=2", nil)
	require.Equal(t, http.StatusOK, status)
	require.Len(t, body["items"], 2)
	status, body = b.do(t, b.acmeKey, http.MethodGet, "/v1/providers/rack/hosts?limit=2&cursor="+body["nextCursor"].(string), nil)
	require.Equal(t, http.StatusOK, status)
	require.Len(t, body["items"], 1)
	require.Empty(t, body["nextCursor"])
	status, body = b.do(t, b.acmeKey, http.MethodGet, "/v1/providers/rack/hosts?cursor=nonsense", nil)
	require.Equal(t, http.StatusBadRequest, status, "%v", body)

	// A taken host cannot be removed: 409 naming the cluster.
	taken := takeHost(t, b, "shop-7", "shop-7-1000")
	status, body = b.do(t, b.acmeKey, http.MethodDelete, "/v1/providers/rack/hosts/"+taken, nil)
	require.Equal(t, http.StatusConflict, status)
	code, e := errorOf(t, body)
	require.Equal(t, CodeHostBusy, code)
	require.Contains(t, e["message"], "cluster shop-7")
	status, body = b.do(t, b.acmeKey, http.MethodPost, "/v1/providers/rack/hosts/"+taken+"/readmit", nil)
	require.Equal(t, http.StatusConflict, status, "%v", body)

	// Drain and readmit.
	status, body = b.do(t, b.acmeKey, http.MethodPost, "/v1/providers/rack/hosts/h2/drain", nil)
	require.Equal(t, http.StatusOK, status, "%v", body)
	require.Equal(t, true, body["drained"])
	status, body = b.do(t, b.acmeKey, http.MethodPost, "/v1/providers/rack/hosts/h2/readmit", nil)
	require.Equal(t, http.StatusOK, status, "%v", body)
	require.Nil(t, body["drained"])
	status, _ = b.do(t, b.acmeKey, http.MethodPost, "/v1/providers/rack/hosts/h2/readmit", nil)
	require.Equal(t, http.StatusConflict, status, "a free host needs no readmission")

	status, _ = b.do(t, b.acmeKey, http.MethodDelete, "/v1/providers/rack/hosts/h2", nil)
	require.Equal(t, http.StatusNoContent, status)
	status, _ = b.do(t, b.acmeKey, http.MethodGet, "/v1/providers/rack/hosts/h2", nil)
	require.Equal(t, http.StatusNotFound, status)
	status, _ = b.do(t, b.acmeKey, http.MethodPost, "/v1/providers/rack/hosts/h2/drain", nil)
	require.Equal(t, http.StatusNotFound, status)

	// Tenant isolation: globex's "rack" is its own, and empty.
	status, body = b.do(t, b.otherKey, http.MethodGet, "/v1/providers/rack/hosts", nil)
	require.Equal(t, http.StatusOK, status)
	require.Empty(t, body["items"])
	status, _ = b.do(t, b.otherKey, http.MethodGet, "/v1/providers/rack/hosts/h0", nil)
	require.Equal(t, http.StatusNotFound, status)
	status, _ = b.do(t, b.otherKey, http.MethodDelete, "/v1/providers/rack/hosts/h0", nil)
	require.Equal(t, http.StatusNoContent, status, "removing a host globex does not have is a no-op")
	_, err = b.pool.Get(ctx, "acme", "rack", "h0")
	require.NoError(t, err, "and acme's is still there")
}

// takeHost marks host h0 as a node's, as a create's claim does (a real
// create needs SSH; the API only reads the host's state).
func takeHost(t *testing.T, b hostsBundle, cluster, node string) string {
	t.Helper()
	ctx := context.Background()
	s := store.Scoped(b.db, "acme")
	key := store.Key{PK: "HOSTS#rack", SK: "h0"}
	it, err := s.Get(ctx, key)
	require.NoError(t, err)
	var rec map[string]any
	require.NoError(t, json.Unmarshal(it.Data, &rec))
	rec["status"], rec["claim"] = static.StatusTaken, map[string]any{"clusterId": cluster, "nodeId": node, "token": "t"}
	data, err := json.Marshal(rec)
	require.NoError(t, err)
	status := static.StatusTaken
	_, err = s.Write(ctx, store.Update(key, store.Condition{Version: it.Version}, store.Changes{Data: data, Status: &status}))
	require.NoError(t, err)
	return "h0"
}

func TestHostsRefusals(t *testing.T) {
	t.Parallel()
	b := setupHosts(t)
	// Not a static provider.
	status, body := b.do(t, b.acmeKey, http.MethodPut, "/v1/providers/aws", map[string]any{"providerType": "ec2", "fields": map[string]any{"region": "eu-west-1"}})
	require.Equal(t, http.StatusCreated, status, "%v", body)
	status, body = b.do(t, b.acmeKey, http.MethodGet, "/v1/providers/aws/hosts", nil)
	require.Equal(t, http.StatusConflict, status)
	_, e := errorOf(t, body)
	require.Contains(t, e["message"], `only a "static" provider has hosts`)
	// No such provider.
	status, _ = b.do(t, b.acmeKey, http.MethodGet, "/v1/providers/nope/hosts", nil)
	require.Equal(t, http.StatusNotFound, status)
	// No hosts at all: required.
	requireMissing(t, b.testBundle, b.acmeKey, http.MethodPost, "/v1/providers/{provider}/hosts", "/v1/providers/rack/hosts")
	// Unknown fields and a bad body.
	status, body = b.do(t, b.acmeKey, http.MethodPost, "/v1/providers/rack/hosts", `{"hosts":[{"id":"h0","addr":"x"}]}`)
	require.Equal(t, http.StatusBadRequest, status, "%v", body)
	// Without a key: required, at its path.
	h := b.host("h0")
	delete(h, "privateKey")
	status, body = b.do(t, b.acmeKey, http.MethodPost, "/v1/providers/rack/hosts", map[string]any{"hosts": []any{h}})
	require.Equal(t, http.StatusUnprocessableEntity, status)
	require.Equal(t, []string{"hosts[0].privateKey"}, problemPaths(t, body))
	// A known_hosts line is accepted as the host key.
	h = b.host("h1")
	h["hostKey"] = "[192.0.2.10]:22 ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl"
	status, body = b.do(t, b.acmeKey, http.MethodPost, "/v1/providers/rack/hosts", map[string]any{"hosts": []any{h}})
	require.Equal(t, http.StatusOK, status, "%v", body)
	require.Equal(t, "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl", body["items"].([]any)[0].(map[string]any)["hostKey"])

	// Role admin: a user may not see or change hosts.
	status, body = b.do(t, b.acmeKey, http.MethodPost, "/v1/users", map[string]any{"name": "bob", "role": "user"})
	require.Equal(t, http.StatusCreated, status, "%v", body)
	status, body = b.do(t, b.acmeKey, http.MethodPost, "/v1/users/bob/keys", nil)
	require.Equal(t, http.StatusCreated, status)
	bob := body["secret"].(string)
	for _, r := range []struct{ method, path string }{
		{http.MethodGet, "/v1/providers/rack/hosts"}, {http.MethodPost, "/v1/providers/rack/hosts"},
		{http.MethodGet, "/v1/providers/rack/hosts/h1"}, {http.MethodDelete, "/v1/providers/rack/hosts/h1"},
		{http.MethodPost, "/v1/providers/rack/hosts/h1/drain"}, {http.MethodPost, "/v1/providers/rack/hosts/h1/readmit"},
	} {
		status, _ := b.do(t, bob, r.method, r.path, "{}")
		require.Equal(t, http.StatusForbidden, status, "%s %s", r.method, r.path)
	}
	resp := b.raw(t, b.acmeKey, http.MethodGet, "/v1/providers/rack/hosts", nil)
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.False(t, strings.Contains(string(raw), "PRIVATE"))
}
