package backup_test

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/backup"
	"github.com/heddle-io/heddle/internal/secrets"
	"github.com/heddle-io/heddle/internal/store"
	"github.com/heddle-io/heddle/internal/store/boltstore"
)

// setup makes a data directory with a store holding one item and a master
// key, and returns it with a fetch that copies the store as the API does.
func setup(t *testing.T) (dataDir string, fetch backup.FetchFunc) {
	t.Helper()
	dataDir, _, fetch = setupStore(t)
	return dataDir, fetch
}

// setupStore is setup that also returns the open store.
func setupStore(t *testing.T) (dataDir string, db *boltstore.Store, fetch backup.FetchFunc) {
	t.Helper()
	dataDir = filepath.Join(t.TempDir(), "data")
	require.NoError(t, os.MkdirAll(dataDir, 0o700))
	_, err := secrets.LoadOrCreateKeyFile(filepath.Join(dataDir, backup.MasterKeyFile))
	require.NoError(t, err)
	db, err = boltstore.Open(filepath.Join(dataDir, backup.StoreFile), boltstore.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	_, err = db.Write(context.Background(), store.Put(store.Item{Key: store.Key{PK: "P", SK: "one"}, Data: []byte(`"x"`)}, store.Condition{}))
	require.NoError(t, err)
	return dataDir, db, func(w io.Writer) (int64, error) {
		return db.Backup(context.Background(), func(int64) io.Writer { return w })
	}
}

func requireMode(t *testing.T, path string, mode os.FileMode) {
	t.Helper()
	info, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, mode, info.Mode().Perm(), path)
}

func TestSaveThenRestoreIntoAnEmptyDirectory(t *testing.T) {
	t.Parallel()
	dataDir, fetch := setup(t)
	out := filepath.Join(t.TempDir(), "bk")
	m, err := backup.Save(out, dataDir, "v-test", fetch)
	require.NoError(t, err)
	require.Equal(t, backup.FormatVersion, m.Format)
	requireMode(t, out, 0o700)
	for _, f := range []string{backup.StoreFile, backup.MasterKeyFile, backup.ManifestFile} {
		requireMode(t, filepath.Join(out, f), 0o600)
	}
	key, err := os.ReadFile(filepath.Join(dataDir, backup.MasterKeyFile))
	require.NoError(t, err)
	manifest, err := os.ReadFile(filepath.Join(out, backup.ManifestFile))
	require.NoError(t, err)
	require.NotContains(t, string(manifest), string(key), "the manifest names the key file, never its content")

	target := filepath.Join(t.TempDir(), "restored")
	_, err = backup.Restore(out, target, false)
	require.NoError(t, err)
	requireMode(t, filepath.Join(target, backup.StoreFile), 0o600)
	requireMode(t, filepath.Join(target, backup.MasterKeyFile), 0o600)
	restoredKey, err := os.ReadFile(filepath.Join(target, backup.MasterKeyFile))
	require.NoError(t, err)
	require.Equal(t, key, restoredKey)
	db, err := boltstore.Open(filepath.Join(target, backup.StoreFile), boltstore.Options{})
	require.NoError(t, err)
	defer db.Close()
	it, err := db.Get(context.Background(), store.Key{PK: "P", SK: "one"})
	require.NoError(t, err)
	require.Equal(t, `"x"`, string(it.Data))
}

func TestSaveRefusesADirectoryInUse(t *testing.T) {
	t.Parallel()
	dataDir, fetch := setup(t)
	out := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(out, "notes"), []byte("x"), 0o600))
	_, err := backup.Save(out, dataDir, "v", fetch)
	require.ErrorIs(t, err, backup.ErrNotEmpty)

	_, err = backup.Save(filepath.Join(t.TempDir(), "bk"), t.TempDir(), "v", fetch)
	require.ErrorContains(t, err, "master key", "no master key in the data directory: nothing saved")
}

func TestRestoreRefusesANonEmptyDirectoryUnlessForced(t *testing.T) {
	t.Parallel()
	dataDir, fetch := setup(t)
	out := filepath.Join(t.TempDir(), "bk")
	_, err := backup.Save(out, dataDir, "v", fetch)
	require.NoError(t, err)

	target := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(target, backup.MasterKeyFile), []byte("old key"), 0o600))
	require.NoError(t, os.MkdirAll(filepath.Join(target, "nodes", "n1"), 0o700))
	_, err = backup.Restore(out, target, false)
	require.ErrorIs(t, err, backup.ErrNotEmpty)
	old, err := os.ReadFile(filepath.Join(target, backup.MasterKeyFile))
	require.NoError(t, err)
	require.Equal(t, "old key", string(old), "a refused restore changes nothing")

	_, err = backup.Restore(out, target, true)
	require.NoError(t, err)
	require.DirExists(t, filepath.Join(target, "nodes", "n1"), "--force replaces the store and key only")
	restored, err := os.ReadFile(filepath.Join(target, backup.MasterKeyFile))
	require.NoError(t, err)
	require.NotEqual(t, "old key", string(restored))
}

// TestRestoreRefusesAStoreInUse: even forced, a store a server holds open
// is not replaced (the data directory of setup is open).
func TestRestoreRefusesAStoreInUse(t *testing.T) {
	t.Parallel()
	dataDir, fetch := setup(t)
	out := filepath.Join(t.TempDir(), "bk")
	_, err := backup.Save(out, dataDir, "v", fetch)
	require.NoError(t, err)
	_, err = backup.Restore(out, dataDir, true)
	require.ErrorIs(t, err, backup.ErrInUse)
}

func TestRestoreRefusesADamagedBackup(t *testing.T) {
	t.Parallel()
	dataDir, fetch := setup(t)
	out := filepath.Join(t.TempDir(), "bk")
	_, err := backup.Save(out, dataDir, "v", fetch)
	require.NoError(t, err)

	f, err := os.OpenFile(filepath.Join(out, backup.StoreFile), os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteAt([]byte("garbage"), 5000)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	target := filepath.Join(t.TempDir(), "restored")
	_, err = backup.Restore(out, target, false)
	require.ErrorContains(t, err, "damaged")
	require.NoFileExists(t, filepath.Join(target, backup.StoreFile))
	require.NoFileExists(t, filepath.Join(target, backup.MasterKeyFile))
}

func TestRestoreRefusesBadManifests(t *testing.T) {
	t.Parallel()
	dataDir, fetch := setup(t)
	out := filepath.Join(t.TempDir(), "bk")
	m, err := backup.Save(out, dataDir, "v", fetch)
	require.NoError(t, err)
	for name, change := range map[string]func(m *backup.Manifest){
		"newer format":     func(m *backup.Manifest) { m.Format = backup.FormatVersion + 1 },
		"no format":        func(m *backup.Manifest) { m.Format = 0 },
		"path out":         func(m *backup.Manifest) { m.Store.Name = "../heddle.db" },
		"key path out":     func(m *backup.Manifest) { m.MasterKey = "/etc/passwd" },
		"missing checksum": func(m *backup.Manifest) { m.Store.SHA256 = "" },
	} {
		bad := m
		change(&bad)
		js, err := json.Marshal(bad)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(out, backup.ManifestFile), js, 0o600))
		_, err = backup.Restore(out, filepath.Join(t.TempDir(), "r"), false)
		require.Error(t, err, name)
	}
}
