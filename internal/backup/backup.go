package backup

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/heddle-io/heddle/internal/secrets"
	"github.com/heddle-io/heddle/internal/store/boltstore"
)

// The files of a data directory and of a backup directory.
const (
	StoreFile     = "heddle.db"
	MasterKeyFile = "master.key"
	ManifestFile  = "manifest.json"
)

// FormatVersion is the manifest's format; Restore refuses newer ones.
const FormatVersion = 1

// Manifest says what a backup holds.
type Manifest struct {
	Format        int       `json:"format"`
	CreatedAt     time.Time `json:"createdAt"`
	HeddleVersion string    `json:"heddleVersion"`
	Store         File      `json:"store"`
	MasterKey     string    `json:"masterKey"` // the file's name; its content is never written here
}

// File is one saved file and how to check it.
type File struct {
	Name   string `json:"name"`
	Bytes  int64  `json:"bytes"`
	SHA256 string `json:"sha256"`
}

// FetchFunc writes the store's copy to w and returns its length.
type FetchFunc func(w io.Writer) (int64, error)

// Save writes a backup of dataDir into out, which must not exist or be
// empty: the store through fetch, the master key from dataDir. A store
// sealed by another key than dataDir's (dataDir is another server's) is
// refused: the pair could never be restored. A failed Save removes what it
// wrote.
func Save(out, dataDir, heddleVersion string, fetch FetchFunc) (m Manifest, err error) {
	key, keyID, err := readMasterKey(filepath.Join(dataDir, MasterKeyFile))
	if err != nil {
		return Manifest{}, err
	}
	if err := emptyDir(out); err != nil {
		return Manifest{}, fmt.Errorf("backup directory %s: %w", out, err)
	}
	if err := os.MkdirAll(out, 0o700); err != nil {
		return Manifest{}, fmt.Errorf("creating the backup directory: %w", err)
	}
	if err := os.Chmod(out, 0o700); err != nil {
		return Manifest{}, fmt.Errorf("backup directory %s: %w", out, err)
	}
	defer func() {
		if err != nil {
			for _, name := range []string{StoreFile, MasterKeyFile, ManifestFile} {
				_ = os.Remove(filepath.Join(out, name))
			}
		}
	}()
	f, err := os.OpenFile(filepath.Join(out, StoreFile), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return Manifest{}, fmt.Errorf("creating the store copy: %w", err)
	}
	sum := sha256.New()
	n, err := fetch(io.MultiWriter(f, sum))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return Manifest{}, fmt.Errorf("copying the store: %w", err)
	}
	if err := checkCopy(filepath.Join(out, StoreFile), keyID); err != nil {
		return Manifest{}, fmt.Errorf("%w; %s is not the master key of the server whose store was fetched: --data-dir must be that server's data directory (nothing was saved)",
			err, filepath.Join(dataDir, MasterKeyFile))
	}
	if err := writeFile(filepath.Join(out, MasterKeyFile), key); err != nil {
		return Manifest{}, err
	}
	m = Manifest{Format: FormatVersion, CreatedAt: time.Now().UTC(), HeddleVersion: heddleVersion,
		Store: File{Name: StoreFile, Bytes: n, SHA256: hex.EncodeToString(sum.Sum(nil))}, MasterKey: MasterKeyFile}
	js, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return Manifest{}, err
	}
	if err := writeFile(filepath.Join(out, ManifestFile), append(js, '\n')); err != nil {
		return Manifest{}, err
	}
	return m, nil
}

// ErrNotEmpty refuses a restore into a data directory that holds anything.
var ErrNotEmpty = errors.New("the data directory is not empty")

// ErrInUse refuses a restore over a store a running server holds open.
var ErrInUse = errors.New("the data directory's store is open in another process")

// Restore brings the backup in from back into dataDir. Unless force, dataDir
// must be missing or empty; with force, its store and master key are
// replaced and everything else in it is left (the local provider's nodes/).
func Restore(from, dataDir string, force bool) (Manifest, error) {
	m, err := ReadManifest(from)
	if err != nil {
		return Manifest{}, err
	}
	key, keyID, err := readMasterKey(filepath.Join(from, m.MasterKey))
	if err != nil {
		return Manifest{}, err
	}
	if err := emptyDir(dataDir); err != nil {
		if !errors.Is(err, ErrNotEmpty) || !force {
			return Manifest{}, fmt.Errorf("%s: %w", dataDir, err)
		}
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return Manifest{}, fmt.Errorf("creating the data directory: %w", err)
	}
	current := filepath.Join(dataDir, StoreFile)
	if _, err := os.Stat(current); err == nil {
		// bbolt's lock tells whether a server holds the file.
		db, err := boltstore.Open(current, boltstore.Options{LockTimeout: 300 * time.Millisecond})
		if err != nil {
			return Manifest{}, fmt.Errorf("%s: %w (stop the heddle server using %s first): %v", current, ErrInUse, dataDir, err)
		}
		_ = db.Close()
	}
	tmpStore := filepath.Join(dataDir, ".restore-"+StoreFile)
	tmpKey := filepath.Join(dataDir, ".restore-"+MasterKeyFile)
	defer func() {
		_ = os.Remove(tmpStore)
		_ = os.Remove(tmpKey)
	}()
	if err := copyChecked(filepath.Join(from, m.Store.Name), tmpStore, m.Store); err != nil {
		return Manifest{}, err
	}
	db, err := boltstore.Open(tmpStore, boltstore.Options{})
	if err != nil {
		return Manifest{}, fmt.Errorf("the backup's store does not open: %w", err)
	}
	// A store whose key is not in the backup would start, and then fail
	// every operation that opens a secret.
	if err := CheckStoreKey(context.Background(), db, keyID); err != nil {
		_ = db.Close()
		return Manifest{}, fmt.Errorf("%s: %w; its %s cannot unseal the store's secrets, so nothing was restored", from, err, m.MasterKey)
	}
	if err := db.Close(); err != nil {
		return Manifest{}, fmt.Errorf("the backup's store: %w", err)
	}
	if err := writeFile(tmpKey, key); err != nil {
		return Manifest{}, err
	}
	// The store first: a crash between the renames leaves the restored
	// store with the old key, which Restore run again replaces.
	if err := os.Rename(tmpStore, current); err != nil {
		return Manifest{}, fmt.Errorf("putting the store in place: %w", err)
	}
	if err := os.Rename(tmpKey, filepath.Join(dataDir, MasterKeyFile)); err != nil {
		return Manifest{}, fmt.Errorf("putting the master key in place: %w", err)
	}
	return m, nil
}

// ReadManifest reads and checks a backup directory's manifest.
func ReadManifest(dir string) (Manifest, error) {
	raw, err := os.ReadFile(filepath.Join(dir, ManifestFile))
	if err != nil {
		return Manifest{}, fmt.Errorf("%s is not a heddle backup: %w", dir, err)
	}
	var m Manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		return Manifest{}, fmt.Errorf("%s: the manifest cannot be read: %w", dir, err)
	}
	switch {
	case m.Format < 1:
		return Manifest{}, fmt.Errorf("%s: the manifest has no format version", dir)
	case m.Format > FormatVersion:
		return Manifest{}, fmt.Errorf("%s: the backup's format %d is newer than this heddle reads (%d); restore with a newer heddle", dir, m.Format, FormatVersion)
	case !validName(m.Store.Name) || !validName(m.MasterKey) || m.Store.SHA256 == "":
		return Manifest{}, fmt.Errorf("%s: the manifest names no store or master key", dir)
	}
	return m, nil
}

// validName accepts a plain file name: a manifest must not lead a restore
// out of its directory.
func validName(name string) bool {
	return name != "" && name != "." && name != ".." && !strings.ContainsAny(name, `/\`)
}

// readMasterKey returns the key file's bytes (copied as they are) and the
// id of the key it holds.
func readMasterKey(path string) ([]byte, string, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, "", fmt.Errorf("the master key: %w", err)
	}
	if info.Mode().Perm()&0o077 != 0 {
		return nil, "", fmt.Errorf("the master key %s has mode %v; it must be readable by its owner alone (chmod 600 %s)", path, info.Mode().Perm(), path)
	}
	key, err := os.ReadFile(path)
	if err != nil {
		return nil, "", fmt.Errorf("the master key: %w", err)
	}
	if len(key) == 0 {
		return nil, "", fmt.Errorf("the master key %s is empty", path)
	}
	lk, err := secrets.ReadKeyFile(path)
	if err != nil {
		return nil, "", fmt.Errorf("the master key: %w", err)
	}
	return key, lk.ID(), nil
}

// checkCopy opens a fetched store without changing a byte of it and
// checks that keyID seals its secrets.
func checkCopy(path, keyID string) error {
	db, err := boltstore.Open(path, boltstore.Options{ReadOnly: true})
	if err != nil {
		return fmt.Errorf("the fetched store does not open: %w", err)
	}
	defer db.Close()
	return CheckStoreKey(context.Background(), db, keyID)
}

// emptyDir returns nil when dir is missing or empty, ErrNotEmpty (naming a
// few entries) when it holds something.
func emptyDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if len(entries) == 0 {
		return nil
	}
	var names []string
	for _, e := range entries[:min(len(entries), 4)] {
		names = append(names, e.Name())
	}
	slices.Sort(names)
	return fmt.Errorf("%w (it holds %s)", ErrNotEmpty, strings.Join(names, ", "))
}

// writeFile writes data to a new file readable by its owner alone.
func writeFile(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// copyChecked copies from to a new file at to, refusing a copy whose length
// or checksum differs from want.
func copyChecked(from, to string, want File) error {
	src, err := os.Open(from)
	if err != nil {
		return fmt.Errorf("the backup's store: %w", err)
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	sum := sha256.New()
	n, err := io.Copy(io.MultiWriter(dst, sum), src)
	if err == nil {
		err = dst.Sync()
	}
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("copying the backup's store: %w", err)
	}
	if n != want.Bytes || hex.EncodeToString(sum.Sum(nil)) != want.SHA256 {
		return fmt.Errorf("the backup's store %s is damaged: %d bytes with SHA-256 %s, the manifest says %d bytes with %s",
			from, n, hex.EncodeToString(sum.Sum(nil)), want.Bytes, want.SHA256)
	}
	return nil
}
