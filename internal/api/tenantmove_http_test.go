package api

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/access"
	"github.com/heddle-io/heddle/internal/catalog"
	"github.com/heddle-io/heddle/internal/secrets"
	"github.com/heddle-io/heddle/internal/store/boltstore"
	"github.com/heddle-io/heddle/internal/tenantmove"
)

// moveBundle is a deployment with tenant export and import: its own store
// and master key.
func moveBundle(t *testing.T) *testBundle {
	t.Helper()
	db, err := boltstore.Open(filepath.Join(t.TempDir(), "heddle.db"), boltstore.Options{NoSync: true})
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	raw := make([]byte, 32)
	_, _ = rand.Read(raw)
	key, err := secrets.NewLocalKey(raw)
	require.NoError(t, err)
	acc := access.New(db)
	root, err := acc.Bootstrap(context.Background(), "")
	require.NoError(t, err)
	s := New(Config{Catalog: catalog.New(db, nil), Access: acc, Logger: testLogger(t), Moves: tenantmove.New(db, secrets.NewKeyring(key))})
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	b := &testBundle{srv: srv, api: s, rootKey: root}
	b.acmeKey = b.createTenant(t, "acme")
	return b
}

func (b *testBundle) exportPage(t *testing.T, key string, id *tenantmove.Identity, cursor string) (int, []byte) {
	t.Helper()
	q := url.Values{"recipient": {id.Recipient().String()}}
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	resp := b.raw(t, key, http.MethodGet, "/v1/tenant/export?"+q.Encode(), nil)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, body
}

// TestTenantExportImportRoutes: a tenant's catalog and users go from one
// deployment to another through the two routes and nothing else; a second
// import keeps everything; a user may not export; a bad recipient, a
// cursor of another recipient and a conflicting target are refused with
// the field or the keys at fault.
func TestTenantExportImportRoutes(t *testing.T) {
	t.Parallel()
	src, dst := moveBundle(t), moveBundle(t)
	src.importExample(t, src.acmeKey)
	status, body := src.do(t, src.acmeKey, http.MethodPost, "/v1/users", map[string]any{"name": "bob", "role": "user"})
	require.Equal(t, http.StatusCreated, status, "%v", body)
	status, body = src.do(t, src.acmeKey, http.MethodPost, "/v1/users/bob/keys", nil)
	require.Equal(t, http.StatusCreated, status, "%v", body)
	bobKey := body["secret"].(string)

	id, err := tenantmove.NewIdentity()
	require.NoError(t, err)
	var pages []tenantmove.ExportPage
	cursor := ""
	for {
		status, raw := src.exportPage(t, src.acmeKey, id, cursor)
		require.Equal(t, http.StatusOK, status, "%s", raw)
		var p tenantmove.ExportPage
		require.NoError(t, json.Unmarshal(raw, &p))
		require.NoError(t, id.Unbox(p.Records))
		pages = append(pages, p)
		if p.Next == "" {
			break
		}
		cursor = p.Next
	}
	for _, again := range []bool{false, true} {
		for _, p := range pages {
			status, body := dst.do(t, dst.acmeKey, http.MethodPost, "/v1/tenant/import", tenantmove.ImportRequest{Format: p.Format, Tenant: p.Tenant, Records: p.Records})
			require.Equal(t, http.StatusOK, status, "%v", body)
			if again {
				require.Zero(t, body["written"], "a second import writes nothing")
			}
		}
	}
	status, body = dst.do(t, bobKey, http.MethodGet, "/v1/me", nil)
	require.Equal(t, http.StatusOK, status, "bob's key works on the target: %v", body)
	_, srcCat := src.do(t, src.acmeKey, http.MethodGet, "/v1/catalog?format=json", nil)
	_, dstCat := dst.do(t, dst.acmeKey, http.MethodGet, "/v1/catalog?format=json", nil)
	require.Equal(t, srcCat, dstCat, "the catalog reads the same on both")

	status, body = src.do(t, bobKey, http.MethodGet, "/v1/tenant/export?recipient="+id.Recipient().String(), nil)
	require.Equal(t, http.StatusForbidden, status, "%v", body)
	status, body = src.do(t, src.acmeKey, http.MethodGet, "/v1/tenant/export", nil)
	require.Equal(t, http.StatusBadRequest, status)
	require.Equal(t, "query.recipient", body["error"].(map[string]any)["details"].([]any)[0].(map[string]any)["field"])
	status, _ = src.do(t, src.acmeKey, http.MethodGet, "/v1/tenant/export?recipient=short", nil)
	require.Equal(t, http.StatusBadRequest, status)
	status, _ = src.exportPage(t, src.acmeKey, id, "bm90IGEgY3Vyc29y")
	require.Equal(t, http.StatusBadRequest, status, "a cursor heddle did not sign")

	requireMissing(t, src, src.acmeKey, http.MethodPost, "/v1/tenant/import", "/v1/tenant/import")

	// A third deployment whose acme has another bob.
	third := moveBundle(t)
	status, body = third.do(t, third.acmeKey, http.MethodPost, "/v1/users", map[string]any{"name": "bob", "role": "admin"})
	require.Equal(t, http.StatusCreated, status, "%v", body)
	p := pages[0]
	status, body = third.do(t, third.acmeKey, http.MethodPost, "/v1/tenant/import", tenantmove.ImportRequest{Format: p.Format, Tenant: p.Tenant, Records: p.Records})
	require.Equal(t, http.StatusConflict, status, "%v", body)
	require.Contains(t, body["error"].(map[string]any)["message"], "USERS / bob")
	status, body = third.do(t, third.acmeKey, http.MethodPost, "/v1/tenant/import", tenantmove.ImportRequest{Format: p.Format, Tenant: "other", Records: p.Records})
	require.Equal(t, http.StatusUnprocessableEntity, status, "%v", body)
	require.Equal(t, "tenant", body["error"].(map[string]any)["details"].([]any)[0].(map[string]any)["field"])
}
