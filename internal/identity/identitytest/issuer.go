package identitytest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// Issuer is a running test provider.
type Issuer struct {
	// URL is the issuer (what tokens carry in iss).
	URL string
	// ClientID is the audience of the tokens it issues by default.
	ClientID string
	// TokenTTL is how long issued ID tokens live; 10 minutes by default.
	TokenTTL time.Duration

	srv *httptest.Server

	mu      sync.Mutex
	keys    []signingKey // published in the JWKS; the last one signs
	user    map[string]any
	codes   map[string]codeGrant
	devices map[string]bool // device code -> issued (approved on first poll)
	refresh map[string]bool

	jwksRequests atomic.Int64
	discoveries  atomic.Int64
	scopes       atomic.Value // string: the scope of the last authorization or device request
	jwksDown     atomic.Bool
	tokenHangs   atomic.Bool
	released     chan struct{} // closed when the test ends: hung requests return
}

type signingKey struct {
	id  string
	key *ecdsa.PrivateKey
}

type codeGrant struct {
	challenge, redirectURI, clientID, nonce string
}

// New starts a provider whose tokens are for clientID, with one key; it
// stops when the test ends.
func New(t testing.TB, clientID string) *Issuer {
	t.Helper()
	i := &Issuer{ClientID: clientID, TokenTTL: 10 * time.Minute, codes: map[string]codeGrant{},
		devices: map[string]bool{}, refresh: map[string]bool{},
		user: map[string]any{"sub": "u-1", "email": "alice@example.com", "email_verified": true}}
	i.keys = []signingKey{newKey()}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", i.discovery)
	mux.HandleFunc("GET /jwks", i.jwks)
	mux.HandleFunc("GET /authorize", i.authorize)
	mux.HandleFunc("POST /device", i.device)
	mux.HandleFunc("POST /token", i.token)
	mux.HandleFunc("OPTIONS /", func(w http.ResponseWriter, r *http.Request) { cors(w) })
	i.released = make(chan struct{})
	i.srv = httptest.NewServer(mux)
	i.URL = i.srv.URL
	t.Cleanup(i.srv.Close)
	// Runs before Close (cleanups run last first): Close waits for the
	// requests a hanging token endpoint still holds.
	t.Cleanup(func() { close(i.released) })
	return i
}

// LastScope is the scope parameter of the last authorization or device
// request.
func (i *Issuer) LastScope() string {
	s, _ := i.scopes.Load().(string)
	return s
}

// SetJWKSDown makes the key set answer 503 (down) or serve the keys again.
func (i *Issuer) SetJWKSDown(down bool) { i.jwksDown.Store(down) }

// SetTokenHangs makes the token endpoint hold every request until the
// client gives up (or the test ends), as a provider that stopped answering.
func (i *Issuer) SetTokenHangs(hang bool) { i.tokenHangs.Store(hang) }

func newKey() signingKey {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	return signingKey{id: random(8), key: k}
}

func random(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// SetUser sets the claims of the person who signs in next (device and
// authorization code flows); iss, aud, exp and iat are added.
func (i *Issuer) SetUser(claims map[string]any) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.user = maps.Clone(claims)
}

// Rotate adds a new signing key; with keepOld the previous keys stay in
// the JWKS (a provider's overlap period), without they are dropped.
func (i *Issuer) Rotate(keepOld bool) {
	i.mu.Lock()
	defer i.mu.Unlock()
	k := newKey()
	if keepOld {
		i.keys = append(i.keys, k)
	} else {
		i.keys = []signingKey{k}
	}
}

// JWKSRequests is how many times the key set was read.
func (i *Issuer) JWKSRequests() int64 { return i.jwksRequests.Load() }

// Claims are the default claims of a token for the current user: iss,
// aud, sub, email, iat and exp.
func (i *Issuer) Claims() map[string]any {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.claimsLocked(time.Now())
}

func (i *Issuer) claimsLocked(now time.Time) map[string]any {
	c := maps.Clone(i.user)
	c["iss"], c["aud"] = i.URL, i.ClientID
	c["iat"], c["exp"] = now.Unix(), now.Add(i.TokenTTL).Unix()
	return c
}

// Token signs claims with the current key. A claim set to nil is left out.
func (i *Issuer) Token(claims map[string]any) string {
	i.mu.Lock()
	k := i.keys[len(i.keys)-1]
	i.mu.Unlock()
	return Sign(k.id, k.key, claims)
}

// ForeignToken signs claims with a key the JWKS does not hold, under the
// current key's id: a forgery.
func (i *Issuer) ForeignToken(claims map[string]any) string {
	i.mu.Lock()
	id := i.keys[len(i.keys)-1].id
	i.mu.Unlock()
	return Sign(id, newKey().key, claims)
}

// Sign makes a compact ES256 JWS of claims.
func Sign(kid string, key *ecdsa.PrivateKey, claims map[string]any) string {
	c := map[string]any{}
	for k, v := range claims {
		if v != nil {
			c[k] = v
		}
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: key},
		(&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", kid))
	if err != nil {
		panic(err)
	}
	payload, _ := json.Marshal(c)
	obj, err := signer.Sign(payload)
	if err != nil {
		panic(err)
	}
	s, err := obj.CompactSerialize()
	if err != nil {
		panic(err)
	}
	return s
}

func cors(w http.ResponseWriter) {
	w.Header().Set("Access-Control-Allow-Origin", "*")
	w.Header().Set("Access-Control-Allow-Headers", "Content-Type, Authorization")
	w.Header().Set("Access-Control-Allow-Methods", "GET, POST")
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	cors(w)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func (i *Issuer) discovery(w http.ResponseWriter, r *http.Request) {
	i.discoveries.Add(1)
	writeJSON(w, http.StatusOK, map[string]any{
		"issuer":                                i.URL,
		"jwks_uri":                              i.URL + "/jwks",
		"authorization_endpoint":                i.URL + "/authorize",
		"token_endpoint":                        i.URL + "/token",
		"device_authorization_endpoint":         i.URL + "/device",
		"response_types_supported":              []string{"code"},
		"subject_types_supported":               []string{"public"},
		"id_token_signing_alg_values_supported": []string{"ES256"},
		"code_challenge_methods_supported":      []string{"S256"},
		"grant_types_supported":                 []string{"authorization_code", "refresh_token", "urn:ietf:params:oauth:grant-type:device_code"},
	})
}

func (i *Issuer) jwks(w http.ResponseWriter, r *http.Request) {
	i.jwksRequests.Add(1)
	if i.jwksDown.Load() {
		http.Error(w, "the key set is down (test)", http.StatusServiceUnavailable)
		return
	}
	i.mu.Lock()
	set := jose.JSONWebKeySet{}
	for _, k := range i.keys {
		set.Keys = append(set.Keys, jose.JSONWebKey{Key: &k.key.PublicKey, KeyID: k.id, Algorithm: string(jose.ES256), Use: "sig"})
	}
	i.mu.Unlock()
	writeJSON(w, http.StatusOK, set)
}

// authorize approves at once: it redirects to redirect_uri with a code,
// remembering the PKCE challenge for the token endpoint.
func (i *Issuer) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	redirect, err := url.Parse(q.Get("redirect_uri"))
	if err != nil || redirect.Scheme == "" || q.Get("response_type") != "code" || q.Get("client_id") != i.ClientID ||
		q.Get("code_challenge") == "" || q.Get("code_challenge_method") != "S256" {
		http.Error(w, "bad authorization request (this provider needs response_type=code, its client_id, a redirect_uri and PKCE S256)", http.StatusBadRequest)
		return
	}
	i.scopes.Store(q.Get("scope"))
	code := random(16)
	i.mu.Lock()
	i.codes[code] = codeGrant{challenge: q.Get("code_challenge"), redirectURI: q.Get("redirect_uri"), clientID: q.Get("client_id"), nonce: q.Get("nonce")}
	i.mu.Unlock()
	rq := redirect.Query()
	rq.Set("code", code)
	rq.Set("state", q.Get("state"))
	redirect.RawQuery = rq.Encode()
	http.Redirect(w, r, redirect.String(), http.StatusFound)
}

func (i *Issuer) device(w http.ResponseWriter, r *http.Request) {
	if r.PostFormValue("client_id") != i.ClientID {
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "invalid_client"})
		return
	}
	i.scopes.Store(r.PostFormValue("scope"))
	code := random(16)
	i.mu.Lock()
	i.devices[code] = false
	i.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{
		"device_code": code, "user_code": "WDJB-MJHT", "verification_uri": i.URL + "/activate",
		"verification_uri_complete": i.URL + "/activate?user_code=WDJB-MJHT", "expires_in": 600, "interval": 1,
	})
}

// token serves the three grants. A device code answers
// authorization_pending once, then is approved.
func (i *Issuer) token(w http.ResponseWriter, r *http.Request) {
	if i.tokenHangs.Load() {
		select {
		case <-r.Context().Done():
		case <-i.released:
		}
		return
	}
	if err := r.ParseForm(); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_request"})
		return
	}
	f := r.PostForm
	i.mu.Lock()
	defer i.mu.Unlock()
	nonce := ""
	switch f.Get("grant_type") {
	case "authorization_code":
		g, ok := i.codes[f.Get("code")]
		delete(i.codes, f.Get("code"))
		sum := sha256.Sum256([]byte(f.Get("code_verifier")))
		if !ok || g.redirectURI != f.Get("redirect_uri") || g.clientID != f.Get("client_id") ||
			base64.RawURLEncoding.EncodeToString(sum[:]) != g.challenge {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant", "error_description": "unknown code, or PKCE verifier or redirect_uri does not match"})
			return
		}
		nonce = g.nonce
	case "urn:ietf:params:oauth:grant-type:device_code":
		issued, ok := i.devices[f.Get("device_code")]
		if !ok {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "expired_token"})
			return
		}
		if !issued {
			i.devices[f.Get("device_code")] = true
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "authorization_pending"})
			return
		}
		delete(i.devices, f.Get("device_code"))
	case "refresh_token":
		if !i.refresh[f.Get("refresh_token")] {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant"})
			return
		}
		delete(i.refresh, f.Get("refresh_token")) // rotated, as providers do
	default:
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "unsupported_grant_type"})
		return
	}
	claims := i.claimsLocked(time.Now())
	if nonce != "" {
		claims["nonce"] = nonce
	}
	k := i.keys[len(i.keys)-1]
	refresh := random(16)
	i.refresh[refresh] = true
	writeJSON(w, http.StatusOK, map[string]any{
		"access_token": random(16), "token_type": "Bearer", "expires_in": int(i.TokenTTL.Seconds()),
		"refresh_token": refresh, "id_token": Sign(k.id, k.key, claims),
	})
}

// String names the provider in test output.
func (i *Issuer) String() string { return fmt.Sprintf("test issuer %s", i.URL) }

// UnknownKeyToken signs claims with a new key under a made-up key id that
// the JWKS does not hold: a forgery that names a key heddle has not seen.
func (i *Issuer) UnknownKeyToken(claims map[string]any) string {
	k := newKey()
	return Sign(k.id, k.key, claims)
}
