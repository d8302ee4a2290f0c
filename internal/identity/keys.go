package identity

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	jose "github.com/go-jose/go-jose/v4"
)

// maxDocument bounds a discovery document or a JWKS read from a provider.
const maxDocument = 1 << 20

// keySet is an oidc.KeySet over one issuer's JWKS with bounded refreshes:
// the keys are fetched again when they are older than maxAge, or when a
// token's signature verifies with none of them (the provider rotated its
// keys), but never more often than once per minRefresh. go-oidc's
// RemoteKeySet refetches on every unknown key id, which a stream of forged
// tokens would turn into a stream of requests to the provider.
type keySet struct {
	url        string
	client     *http.Client
	minRefresh time.Duration
	maxAge     time.Duration
	now        func() time.Time
	algs       []jose.SignatureAlgorithm

	mu        sync.Mutex
	keys      []jose.JSONWebKey
	fetched   time.Time // when keys were read
	attempted time.Time // when a fetch was last tried, successful or not
	fetches   int       // how many fetches were tried (tests read it)
}

var _ oidc.KeySet = (*keySet)(nil)

// VerifySignature checks jwt's signature with go-jose against the cached
// keys, refreshing them as the type's comment says.
func (k *keySet) VerifySignature(ctx context.Context, jwt string) ([]byte, error) {
	jws, err := jose.ParseSigned(jwt, k.algs)
	if err != nil {
		return nil, fmt.Errorf("identity: malformed token: %w", err)
	}
	keys, fresh := k.current(ctx, false)
	if payload, ok := verifyWith(jws, keys); ok {
		return payload, nil
	}
	if fresh {
		return nil, errors.New("identity: no key of the issuer verifies the signature")
	}
	keys, _ = k.current(ctx, true)
	if payload, ok := verifyWith(jws, keys); ok {
		return payload, nil
	}
	return nil, errors.New("identity: no key of the issuer verifies the signature")
}

func verifyWith(jws *jose.JSONWebSignature, keys []jose.JSONWebKey) ([]byte, bool) {
	kid := jws.Signatures[0].Header.KeyID
	for _, key := range keys {
		if kid != "" && key.KeyID != "" && key.KeyID != kid {
			continue
		}
		if key.Use != "" && key.Use != "sig" {
			continue
		}
		if payload, err := jws.Verify(key); err == nil {
			return payload, true
		}
	}
	return nil, false
}

// current returns the keys, fetching them first when there are none, when
// they are too old, or when force is set; in every case at most once per
// minRefresh. fresh says whether they were fetched by this call (no point
// in fetching again).
func (k *keySet) current(ctx context.Context, force bool) (keys []jose.JSONWebKey, fresh bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	now := k.now()
	stale := k.fetched.IsZero() || now.Sub(k.fetched) >= k.maxAge || force
	if !stale || (!k.attempted.IsZero() && now.Sub(k.attempted) < k.minRefresh) {
		return k.keys, false
	}
	k.attempted = now
	k.fetches++
	got, err := k.fetch(ctx)
	if err != nil {
		// Keep the keys we have: a provider that is down for a moment
		// should not sign everyone out.
		return k.keys, false
	}
	k.keys, k.fetched = got, now
	return k.keys, true
}

func (k *keySet) fetch(ctx context.Context) ([]jose.JSONWebKey, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, k.url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := k.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("identity: fetching the JWKS %s: %w", k.url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxDocument))
	if err != nil {
		return nil, fmt.Errorf("identity: reading the JWKS %s: %w", k.url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("identity: the JWKS %s answered %s", k.url, resp.Status)
	}
	var set struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(body, &set); err != nil {
		return nil, fmt.Errorf("identity: the JWKS %s is not a key set: %w", k.url, err)
	}
	// A key of a type go-jose does not know (a provider may publish
	// encryption keys too) is skipped, not fatal to the others.
	keys := make([]jose.JSONWebKey, 0, len(set.Keys))
	for _, raw := range set.Keys {
		var key jose.JSONWebKey
		if err := key.UnmarshalJSON(raw); err == nil {
			keys = append(keys, key)
		}
	}
	return keys, nil
}

// fetchCount is how many JWKS fetches were tried.
func (k *keySet) fetchCount() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.fetches
}
