package secrets

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// LocalKey is a master key held in a file: the embedded all-in-one server's
// key, where no KMS exists. Whoever can read the file can open every
// secret, so the file must be readable by heddle's user alone, and it
// should be backed up apart from the data it protects.
type LocalKey struct {
	id  string
	key []byte
}

// keyFileHeader starts a key file, so a wrong file is recognised as such.
const keyFileHeader = "heddle-master-key-v1 "

// LoadOrCreateKeyFile reads the master key at path, creating it (mode 0600,
// in a directory created 0700) with a fresh random key when it does not
// exist. A key file that others may read is refused rather than used.
func LoadOrCreateKeyFile(path string) (*LocalKey, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return createKeyFile(path)
	}
	if err != nil {
		return nil, fmt.Errorf("secrets: read key file: %w", err)
	}
	info, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("secrets: key file: %w", err)
	}
	if info.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("secrets: key file %s has mode %v; it must be readable by its owner alone (chmod 600 %s)", path, info.Mode().Perm(), path)
	}
	return parseKeyFile(path, data)
}

func createKeyFile(path string) (*LocalKey, error) {
	key := make([]byte, dataKeyLen)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("secrets: generate master key: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("secrets: key file directory: %w", err)
	}
	// The key is written whole to a private temporary file and then linked
	// into place: link fails when path exists, so of several processes
	// starting together exactly one key wins, and no reader ever sees a
	// file that exists but is still empty or half written.
	tmp, err := os.CreateTemp(filepath.Dir(path), ".master-key-*")
	if err != nil {
		return nil, fmt.Errorf("secrets: create key file: %w", err)
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.WriteString(keyFileHeader + base64.StdEncoding.EncodeToString(key) + "\n")
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("secrets: write key file: %w", err)
	}
	if err := os.Link(tmp.Name(), path); errors.Is(err, fs.ErrExist) {
		// Another process created it first: use theirs.
		return LoadOrCreateKeyFile(path)
	} else if err != nil {
		return nil, fmt.Errorf("secrets: create key file: %w", err)
	}
	if err := syncDir(filepath.Dir(path)); err != nil {
		return nil, fmt.Errorf("secrets: key file directory: %w", err)
	}
	return NewLocalKey(key)
}

// syncDir makes a new directory entry durable, so a key that sealed secrets
// is not lost to a crash right after it was created.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

func parseKeyFile(path string, data []byte) (*LocalKey, error) {
	text, ok := strings.CutPrefix(strings.TrimSpace(string(data)), keyFileHeader)
	if !ok {
		return nil, fmt.Errorf("secrets: %s is not a heddle master key file (it must start with %q)", path, keyFileHeader)
	}
	key, err := base64.StdEncoding.DecodeString(strings.TrimSpace(text))
	if err != nil {
		return nil, fmt.Errorf("secrets: %s: the key is not base64: %v", path, err)
	}
	return NewLocalKey(key)
}

// NewLocalKey makes a master key from 32 key bytes.
func NewLocalKey(key []byte) (*LocalKey, error) {
	if len(key) != dataKeyLen {
		return nil, fmt.Errorf("secrets: a master key has %d bytes, not %d", dataKeyLen, len(key))
	}
	// The id fingerprints the key (one-way), so a value sealed under another
	// key file is reported as such instead of as a corrupt value.
	sum := sha256.Sum256(append([]byte("heddle-local-key-id\x00"), key...))
	return &LocalKey{id: "local:" + hex.EncodeToString(sum[:8]), key: append([]byte(nil), key...)}, nil
}

func (k *LocalKey) ID() string { return k.id }

// String keeps the key out of logs.
func (k *LocalKey) String() string { return "LocalKey(" + k.id + ")" }

// GoString keeps the key out of %#v.
func (k *LocalKey) GoString() string { return k.String() }

// wrapAAD separates wrapped data keys from sealed values: the same binding
// yields different additional data in the two layers.
func wrapAAD(b Binding) []byte { return append([]byte("heddle-data-key\x00"), b.encode()...) }

func (k *LocalKey) NewDataKey(_ context.Context, b Binding) ([]byte, []byte, error) {
	dataKey := make([]byte, dataKeyLen)
	nonce := make([]byte, gcmNonceLen)
	if _, err := rand.Read(dataKey); err != nil {
		return nil, nil, err
	}
	if _, err := rand.Read(nonce); err != nil {
		return nil, nil, err
	}
	aead, err := newGCM(k.key)
	if err != nil {
		return nil, nil, err
	}
	return dataKey, aead.Seal(nonce, nonce, dataKey, wrapAAD(b)), nil
}

func (k *LocalKey) UnwrapDataKey(_ context.Context, wrapped []byte, b Binding) ([]byte, error) {
	if len(wrapped) < gcmNonceLen+gcmTagLen {
		return nil, ErrOpen
	}
	aead, err := newGCM(k.key)
	if err != nil {
		return nil, err
	}
	dataKey, err := aead.Open(nil, wrapped[:gcmNonceLen], wrapped[gcmNonceLen:], wrapAAD(b))
	if err != nil {
		return nil, ErrOpen
	}
	return dataKey, nil
}

// ReadKeyFile reads the master key at path without ever creating one: for
// the tools that check a data directory's key (backup, restore), where a
// missing key is an error, not a first start.
func ReadKeyFile(path string) (*LocalKey, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("secrets: key file: %w", err)
	}
	if info.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("secrets: key file %s has mode %v; it must be readable by its owner alone (chmod 600 %s)", path, info.Mode().Perm(), path)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("secrets: read key file: %w", err)
	}
	return parseKeyFile(path, data)
}
