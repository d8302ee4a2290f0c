package api

import (
	"context"
	"net/http"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/store"
	"github.com/heddle-io/heddle/internal/store/boltstore"
)

// TestANameHeldByAClusterFromBeforeReservationsIsTaken: a cluster created
// before name reservations existed holds none (its item is removed here to
// make one); a create of its name is refused all the same, 409 name_taken
// on the field name naming that cluster, writes nothing of its own, and
// leaves the old cluster holding its reservation from then on.
func TestANameHeldByAClusterFromBeforeReservationsIsTaken(t *testing.T) {
	t.Parallel()
	db, err := boltstore.Open(filepath.Join(t.TempDir(), "heddle.db"), boltstore.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	b := serveBundle(t, db, nil)
	b.acmeKey = b.createTenant(t, "acme")
	b.importExample(t, b.acmeKey)

	status, body := b.do(t, b.acmeKey, http.MethodPost, "/v1/clusters", map[string]any{"name": "shop", "template": "web", "size": 2})
	require.Equal(t, http.StatusAccepted, status, "%v", body)
	old := body["cluster"].(map[string]any)["id"].(string)
	// As an older release left it: no reservation, and a tenant whose old
	// clusters were never given theirs.
	reservation := store.Key{PK: store.TenantPK("acme", "CLUSTERNAMES"), SK: "shop"}
	_, err = db.Write(context.Background(), store.Delete(reservation, store.Condition{MustExist: true}))
	require.NoError(t, err, "the create reserved its name")
	_, err = db.Write(context.Background(), store.Update(store.Key{PK: "TENANTS", SK: "acme"}, store.Condition{MustExist: true},
		store.Changes{Set: map[string]int64{"namesReserved": 0}}))
	require.NoError(t, err)

	status, body = b.do(t, b.acmeKey, http.MethodPost, "/v1/clusters", map[string]any{"name": "shop", "template": "web", "size": 2})
	require.Equal(t, http.StatusConflict, status, "%v", body)
	code, e := errorOf(t, body)
	require.Equal(t, CodeNameTaken, code)
	require.Contains(t, e["message"], "cluster "+old+" is named shop")
	require.Equal(t, "name", e["details"].([]any)[0].(map[string]any)["field"])
	status, body = b.do(t, b.acmeKey, http.MethodGet, "/v1/clusters?all=true", nil)
	require.Equal(t, http.StatusOK, status)
	require.Len(t, body["items"], 1, "the refused create wrote nothing")
	it, err := db.Get(context.Background(), reservation)
	require.NoError(t, err, "the old cluster was given its reservation")
	require.Equal(t, old, it.Status)
	status, body = b.do(t, b.rootKey, http.MethodGet, "/v1/tenants/acme", nil)
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, map[string]any{"clusters": float64(1), "nodes": float64(2)}, body["usage"])
}
