package backup_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/backup"
	"github.com/heddle-io/heddle/internal/secrets"
	"github.com/heddle-io/heddle/internal/store"
	"github.com/heddle-io/heddle/internal/store/boltstore"
)

// sealInto seals a secret with dataDir's master key into the store db, as
// a provider entity's credentials are.
func sealInto(t *testing.T, dataDir string, db *boltstore.Store) {
	t.Helper()
	key, err := secrets.ReadKeyFile(filepath.Join(dataDir, backup.MasterKeyFile))
	require.NoError(t, err)
	sealed, err := secrets.NewKeyring(key).SealString(context.Background(), "s3cret", secrets.Binding{"tenant": "acme"})
	require.NoError(t, err)
	_, err = db.Write(context.Background(), store.Put(store.Item{Key: store.Key{PK: "T#acme", SK: "provider"},
		Data: fmt.Appendf(nil, `{"credentials":{"token":%q}}`, sealed)}, store.Condition{}))
	require.NoError(t, err)
}

// otherKeyDir makes a data directory holding only a master key of its own.
func otherKeyDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "other")
	_, err := secrets.LoadOrCreateKeyFile(filepath.Join(dir, backup.MasterKeyFile))
	require.NoError(t, err)
	return dir
}

// TestSaveRefusesAnotherServersKey: --data-dir naming another server's
// directory would save a key that cannot open the fetched store.
func TestSaveRefusesAnotherServersKey(t *testing.T) {
	t.Parallel()
	dataDir, fetch := setupSealed(t)
	out := filepath.Join(t.TempDir(), "bk")
	_, err := backup.Save(out, otherKeyDir(t), "v", fetch)
	require.ErrorIs(t, err, backup.ErrWrongKey)
	require.ErrorContains(t, err, "--data-dir must be that server's data directory")
	for _, f := range []string{backup.StoreFile, backup.MasterKeyFile, backup.ManifestFile} {
		require.NoFileExists(t, filepath.Join(out, f))
	}

	_, err = backup.Save(out, dataDir, "v", fetch)
	require.NoError(t, err, "the server's own directory is saved")
}

// TestRestoreRefusesAStoreWithoutItsKey: a backup whose key does not
// open its store is refused before anything in the data directory changes.
func TestRestoreRefusesAStoreWithoutItsKey(t *testing.T) {
	t.Parallel()
	dataDir, fetch := setupSealed(t)
	out := filepath.Join(t.TempDir(), "bk")
	_, err := backup.Save(out, dataDir, "v", fetch)
	require.NoError(t, err)
	other, err := os.ReadFile(filepath.Join(otherKeyDir(t), backup.MasterKeyFile))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(out, backup.MasterKeyFile), other, 0o600))

	target := filepath.Join(t.TempDir(), "restored")
	_, err = backup.Restore(out, target, false)
	require.ErrorIs(t, err, backup.ErrWrongKey)
	require.ErrorContains(t, err, "nothing was restored")
	require.NoFileExists(t, filepath.Join(target, backup.StoreFile))
	require.NoFileExists(t, filepath.Join(target, backup.MasterKeyFile))
}

// TestTheRecordedKeyDecides: once a server recorded its key, another key
// is refused even before the store holds any secret.
func TestTheRecordedKeyDecides(t *testing.T) {
	t.Parallel()
	db, err := boltstore.Open(filepath.Join(t.TempDir(), backup.StoreFile), boltstore.Options{})
	require.NoError(t, err)
	defer db.Close()
	ctx := context.Background()
	require.NoError(t, backup.CheckStoreKey(ctx, db, "local:b"), "an empty store fits any key")
	require.NoError(t, backup.RecordStoreKey(ctx, db, "local:a"))
	require.NoError(t, backup.RecordStoreKey(ctx, db, "local:a"), "recording again is harmless")
	err = backup.CheckStoreKey(ctx, db, "local:b")
	require.ErrorIs(t, err, backup.ErrWrongKey)
	require.ErrorContains(t, err, "local:a")
	require.ErrorIs(t, backup.RecordStoreKey(ctx, db, "local:b"), backup.ErrWrongKey)
}

// setupSealed is setup with a secret sealed by the data directory's key in
// the store.
func setupSealed(t *testing.T) (string, backup.FetchFunc) {
	t.Helper()
	dataDir, db, fetch := setupStore(t)
	sealInto(t, dataDir, db)
	return dataDir, fetch
}
