package secrets

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// Binding names what a sealed value belongs to ("tenant", "cluster",
// "purpose", ...). Opening needs the same binding that sealing used. It is
// the KMS encryption context, so it shows in CloudTrail: it must name
// things, never hold secrets.
type Binding map[string]string

// encode renders b canonically (sorted, length-prefixed) for use as GCM
// additional data.
func (b Binding) encode() []byte {
	keys := make([]string, 0, len(b))
	for k := range b {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var out []byte
	for _, k := range keys {
		out = binary.AppendUvarint(out, uint64(len(k)))
		out = append(out, k...)
		out = binary.AppendUvarint(out, uint64(len(b[k])))
		out = append(out, b[k]...)
	}
	return out
}

// MasterKey wraps and unwraps data keys. Implementations: LocalKey (a key
// file) and KMSKey (AWS KMS).
type MasterKey interface {
	// ID names the master key inside every value sealed with it, so that a
	// keyring opens each value with the key that sealed it. It is not secret.
	ID() string
	// NewDataKey returns a fresh 32-byte data key and its wrapped form,
	// bound to b.
	NewDataKey(ctx context.Context, b Binding) (plaintext, wrapped []byte, err error)
	// UnwrapDataKey returns the data key that wrapped holds, if b is the
	// binding it was wrapped with.
	UnwrapDataKey(ctx context.Context, wrapped []byte, b Binding) ([]byte, error)
}

// Sealed is an encrypted value as stored: a printable string, so it fits in
// a provider's string fields and in JSON items. Its form is
// SealedPrefix + base64url(version, master key id, wrapped data key, nonce,
// ciphertext).
type Sealed string

// SealedPrefix starts every sealed value; a field value without it is
// plaintext (not yet sealed).
const SealedPrefix = "heddle-sealed:"

// sealedVersion is the binary layout's version byte.
const sealedVersion = 1

// Limits on the parts of a sealed value, so a corrupt or hostile value
// cannot make the parser allocate much.
const (
	maxIDLen      = 2048
	maxWrappedLen = 4096
	gcmNonceLen   = 12
	gcmTagLen     = 16
	dataKeyLen    = 32
)

// IsSealed reports whether s looks like a sealed value (it may still fail to
// parse).
func IsSealed(s string) bool { return strings.HasPrefix(s, SealedPrefix) }

// ErrMalformed: a value that should be sealed cannot be parsed.
var ErrMalformed = errors.New("secrets: malformed sealed value")

// ErrOpen: a sealed value did not open: wrong binding, wrong or unknown
// master key, or tampered bytes. Which one is deliberately not said.
var ErrOpen = errors.New("secrets: sealed value does not open")

// envelope is a parsed Sealed.
type envelope struct {
	masterID   string
	wrapped    []byte
	nonce      []byte
	ciphertext []byte // includes the GCM tag
}

// parseSealed splits s into its parts without decrypting anything.
func parseSealed(s Sealed) (envelope, error) {
	rest, ok := strings.CutPrefix(string(s), SealedPrefix)
	if !ok {
		return envelope{}, fmt.Errorf("%w: missing the %q prefix", ErrMalformed, SealedPrefix)
	}
	raw, err := base64.RawURLEncoding.DecodeString(rest)
	if err != nil {
		return envelope{}, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if len(raw) == 0 || raw[0] != sealedVersion {
		return envelope{}, fmt.Errorf("%w: unknown version", ErrMalformed)
	}
	raw = raw[1:]
	part := func(limit int) ([]byte, error) {
		n, size := binary.Uvarint(raw)
		if size <= 0 || n > uint64(limit) || n > uint64(len(raw)-size) {
			return nil, fmt.Errorf("%w: bad length", ErrMalformed)
		}
		p := raw[size : size+int(n)]
		raw = raw[size+int(n):]
		return p, nil
	}
	id, err := part(maxIDLen)
	if err != nil {
		return envelope{}, err
	}
	wrapped, err := part(maxWrappedLen)
	if err != nil {
		return envelope{}, err
	}
	if len(id) == 0 || len(wrapped) == 0 {
		return envelope{}, fmt.Errorf("%w: empty key id or wrapped key", ErrMalformed)
	}
	if len(raw) < gcmNonceLen+gcmTagLen {
		return envelope{}, fmt.Errorf("%w: too short", ErrMalformed)
	}
	return envelope{masterID: string(id), wrapped: wrapped, nonce: raw[:gcmNonceLen], ciphertext: raw[gcmNonceLen:]}, nil
}

func (e envelope) format() Sealed {
	out := []byte{sealedVersion}
	out = binary.AppendUvarint(out, uint64(len(e.masterID)))
	out = append(out, e.masterID...)
	out = binary.AppendUvarint(out, uint64(len(e.wrapped)))
	out = append(out, e.wrapped...)
	out = append(out, e.nonce...)
	out = append(out, e.ciphertext...)
	return Sealed(SealedPrefix + base64.RawURLEncoding.EncodeToString(out))
}

// MasterKeyID returns the id of the master key that sealed s.
func (s Sealed) MasterKeyID() (string, error) {
	e, err := parseSealed(s)
	if err != nil {
		return "", err
	}
	return e.masterID, nil
}

// Keyring seals with its primary master key and opens with any of its keys.
// It caches unwrapped data keys (bounded), so that a value opened for every
// task of a cluster costs one KMS call per process, not one per task. It is
// safe for concurrent use.
type Keyring struct {
	primary MasterKey
	keys    map[string]MasterKey

	mu    sync.Mutex
	cache map[string][]byte // master id + wrapped key -> data key
}

// maxCachedKeys bounds the data-key cache; when full it is emptied (values
// reopen through the master key), which keeps the code free of an LRU for a
// cache whose misses are cheap and rare.
const maxCachedKeys = 4096

// NewKeyring seals with primary and opens values sealed by primary or by any
// of older (keys being rotated out).
func NewKeyring(primary MasterKey, older ...MasterKey) *Keyring {
	k := &Keyring{primary: primary, keys: map[string]MasterKey{primary.ID(): primary}, cache: map[string][]byte{}}
	for _, o := range older {
		k.keys[o.ID()] = o
	}
	return k
}

// Seal encrypts plaintext under a fresh data key, bound to b.
func (k *Keyring) Seal(ctx context.Context, plaintext []byte, b Binding) (Sealed, error) {
	dataKey, wrapped, err := k.primary.NewDataKey(ctx, b)
	if err != nil {
		return "", fmt.Errorf("secrets: new data key from %s: %w", k.primary.ID(), err)
	}
	defer clear(dataKey)
	aead, err := newGCM(dataKey)
	if err != nil {
		return "", err
	}
	nonce := make([]byte, gcmNonceLen)
	if _, err := rand.Read(nonce); err != nil {
		return "", fmt.Errorf("secrets: nonce: %w", err)
	}
	e := envelope{masterID: k.primary.ID(), wrapped: wrapped, nonce: nonce}
	e.ciphertext = aead.Seal(nil, nonce, plaintext, b.encode())
	return e.format(), nil
}

// Open decrypts s, which must have been sealed with binding b by one of the
// keyring's master keys. Errors: ErrMalformed, ErrOpen, or the master key's
// own failure (KMS unreachable).
func (k *Keyring) Open(ctx context.Context, s Sealed, b Binding) ([]byte, error) {
	e, err := parseSealed(s)
	if err != nil {
		return nil, err
	}
	master, ok := k.keys[e.masterID]
	if !ok {
		return nil, fmt.Errorf("%w: sealed by master key %q, which this keyring does not hold", ErrOpen, e.masterID)
	}
	cacheKey := e.masterID + "\x00" + string(e.wrapped)
	k.mu.Lock()
	dataKey, cached := k.cache[cacheKey]
	k.mu.Unlock()
	if !cached {
		dataKey, err = master.UnwrapDataKey(ctx, e.wrapped, b)
		if err != nil {
			return nil, err
		}
		if len(dataKey) != dataKeyLen {
			return nil, fmt.Errorf("%w: data key of %d bytes", ErrOpen, len(dataKey))
		}
	}
	aead, err := newGCM(dataKey)
	if err != nil {
		return nil, err
	}
	// The binding is the additional data too: a cached data key still
	// refuses a value presented under another binding.
	plain, err := aead.Open(nil, e.nonce, e.ciphertext, b.encode())
	if err != nil {
		return nil, ErrOpen
	}
	if !cached {
		k.mu.Lock()
		if len(k.cache) >= maxCachedKeys {
			clear(k.cache)
		}
		k.cache[cacheKey] = dataKey
		k.mu.Unlock()
	}
	return plain, nil
}

// SealString and OpenString are Seal and Open for text.
func (k *Keyring) SealString(ctx context.Context, plaintext string, b Binding) (Sealed, error) {
	return k.Seal(ctx, []byte(plaintext), b)
}

func (k *Keyring) OpenString(ctx context.Context, s Sealed, b Binding) (Secret, error) {
	p, err := k.Open(ctx, s, b)
	if err != nil {
		return Secret{}, err
	}
	return NewSecret(string(p)), nil
}

func newGCM(key []byte) (cipher.AEAD, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("secrets: %w", err)
	}
	return cipher.NewGCM(block)
}

// SealedKeyIDs calls found with the master key id of every sealed value in
// data, which may be any text that holds sealed values verbatim (a JSON
// item, a store record): a sealed value is the prefix and a run of
// base64url characters, which JSON never escapes. Runs that do not parse
// are skipped: they are not heddle's.
func SealedKeyIDs(data []byte, found func(id string)) {
	prefix := []byte(SealedPrefix)
	for {
		at := bytes.Index(data, prefix)
		if at < 0 {
			return
		}
		data = data[at+len(prefix):]
		end := 0
		for end < len(data) && isBase64URL(data[end]) {
			end++
		}
		if e, err := parseSealed(Sealed(SealedPrefix + string(data[:end]))); err == nil {
			found(e.masterID)
		}
		data = data[end:]
	}
}

func isBase64URL(c byte) bool {
	return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_'
}
