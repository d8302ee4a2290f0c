package identity

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/heddle-io/heddle/internal/access"
	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/store"
)

// Bounds.
const (
	// MaxCandidates bounds the configurations one issuer URL may have
	// across tenants that a sign-in considers.
	MaxCandidates = 100
	// MaxSignInIssuers bounds the public sign-in listing.
	MaxSignInIssuers = 100
	// MaxTokenBytes bounds a bearer token; real ID tokens are a few KB.
	MaxTokenBytes = 16 << 10
)

// Defaults of Config.
const (
	DefaultSkew       = time.Minute
	DefaultMinRefresh = 30 * time.Second
	DefaultMaxAge     = time.Hour
)

// signingAlgs are the algorithms a token may be signed with: asymmetric
// only, so a provider's public key can never double as an HMAC secret.
var signingAlgs = []jose.SignatureAlgorithm{
	jose.RS256, jose.RS384, jose.RS512, jose.PS256, jose.PS384, jose.PS512,
	jose.ES256, jose.ES384, jose.ES512, jose.EdDSA,
}

// Config tunes New.
type Config struct {
	// HTTPClient fetches discovery documents and key sets; nil is a client
	// with a 10 s timeout.
	HTTPClient *http.Client
	// Skew is the clock difference tolerated on exp, nbf and iat; 0 is
	// DefaultSkew.
	Skew time.Duration
	// MinRefresh is the least time between two fetches of one issuer's
	// discovery document or key set; 0 is DefaultMinRefresh.
	MinRefresh time.Duration
	// MaxAge is how long discovery and keys are trusted before they are
	// fetched again; 0 is DefaultMaxAge.
	MaxAge time.Duration
	// Now is the clock; nil is time.Now.
	Now    func() time.Time
	Logger *slog.Logger
}

// Identity verifies tokens and keeps the issuers.
type Identity struct {
	s      store.Store
	access *access.Access
	cfg    Config
	now    func() time.Time
	log    *slog.Logger

	mu        sync.Mutex
	providers map[string]*provider // by issuer URL
}

// provider is what discovery found for one issuer URL.
type provider struct {
	mu        sync.Mutex
	op        *oidc.Provider // discovery's answer: the endpoints
	verifier  *oidc.IDTokenVerifier
	keys      *keySet
	found     time.Time // when discovery last succeeded
	attempted time.Time
	err       error // the last discovery's failure, while no verifier is known
}

// New returns an Identity over the unscoped store s.
func New(s store.Store, acc *access.Access, cfg Config) *Identity {
	if cfg.HTTPClient == nil {
		// A transport of its own, not http.DefaultTransport, whose
		// connections anything else in the process may close under it
		// (httptest.Server.Close closes its idle connections, and that
		// broke requests in flight in CI).
		cfg.HTTPClient = &http.Client{Timeout: 10 * time.Second, Transport: http.DefaultTransport.(*http.Transport).Clone()}
	}
	if cfg.Skew == 0 {
		cfg.Skew = DefaultSkew
	}
	if cfg.MinRefresh == 0 {
		cfg.MinRefresh = DefaultMinRefresh
	}
	if cfg.MaxAge == 0 {
		cfg.MaxAge = DefaultMaxAge
	}
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Identity{s: s, access: acc, cfg: cfg, now: now, log: log, providers: map[string]*provider{}}
}

// AuthError is a refused token. Reason is written for the caller; it
// matches access.ErrUnauthorized.
type AuthError struct {
	Reason string
}

func (e *AuthError) Error() string { return "identity: " + e.Reason }

// Is makes every refusal an access.ErrUnauthorized.
func (e *AuthError) Is(target error) bool { return target == access.ErrUnauthorized }

// The reasons. Each says what is wrong with the token the caller holds,
// which the caller can read anyway, and nothing about heddle's
// configuration: an unknown issuer and a bad signature read the same.
var (
	ErrMalformed   = &AuthError{Reason: "the bearer token is neither an API key (hdl_...) nor a signed JWT"}
	ErrUntrusted   = &AuthError{Reason: "the token is not from an identity provider heddle trusts, or not signed by it; sign in again with `heddle login` or the dashboard"}
	ErrExpired     = &AuthError{Reason: "the token has expired; sign in again (`heddle login` refreshes it)"}
	ErrNotYetValid = &AuthError{Reason: "the token is not valid yet (nbf or iat is in the future); check this machine's clock"}
	ErrNoExpiry    = &AuthError{Reason: "the token carries no expiry (exp); heddle accepts only tokens that expire"}
	ErrAudience    = &AuthError{Reason: "the token was not issued for heddle (its audience is not heddle's client id); sign in through `heddle login` or the dashboard"}
	ErrNoTenant    = &AuthError{Reason: "your identity provider vouched for you, but no rule maps you to a heddle tenant; ask a heddle admin to add a rule for you"}
	ErrNoUserName  = &AuthError{Reason: "the token's user claim is missing or does not make a heddle user name; ask a heddle admin to pick another user claim"}
)

// ErrUnavailable: the issuer's discovery document or keys cannot be read,
// so the token can be neither accepted nor refused; the API answers 503.
var ErrUnavailable = errors.New("identity: the identity provider cannot be reached to verify the token")

// LooksLikeJWT tells a JWT (three dot-separated parts) from anything else a
// caller may send as a bearer.
func LooksLikeJWT(s string) bool { return strings.Count(s, ".") == 2 && len(s) <= MaxTokenBytes }

// Authenticate verifies raw (an ID token) and returns who it names. The
// user is added to the tenant on first sign-in.
func (id *Identity) Authenticate(ctx context.Context, raw string) (access.Principal, error) {
	p, _, err := id.authenticate(ctx, raw, "")
	return p, err
}

// authenticate is Authenticate that also returns go-oidc's view of the
// verified token, and checks its nonce when nonce is not empty (before
// anything is created).
func (id *Identity) authenticate(ctx context.Context, raw, nonce string) (access.Principal, *oidc.IDToken, error) {
	if !LooksLikeJWT(raw) {
		return access.Principal{}, nil, ErrMalformed
	}
	jws, err := jose.ParseSigned(raw, signingAlgs)
	if err != nil || len(jws.Signatures) != 1 {
		return access.Principal{}, nil, ErrMalformed
	}
	// The issuer is read before verification only to choose the keys to
	// verify with; nothing else of the payload is used until go-oidc has
	// checked the signature.
	var unverified struct {
		Issuer string `json:"iss"`
	}
	if json.Unmarshal(jws.UnsafePayloadWithoutVerification(), &unverified) != nil || unverified.Issuer == "" {
		return access.Principal{}, nil, ErrMalformed
	}
	candidates, err := id.trusting(ctx, unverified.Issuer)
	if err != nil {
		return access.Principal{}, nil, err
	}
	if len(candidates) == 0 {
		return access.Principal{}, nil, ErrUntrusted
	}
	verifier, _, err := id.discovered(ctx, unverified.Issuer)
	if err != nil {
		return access.Principal{}, nil, err
	}
	tok, err := verifier.Verify(ctx, raw)
	if err != nil {
		id.log.InfoContext(ctx, "identity: token refused", slog.String("issuer", unverified.Issuer), slog.Any("error", err))
		return access.Principal{}, nil, ErrUntrusted
	}
	if nonce != "" && tok.Nonce != nonce {
		return access.Principal{}, nil, ErrNonce
	}
	var payload json.RawMessage
	if err := tok.Claims(&payload); err != nil {
		return access.Principal{}, nil, ErrMalformed
	}
	p, err := id.admit(ctx, candidates, payload)
	return p, tok, err
}

// AuthenticateClaims returns who the claims of a token verified by API
// Gateway's JWT authorizer name. API Gateway hands them over as strings,
// lists as "[a b c]". Only the API Lambda calls it, and only with claims it
// read from the event's requestContext (never from a request header).
func (id *Identity) AuthenticateClaims(ctx context.Context, claims map[string]string) (access.Principal, error) {
	iss := claims["iss"]
	if iss == "" {
		return access.Principal{}, ErrMalformed
	}
	candidates, err := id.trusting(ctx, iss)
	if err != nil {
		return access.Principal{}, err
	}
	if len(candidates) == 0 {
		return access.Principal{}, ErrUntrusted
	}
	payload, err := json.Marshal(authorizerClaims(claims))
	if err != nil {
		return access.Principal{}, err
	}
	return id.admit(ctx, candidates, payload)
}

// authorizerClaims undoes API Gateway's flattening: numeric dates become
// numbers again, bracketed lists become lists.
func authorizerClaims(in map[string]string) map[string]any {
	out := make(map[string]any, len(in))
	for k, v := range in {
		switch {
		case k == "exp" || k == "nbf" || k == "iat":
			if n, err := strconv.ParseFloat(v, 64); err == nil {
				out[k] = n
				continue
			}
			out[k] = v
		case k == "email_verified" && (v == "true" || v == "false"):
			out[k] = v == "true"
		case strings.HasPrefix(v, "[") && strings.HasSuffix(v, "]"):
			out[k] = strings.Fields(v[1 : len(v)-1])
		default:
			out[k] = v
		}
	}
	return out
}

// admit checks the verified payload's times and audience against the
// candidates, maps it to a tenant and a role, and makes sure the user
// exists.
func (id *Identity) admit(ctx context.Context, candidates []Issuer, payload []byte) (access.Principal, error) {
	var std jwt.Claims
	if err := json.Unmarshal(payload, &std); err != nil {
		return access.Principal{}, ErrMalformed
	}
	var claims map[string]any
	if err := json.Unmarshal(payload, &claims); err != nil {
		return access.Principal{}, ErrMalformed
	}
	if std.Expiry == nil {
		return access.Principal{}, ErrNoExpiry
	}
	switch err := std.ValidateWithLeeway(jwt.Expected{Time: id.now()}, id.cfg.Skew); {
	case errors.Is(err, jwt.ErrExpired):
		return access.Principal{}, ErrExpired
	case errors.Is(err, jwt.ErrNotValidYet), errors.Is(err, jwt.ErrIssuedInTheFuture):
		return access.Principal{}, ErrNotYetValid
	case err != nil:
		return access.Principal{}, ErrMalformed
	}
	audienceMatched := false
	for _, is := range candidates {
		if !slices.Contains([]string(std.Audience), is.Audience) {
			continue
		}
		audienceMatched = true
		rule, ok := match(is, claims)
		if !ok {
			continue
		}
		return id.principal(ctx, is, rule, claims)
	}
	if !audienceMatched {
		return access.Principal{}, ErrAudience
	}
	return access.Principal{}, ErrNoTenant
}

// match returns the first rule of is that claims satisfy.
func match(is Issuer, claims map[string]any) (Rule, bool) {
	for _, r := range is.Rules {
		if r.Claim != "" && !claimHolds(claims[r.Claim], r.Value) {
			continue
		}
		if r.EmailDomain != "" {
			email, _ := claims["email"].(string)
			verified, isBool := claims["email_verified"].(bool)
			at := strings.LastIndexByte(email, '@')
			if at < 0 || !strings.EqualFold(email[at+1:], r.EmailDomain) || (isBool && !verified) {
				continue
			}
		}
		return r, true
	}
	return Rule{}, false
}

// claimHolds reports whether a claim value equals want or is a list
// holding it.
func claimHolds(v any, want string) bool {
	switch v := v.(type) {
	case string:
		return v == want
	case []any:
		for _, e := range v {
			if s, ok := e.(string); ok && s == want {
				return true
			}
		}
	case []string:
		return slices.Contains(v, want)
	case bool:
		return strconv.FormatBool(v) == want
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64) == want
	}
	return false
}

// UserName turns a user claim's value into a heddle user name: '@' becomes
// "_at_" (names cannot hold it), and what is left must be a valid name.
func UserName(value string) (string, bool) {
	name := strings.ReplaceAll(value, "@", "_at_")
	return name, domain.ValidName(name)
}

// principal is the caller the rule maps to; the user is created in the
// tenant when it is not there yet.
func (id *Identity) principal(ctx context.Context, is Issuer, r Rule, claims map[string]any) (access.Principal, error) {
	value, _ := claims[is.UserClaimOrDefault()].(string)
	name, ok := UserName(value)
	if !ok {
		return access.Principal{}, ErrNoUserName
	}
	tenant := r.Tenant
	if tenant == "" {
		tenant = is.TenantID
	}
	// A tenant's own issuer maps only into the tenant (Validate refuses
	// anything else; this holds even for an item written around it).
	if tenant != is.TenantID && is.TenantID != domain.SystemTenant {
		return access.Principal{}, ErrNoTenant
	}
	if r.Role == domain.RoleSuperadmin && tenant != domain.SystemTenant {
		return access.Principal{}, ErrNoTenant
	}
	// The tenant must be active (a deleting one takes no sign-ins), as for
	// an API key.
	if _, err := id.access.GetTenant(ctx, tenant); errors.Is(err, access.ErrNotFound) {
		return access.Principal{}, ErrNoTenant
	} else if err != nil {
		return access.Principal{}, fmt.Errorf("identity: reading tenant %s: %w", tenant, err)
	}
	// A read first: the user exists at every sign-in but the first, and a
	// create that fails is a write (on bbolt, a disk sync) per request.
	_, err := id.access.GetUser(ctx, tenant, name)
	if errors.Is(err, access.ErrNotFound) {
		_, err = id.access.CreateUser(ctx, tenant, domain.User{Name: name, Role: r.Role})
	}
	switch {
	case errors.Is(err, access.ErrNotFound):
		return access.Principal{}, ErrNoTenant // the tenant is gone or being deleted
	case err != nil && !errors.Is(err, access.ErrExists):
		return access.Principal{}, fmt.Errorf("identity: adding user %s to tenant %s: %w", name, tenant, err)
	}
	return access.Principal{Tenant: tenant, User: name, Role: r.Role, KeyID: "issuer:" + is.TenantID + "/" + is.Name}, nil
}

// discovered returns go-oidc's verifier and provider for issuerURL,
// running discovery when it has not run yet or has grown old, at most once
// per MinRefresh.
func (id *Identity) discovered(ctx context.Context, issuerURL string) (*oidc.IDTokenVerifier, *oidc.Provider, error) {
	id.mu.Lock()
	p := id.providers[issuerURL]
	if p == nil {
		p = &provider{}
		id.providers[issuerURL] = p
	}
	id.mu.Unlock()
	// One discovery per issuer at a time; other issuers are not held up.
	p.mu.Lock()
	defer p.mu.Unlock()
	now := id.now()
	due := p.verifier == nil || now.Sub(p.found) >= id.cfg.MaxAge
	if due && (p.attempted.IsZero() || now.Sub(p.attempted) >= id.cfg.MinRefresh) {
		p.attempted = now
		if err := id.discover(ctx, issuerURL, p); err != nil {
			p.err = err
			id.log.WarnContext(ctx, "identity: discovery failed", slog.String("issuer", issuerURL), slog.Any("error", err))
		} else {
			p.err, p.found = nil, now
		}
	}
	if p.verifier == nil {
		return nil, nil, fmt.Errorf("%w: %v", ErrUnavailable, p.err)
	}
	return p.verifier, p.op, nil
}

// discover reads issuerURL's discovery document with go-oidc and builds
// the verifier. The audience and the times are checked by admit, per
// candidate and with heddle's skew, so go-oidc is told to skip them.
func (id *Identity) discover(ctx context.Context, issuerURL string, p *provider) error {
	dctx, cancel := context.WithTimeout(oidc.ClientContext(ctx, id.cfg.HTTPClient), 15*time.Second)
	defer cancel()
	op, err := oidc.NewProvider(dctx, issuerURL)
	if err != nil {
		return err
	}
	var meta struct {
		JWKSURL string   `json:"jwks_uri"`
		Algs    []string `json:"id_token_signing_alg_values_supported"`
	}
	if err := op.Claims(&meta); err != nil {
		return err
	}
	if meta.JWKSURL == "" {
		return errors.New("the discovery document has no jwks_uri")
	}
	algs := []jose.SignatureAlgorithm{}
	var names []string
	for _, a := range meta.Algs {
		if slices.Contains(signingAlgs, jose.SignatureAlgorithm(a)) {
			algs = append(algs, jose.SignatureAlgorithm(a))
			names = append(names, a)
		}
	}
	if len(algs) == 0 {
		algs, names = []jose.SignatureAlgorithm{jose.RS256}, []string{"RS256"}
	}
	keys := p.keys
	if keys == nil || keys.url != meta.JWKSURL || !slices.Equal(keys.algs, algs) {
		keys = &keySet{url: meta.JWKSURL, client: id.cfg.HTTPClient, minRefresh: id.cfg.MinRefresh, maxAge: id.cfg.MaxAge, now: id.now, algs: algs}
	}
	p.keys, p.op = keys, op
	p.verifier = oidc.NewVerifier(issuerURL, keys, &oidc.Config{
		SkipClientIDCheck: true, SkipExpiryCheck: true, SupportedSigningAlgs: names, Now: id.now,
	})
	return nil
}

// jwksFetches is how many times issuerURL's keys were fetched (tests).
func (id *Identity) jwksFetches(issuerURL string) int {
	id.mu.Lock()
	p := id.providers[issuerURL]
	id.mu.Unlock()
	if p == nil {
		return 0
	}
	p.mu.Lock()
	keys := p.keys
	p.mu.Unlock()
	if keys == nil {
		return 0
	}
	return keys.fetchCount()
}
