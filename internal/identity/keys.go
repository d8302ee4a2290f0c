package identity

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
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
//
// One exception keeps a rotation from signing people out: a token naming a
// key id the cache lacks may fetch once early, within minRefresh of the
// last fetch, and then no early fetch happens again for minRefresh. So the
// provider sees at most two fetches per minRefresh however many forged
// tokens arrive, and a key published a second after a fetch is picked up
// by the first token signed with it.
type keySet struct {
	issuer     string
	url        string
	client     *http.Client
	minRefresh time.Duration
	maxAge     time.Duration
	now        func() time.Time
	algs       []jose.SignatureAlgorithm
	log        *slog.Logger

	mu        sync.Mutex
	keys      []jose.JSONWebKey
	fetched   time.Time // when keys were read
	attempted time.Time // when a fetch was last tried, successful or not
	early     time.Time // when an unknown key id last fetched early
	lastErr   error     // the last fetch's failure; nil after a success
	fetches   int       // how many fetches were tried (tests read it)
}

var _ oidc.KeySet = (*keySet)(nil)

// retryFailed is how soon a fetch that failed is tried again (at most
// minRefresh): a provider that is down for a moment should not make every
// sign-in wait the full minRefresh, nor should heddle hammer it.
const retryFailed = 5 * time.Second

// refresh says why current may fetch.
type refresh int

const (
	refreshIfStale   refresh = iota // only keys older than maxAge, or none
	refreshBounded                  // a signature failed: fetch if minRefresh allows
	refreshUnknownID                // the token's kid is not cached: may fetch early once
)

// outageKey carries a *keyOutage through go-oidc's Verify, which flattens
// the KeySet's error into text: authenticate reads it to tell an outage
// (503) from a bad signature (401).
type outageKey struct{}

type keyOutage struct {
	err        error
	retryAfter time.Duration
}

// VerifySignature checks jwt's signature with go-jose against the cached
// keys, refreshing them as the type's comment says.
func (k *keySet) VerifySignature(ctx context.Context, jwt string) ([]byte, error) {
	jws, err := jose.ParseSigned(jwt, k.algs)
	if err != nil {
		return nil, fmt.Errorf("identity: malformed token: %w", err)
	}
	kid := jws.Signatures[0].Header.KeyID
	keys, fresh := k.current(ctx, refreshIfStale)
	if payload, ok := verifyWith(jws, keys); ok {
		return payload, nil
	}
	if !fresh {
		why := refreshBounded
		if kid != "" && !hasKeyID(keys, kid) {
			why = refreshUnknownID
		}
		keys, _ = k.current(ctx, why)
		if payload, ok := verifyWith(jws, keys); ok {
			return payload, nil
		}
	}
	// The keys could not be read and none of those held can be the
	// token's: it can be neither accepted nor refused.
	if ferr, retry := k.failure(); ferr != nil && (len(keys) == 0 || (kid != "" && !hasKeyID(keys, kid))) {
		if o, ok := ctx.Value(outageKey{}).(*keyOutage); ok {
			o.err, o.retryAfter = ferr, retry
		}
		return nil, fmt.Errorf("identity: the issuer's keys cannot be read: %w", ferr)
	}
	return nil, errors.New("identity: no key of the issuer verifies the signature")
}

func hasKeyID(keys []jose.JSONWebKey, kid string) bool {
	for _, key := range keys {
		if key.KeyID == kid {
			return true
		}
	}
	return false
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

// current returns the keys, fetching them first when why and the bounds
// in the type's comment allow. fresh says whether they were fetched by
// this call (no point in fetching again).
func (k *keySet) current(ctx context.Context, why refresh) (keys []jose.JSONWebKey, fresh bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	now := k.now()
	stale := k.fetched.IsZero() || now.Sub(k.fetched) >= k.maxAge || why != refreshIfStale
	if !stale {
		return k.keys, false
	}
	wait := k.minRefresh
	if k.lastErr != nil {
		wait = min(wait, retryFailed)
	}
	allowed := k.attempted.IsZero() || now.Sub(k.attempted) >= wait
	if !allowed && why == refreshUnknownID && k.lastErr == nil && (k.early.IsZero() || now.Sub(k.early) >= k.minRefresh) {
		allowed = true
		k.early = now
	}
	if !allowed {
		return k.keys, false
	}
	k.attempted = now
	k.fetches++
	got, err := k.fetch(ctx)
	if err != nil {
		// Keep the keys we have: a provider that is down for a moment
		// should not sign everyone out. Say why, once per attempt (the
		// attempts are bounded as above).
		k.lastErr = err
		k.log.WarnContext(ctx, "identity: fetching the issuer's keys failed", slog.String("issuer", k.issuer), slog.String("jwks", k.url), slog.Any("error", err))
		return k.keys, false
	}
	k.keys, k.fetched, k.lastErr = got, now, nil
	return k.keys, true
}

// failure is the last fetch's error, if it failed, and how long until the
// next fetch may be tried.
func (k *keySet) failure() (error, time.Duration) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.lastErr == nil {
		return nil, 0
	}
	wait := min(k.minRefresh, retryFailed) - k.now().Sub(k.attempted)
	return k.lastErr, max(wait, time.Second)
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
