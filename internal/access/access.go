package access

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/store"
)

// Errors the API maps to statuses.
var (
	ErrUnauthorized = errors.New("access: missing, malformed or unknown API key")
	ErrNotFound     = errors.New("access: not found")
	ErrExists       = errors.New("access: already exists")
	ErrConflict     = errors.New("access: conflict")
)

// Counter names on the tenant item.
const (
	FreeClusters = "freeClusters"
	FreeNodes    = "freeNodes"
)

// KeyPrefix starts every API key, so a leaked one is easy to recognise (and to
// scan for in logs and repositories).
const KeyPrefix = "hdl_"

// Principal is who is calling.
type Principal struct {
	Tenant string      `json:"tenant"`
	User   string      `json:"user"`
	Role   domain.Role `json:"role"`
	KeyID  string      `json:"keyId"`
}

// Access reads and writes tenants, users and keys.
type Access struct {
	s   store.Store
	now func() time.Time
}

// New returns an Access over the unscoped store s.
func New(s store.Store) *Access { return &Access{s: s, now: time.Now} }

func tenantKey(id string) store.Key { return store.Key{PK: "TENANTS", SK: id} }
func userKey(tenant, name string) store.Key {
	return store.Key{PK: store.TenantPK(tenant, "USERS"), SK: name}
}
func keyListKey(tenant, user, id string) store.Key {
	return store.Key{PK: store.TenantPK(tenant, "KEYS#"+user), SK: id}
}
func keyLookupKey(hash string) store.Key { return store.Key{PK: "APIKEYS", SK: hash} }

// keyRecord is what the global lookup item holds.
type keyRecord struct {
	ID     string `json:"id"`
	Tenant string `json:"tenant"`
	User   string `json:"user"`
}

// HashKey returns the stored form of an API key.
func HashKey(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// NewKeySecret returns a fresh API key: KeyPrefix and 32 random bytes.
func NewKeySecret() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on supported platforms
	return KeyPrefix + base64.RawURLEncoding.EncodeToString(b)
}

// ValidKeySecret reports whether s has the shape of an API key.
func ValidKeySecret(s string) bool {
	rest, ok := strings.CutPrefix(s, KeyPrefix)
	if !ok {
		return false
	}
	b, err := base64.RawURLEncoding.DecodeString(rest)
	return err == nil && len(b) == 32
}

func newID(prefix string) string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// Authenticate resolves a bearer key to its principal.
func (a *Access) Authenticate(ctx context.Context, secret string) (Principal, error) {
	if !ValidKeySecret(secret) {
		return Principal{}, ErrUnauthorized
	}
	it, err := a.s.Get(ctx, keyLookupKey(HashKey(secret)))
	if errors.Is(err, store.ErrNotFound) {
		return Principal{}, ErrUnauthorized
	}
	if err != nil {
		return Principal{}, err
	}
	var rec keyRecord
	if err := json.Unmarshal(it.Data, &rec); err != nil {
		return Principal{}, fmt.Errorf("access: unreadable key record: %w", err)
	}
	tenant, err := a.s.Get(ctx, tenantKey(rec.Tenant))
	if errors.Is(err, store.ErrNotFound) || (err == nil && tenant.Status != tenantActive) {
		return Principal{}, ErrUnauthorized
	}
	if err != nil {
		return Principal{}, err
	}
	u, err := a.GetUser(ctx, rec.Tenant, rec.User)
	if errors.Is(err, ErrNotFound) {
		return Principal{}, ErrUnauthorized
	}
	if err != nil {
		return Principal{}, err
	}
	return Principal{Tenant: rec.Tenant, User: rec.User, Role: u.Role, KeyID: rec.ID}, nil
}

// Bootstrap makes sure the system tenant and its superadmin exist. On first
// start it creates them with a key: the given one when not empty (for
// automation, from HEDDLE_BOOTSTRAP_KEY), else a fresh one, which it returns so
// the caller can print it once. With a given key and an existing system, it
// registers that key for the superadmin if it is not yet known.
func (a *Access) Bootstrap(ctx context.Context, given string) (secret string, err error) {
	if given != "" && !ValidKeySecret(given) {
		return "", fmt.Errorf("access: the bootstrap key must be %s followed by 32 bytes in unpadded base64url (make one with `heddle keygen`)", KeyPrefix)
	}
	_, err = a.s.Get(ctx, tenantKey(domain.SystemTenant))
	switch {
	case err == nil:
		if given == "" {
			return "", nil
		}
		if _, err := a.s.Get(ctx, keyLookupKey(HashKey(given))); err == nil {
			return "", nil
		}
		key, err := a.createKey(ctx, domain.SystemTenant, "admin", given)
		if err != nil {
			return "", err
		}
		return key.Secret, nil
	case !errors.Is(err, store.ErrNotFound):
		return "", err
	}
	t := domain.Tenant{ID: domain.SystemTenant, Description: "heddle's own tenant: the superadmin lives here", Workers: 2, MaxClusters: 10, MaxNodes: 100}
	u := domain.User{TenantID: domain.SystemTenant, Name: "admin", Role: domain.RoleSuperadmin}
	if given == "" {
		given = NewKeySecret()
	}
	_, key, err := a.createTenant(ctx, t, &u, given)
	if errors.Is(err, ErrExists) {
		return "", nil // another process bootstrapped first
	}
	if err != nil {
		return "", err
	}
	return key.Secret, nil
}
