package api

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/access"
	"github.com/heddle-io/heddle/internal/catalog"
	"github.com/heddle-io/heddle/internal/store/boltstore"
)

func TestBackupRoute(t *testing.T) {
	t.Parallel()
	db, err := boltstore.Open(filepath.Join(t.TempDir(), "heddle.db"), boltstore.Options{NoSync: true})
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	acc := access.New(db)
	root, err := acc.Bootstrap(context.Background(), "")
	require.NoError(t, err)
	srv := httptest.NewServer(New(Config{Catalog: catalog.New(db, nil), Access: acc, Logger: testLogger(t), Backup: db.Backup}))
	t.Cleanup(srv.Close)
	b := &testBundle{srv: srv, rootKey: root}
	admin := b.createTenant(t, "acme")

	status, body := b.do(t, admin, http.MethodGet, "/v1/backup", nil)
	require.Equal(t, http.StatusForbidden, status, "a tenant's admin may not copy every tenant's data: %v", body)

	resp := b.raw(t, root, http.MethodGet, "/v1/backup", nil)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, strconv.Itoa(len(data)), resp.Header.Get("Content-Length"))
	require.Greater(t, len(data), 4096)

	// Without a backup function (the DynamoDB deployment): 501.
	plain := setup(t)
	status, body = plain.do(t, plain.rootKey, http.MethodGet, "/v1/backup", nil)
	require.Equal(t, http.StatusNotImplemented, status)
	require.Equal(t, CodeNotSupported, body["error"].(map[string]any)["code"])
}
