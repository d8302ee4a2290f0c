package identity

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/heddle-io/heddle/internal/store"
)

// Errors the API maps to statuses.
var (
	ErrNotFound = errors.New("identity: not found")
	ErrExists   = errors.New("identity: already exists")
)

// issuerKey is the issuer's item in its tenant's scope.
func issuerKey(tenant, name string) store.Key {
	return store.Key{PK: store.TenantPK(tenant, "ISSUERS"), SK: name}
}

// lookupPK holds one system item per configured issuer, sorted by the hash
// of its URL, so a token's iss finds every configuration that trusts it
// with one query, whatever tenant holds them.
const lookupPK = "OIDCISSUERS"

func urlHash(issuerURL string) string {
	sum := sha256.Sum256([]byte(issuerURL))
	return hex.EncodeToString(sum[:16])
}

func lookupKey(issuerURL, tenant, name string) store.Key {
	return store.Key{PK: lookupPK, SK: urlHash(issuerURL) + "#" + tenant + "#" + name}
}

// lookupRecord is what the system item holds: where the issuer lives.
type lookupRecord struct {
	Tenant string `json:"tenant"`
	Name   string `json:"name"`
}

// CreateIssuer stores a new issuer in tenant, which must exist (the caller
// checks). It fails with ErrExists when the tenant has one of that name.
func (id *Identity) CreateIssuer(ctx context.Context, tenant string, is Issuer) (Issuer, error) {
	is.TenantID, is.CreatedAt, is.Version = tenant, id.now().UTC(), 0
	if ps := is.Validate(tenant); len(ps) > 0 {
		return Issuer{}, ps
	}
	data, err := json.Marshal(is)
	if err != nil {
		return Issuer{}, err
	}
	rec, _ := json.Marshal(lookupRecord{Tenant: tenant, Name: is.Name})
	err = id.s.Transact(ctx, []store.Op{
		store.Put(store.Item{Key: issuerKey(tenant, is.Name), Data: data}, store.Condition{MustNotExist: true}),
		// No condition: the scoped item guards the name, and a lookup item a
		// deleted tenant left behind (same tenant id, same name) is replaced.
		store.Put(store.Item{Key: lookupKey(is.URL, tenant, is.Name), Data: rec}, store.Condition{}),
	})
	if errors.Is(err, store.ErrConditionFailed) {
		return Issuer{}, fmt.Errorf("%w: issuer %q", ErrExists, is.Name)
	}
	if err != nil {
		return Issuer{}, fmt.Errorf("identity: storing issuer %s: %w", is.Name, err)
	}
	return id.GetIssuer(ctx, tenant, is.Name)
}

// GetIssuer returns one issuer of tenant.
func (id *Identity) GetIssuer(ctx context.Context, tenant, name string) (Issuer, error) {
	it, err := id.s.Get(ctx, issuerKey(tenant, name))
	if errors.Is(err, store.ErrNotFound) {
		return Issuer{}, fmt.Errorf("%w: issuer %q", ErrNotFound, name)
	}
	if err != nil {
		return Issuer{}, err
	}
	return decodeIssuer(it)
}

func decodeIssuer(it store.Item) (Issuer, error) {
	var is Issuer
	if err := json.Unmarshal(it.Data, &is); err != nil {
		return Issuer{}, fmt.Errorf("identity: unreadable issuer %s: %w", it.SK, err)
	}
	is.Version = it.Version
	return is, nil
}

// ListIssuers returns one page of tenant's issuers.
func (id *Identity) ListIssuers(ctx context.Context, tenant string, limit int, cursor string) ([]Issuer, string, error) {
	page, err := id.s.Query(ctx, issuerKey(tenant, "").PK, store.Query{Limit: limit, Cursor: cursor})
	if err != nil {
		return nil, "", err
	}
	out := make([]Issuer, 0, len(page.Items))
	for _, it := range page.Items {
		is, err := decodeIssuer(it)
		if err != nil {
			return nil, "", err
		}
		out = append(out, is)
	}
	return out, page.Next, nil
}

// DeleteIssuer removes one issuer of tenant; tokens it issued stop working
// at once. Users it created stay (their API keys, if any, keep working).
func (id *Identity) DeleteIssuer(ctx context.Context, tenant, name string) error {
	it, err := id.s.Get(ctx, issuerKey(tenant, name))
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("%w: issuer %q", ErrNotFound, name)
	}
	if err != nil {
		return err
	}
	is, err := decodeIssuer(it)
	if err != nil {
		return err
	}
	err = id.s.Transact(ctx, []store.Op{
		store.Delete(it.Key, store.Condition{Version: it.Version}),
		store.Delete(lookupKey(is.URL, tenant, name), store.Condition{}),
	})
	if errors.Is(err, store.ErrConditionFailed) {
		return fmt.Errorf("%w: issuer %q (it changed or went away meanwhile)", ErrNotFound, name)
	}
	return err
}

// trusting returns every configured issuer whose URL is issuerURL, at most
// MaxCandidates of them.
func (id *Identity) trusting(ctx context.Context, issuerURL string) ([]Issuer, error) {
	return id.lookUp(ctx, store.Query{Prefix: urlHash(issuerURL) + "#", Limit: MaxCandidates},
		func(is Issuer) bool { return is.URL == issuerURL })
}

// AllIssuers returns every issuer of every tenant, for the public sign-in
// listing, at most MaxSignInIssuers.
func (id *Identity) AllIssuers(ctx context.Context) ([]Issuer, error) {
	return id.lookUp(ctx, store.Query{Limit: MaxSignInIssuers}, func(Issuer) bool { return true })
}

// lookUp reads the issuers that the lookup items q finds name, keeping
// those keep accepts (a URL hash can collide; the issuer says its URL).
func (id *Identity) lookUp(ctx context.Context, q store.Query, keep func(Issuer) bool) ([]Issuer, error) {
	page, err := id.s.Query(ctx, lookupPK, q)
	if err != nil {
		return nil, err
	}
	var out []Issuer
	for _, it := range page.Items {
		var rec lookupRecord
		if err := json.Unmarshal(it.Data, &rec); err != nil {
			return nil, fmt.Errorf("identity: unreadable issuer lookup %s: %w", it.SK, err)
		}
		is, err := id.GetIssuer(ctx, rec.Tenant, rec.Name)
		if errors.Is(err, ErrNotFound) {
			continue // deleted between the two reads
		}
		if err != nil {
			return nil, err
		}
		if keep(is) {
			out = append(out, is)
		}
	}
	return out, nil
}

// ErrChanged: the issuer changed since the version the caller read.
var ErrChanged = errors.New("identity: the issuer changed since it was read")

// UpdateIssuer replaces an issuer of tenant. ifVersion, when not 0, must be
// the stored version. A new URL moves its lookup item in the same
// transaction.
func (id *Identity) UpdateIssuer(ctx context.Context, tenant string, is Issuer, ifVersion int64) (Issuer, error) {
	it, err := id.s.Get(ctx, issuerKey(tenant, is.Name))
	if errors.Is(err, store.ErrNotFound) {
		return Issuer{}, fmt.Errorf("%w: issuer %q", ErrNotFound, is.Name)
	}
	if err != nil {
		return Issuer{}, err
	}
	old, err := decodeIssuer(it)
	if err != nil {
		return Issuer{}, err
	}
	if ifVersion != 0 && ifVersion != it.Version {
		return Issuer{}, fmt.Errorf("%w: issuer %q is at version %d", ErrChanged, is.Name, it.Version)
	}
	is.TenantID, is.CreatedAt, is.Version = tenant, old.CreatedAt, 0
	if ps := is.Validate(tenant); len(ps) > 0 {
		return Issuer{}, ps
	}
	data, err := json.Marshal(is)
	if err != nil {
		return Issuer{}, err
	}
	ops := []store.Op{store.Put(store.Item{Key: it.Key, Data: data}, store.Condition{Version: it.Version})}
	if old.URL != is.URL {
		rec, _ := json.Marshal(lookupRecord{Tenant: tenant, Name: is.Name})
		ops = append(ops,
			store.Delete(lookupKey(old.URL, tenant, is.Name), store.Condition{}),
			store.Put(store.Item{Key: lookupKey(is.URL, tenant, is.Name), Data: rec}, store.Condition{}))
	}
	if err := id.s.Transact(ctx, ops); errors.Is(err, store.ErrConditionFailed) {
		return Issuer{}, fmt.Errorf("%w: issuer %q", ErrChanged, is.Name)
	} else if err != nil {
		return Issuer{}, fmt.Errorf("identity: updating issuer %s: %w", is.Name, err)
	}
	return id.GetIssuer(ctx, tenant, is.Name)
}

// DropTenant removes every issuer of tenant (the tenant is being deleted).
func (id *Identity) DropTenant(ctx context.Context, tenant string) error {
	for {
		items, _, err := id.ListIssuers(ctx, tenant, store.MaxPageSize, "")
		if err != nil {
			return err
		}
		if len(items) == 0 {
			return nil
		}
		for _, is := range items {
			if err := id.DeleteIssuer(ctx, tenant, is.Name); err != nil && !errors.Is(err, ErrNotFound) {
				return fmt.Errorf("identity: dropping issuer %s of tenant %s: %w", is.Name, tenant, err)
			}
		}
	}
}
