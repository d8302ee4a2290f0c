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
// The error returned is an *UnavailableError, which matches it.
var ErrUnavailable = errors.New("identity: the identity provider cannot be reached to verify the token")

// UnavailableError says which provider could not be reached, why, and
// when heddle will try it again (the API's Retry-After).
type UnavailableError struct {
	Issuer     string
	RetryAfter time.Duration
	Err        error
}

func (e *UnavailableError) Error() string {
	return fmt.Sprintf("%v (%s): %v", ErrUnavailable, e.Issuer, e.Err)
}

func (e *UnavailableError) Is(target error) bool { return target == ErrUnavailable }
func (e *UnavailableError) Unwrap() error        { return e.Err }

// Admission is what a verified token admits: the principal, whether its
// user was created or had its role changed by this sign-in (the API
// audits both), and notes for the person signing in.
type Admission struct {
	Principal access.Principal
	// Created: the user did not exist and was added with the rule's role.
	Created bool
	// PreviousRole is the stored role the rules replaced, when they gave
	// another one; empty otherwise.
	PreviousRole domain.Role
	// Notes say what may have kept a rule from matching: a rule reads a
	// claim the token does not carry.
	Notes []string
}

// LooksLikeJWT tells a JWT (three dot-separated parts) from anything else a
// caller may send as a bearer.
func LooksLikeJWT(s string) bool { return strings.Count(s, ".") == 2 && len(s) <= MaxTokenBytes }

// Authenticate verifies raw (an ID token) and returns who it names. The
// user is added to the tenant on first sign-in.
func (id *Identity) Authenticate(ctx context.Context, raw string) (access.Principal, error) {
	a, err := id.SignIn(ctx, raw)
	return a.Principal, err
}

// SignIn is Authenticate with what the sign-in changed and its notes.
func (id *Identity) SignIn(ctx context.Context, raw string) (Admission, error) {
	a, _, err := id.authenticate(ctx, raw, "")
	return a, err
}

// authenticate is Authenticate that also returns go-oidc's view of the
// verified token, and checks its nonce when nonce is not empty (before
// anything is created).
func (id *Identity) authenticate(ctx context.Context, raw, nonce string) (Admission, *oidc.IDToken, error) {
	if !LooksLikeJWT(raw) {
		return Admission{}, nil, ErrMalformed
	}
	jws, err := jose.ParseSigned(raw, signingAlgs)
	if err != nil || len(jws.Signatures) != 1 {
		return Admission{}, nil, ErrMalformed
	}
	// The issuer is read before verification only to choose the keys to
	// verify with; nothing else of the payload is used until go-oidc has
	// checked the signature.
	var unverified struct {
		Issuer string `json:"iss"`
	}
	if json.Unmarshal(jws.UnsafePayloadWithoutVerification(), &unverified) != nil || unverified.Issuer == "" {
		return Admission{}, nil, ErrMalformed
	}
	candidates, err := id.trusting(ctx, unverified.Issuer)
	if err != nil {
		return Admission{}, nil, err
	}
	if len(candidates) == 0 {
		return Admission{}, nil, ErrUntrusted
	}
	verifier, _, err := id.discovered(ctx, unverified.Issuer)
	if err != nil {
		return Admission{}, nil, err
	}
	outage := &keyOutage{}
	tok, err := verifier.Verify(context.WithValue(ctx, outageKey{}, outage), raw)
	if err != nil {
		if outage.err != nil {
			return Admission{}, nil, &UnavailableError{Issuer: unverified.Issuer, RetryAfter: outage.retryAfter, Err: outage.err}
		}
		id.log.InfoContext(ctx, "identity: token refused", slog.String("issuer", unverified.Issuer), slog.Any("error", err))
		return Admission{}, nil, ErrUntrusted
	}
	if nonce != "" && tok.Nonce != nonce {
		return Admission{}, nil, ErrNonce
	}
	var payload json.RawMessage
	if err := tok.Claims(&payload); err != nil {
		return Admission{}, nil, ErrMalformed
	}
	a, err := id.admit(ctx, candidates, payload)
	return a, tok, err
}

// AuthenticateClaims returns who the claims of a token verified by API
// Gateway's JWT authorizer name. API Gateway hands them over as strings,
// lists as "[a b c]". Only the API Lambda calls it, and only with claims it
// read from the event's requestContext (never from a request header).
func (id *Identity) AuthenticateClaims(ctx context.Context, claims map[string]string) (access.Principal, error) {
	a, err := id.SignInClaims(ctx, claims)
	return a.Principal, err
}

// SignInClaims is AuthenticateClaims with what the sign-in changed.
func (id *Identity) SignInClaims(ctx context.Context, claims map[string]string) (Admission, error) {
	iss := claims["iss"]
	if iss == "" {
		return Admission{}, ErrMalformed
	}
	candidates, err := id.trusting(ctx, iss)
	if err != nil {
		return Admission{}, err
	}
	if len(candidates) == 0 {
		return Admission{}, ErrUntrusted
	}
	payload, err := json.Marshal(authorizerClaims(claims))
	if err != nil {
		return Admission{}, err
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
func (id *Identity) admit(ctx context.Context, candidates []Issuer, payload []byte) (Admission, error) {
	var std jwt.Claims
	if err := json.Unmarshal(payload, &std); err != nil {
		return Admission{}, ErrMalformed
	}
	var claims map[string]any
	if err := json.Unmarshal(payload, &claims); err != nil {
		return Admission{}, ErrMalformed
	}
	if std.Expiry == nil {
		return Admission{}, ErrNoExpiry
	}
	switch err := std.ValidateWithLeeway(jwt.Expected{Time: id.now()}, id.cfg.Skew); {
	case errors.Is(err, jwt.ErrExpired):
		return Admission{}, ErrExpired
	case errors.Is(err, jwt.ErrNotValidYet), errors.Is(err, jwt.ErrIssuedInTheFuture):
		return Admission{}, ErrNotYetValid
	case err != nil:
		return Admission{}, ErrMalformed
	}
	audienceMatched := false
	var notes []string
	for _, is := range candidates {
		if !is.acceptsAudience(std.Audience) {
			continue
		}
		audienceMatched = true
		rule, at, ok := match(is, claims)
		notes = append(notes, missingClaims(is, claims, at)...)
		if !ok {
			continue
		}
		a, err := id.principal(ctx, is, rule, claims)
		a.Notes = notes
		return a, err
	}
	if !audienceMatched {
		return Admission{}, ErrAudience
	}
	if len(notes) > 0 {
		// The notes name the rules' claims, which a refusal keeps to
		// itself: the admin finds them in the log.
		id.log.InfoContext(ctx, "identity: no rule matched", slog.String("issuer", candidates[0].URL), slog.Any("notes", notes))
	}
	return Admission{}, ErrNoTenant
}

// missingClaims notes each claim that a rule of is before the one at
// index upto (the matching rule, or len(Rules) when none matched) reads
// and the token does not carry, once per claim: such a rule could not
// match, which is seldom what the admin meant (Dex sends groups only when
// the groups scope is asked for).
func missingClaims(is Issuer, claims map[string]any, upto int) []string {
	var notes []string
	seen := map[string]bool{}
	for i, r := range is.Rules[:upto] {
		if r.Claim == "" || seen[r.Claim] {
			continue
		}
		if _, ok := claims[r.Claim]; ok {
			continue
		}
		seen[r.Claim] = true
		if slices.Contains(is.Scopes, r.Claim) {
			notes = append(notes, fmt.Sprintf("rule %d reads claim %s, which the token does not carry although scope %s was asked for: the provider sends none (the user may be in no group)", i+1, r.Claim, r.Claim))
			continue
		}
		notes = append(notes, fmt.Sprintf("rule %d reads claim %s, which the token does not carry: ask for scope %s (the issuer's scopes), or have the provider put %s in ID tokens", i+1, r.Claim, r.Claim, r.Claim))
	}
	return notes
}

// match returns the first rule of is that claims satisfy, and its index
// (len(is.Rules) when none does).
func match(is Issuer, claims map[string]any) (Rule, int, bool) {
	for i, r := range is.Rules {
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
		return r, i, true
	}
	return Rule{}, len(is.Rules), false
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
// tenant when it is not there yet, and given the rule's role when the
// stored one differs (the role is the rules' at every sign-in, and what
// /v1/users shows and the user's API keys carry must not go stale).
func (id *Identity) principal(ctx context.Context, is Issuer, r Rule, claims map[string]any) (Admission, error) {
	value, _ := claims[is.UserClaimOrDefault()].(string)
	name, ok := UserName(value)
	if !ok {
		return Admission{}, ErrNoUserName
	}
	tenant := r.Tenant
	if tenant == "" {
		tenant = is.TenantID
	}
	// A tenant's own issuer maps only into the tenant (Validate refuses
	// anything else; this holds even for an item written around it).
	if tenant != is.TenantID && is.TenantID != domain.SystemTenant {
		return Admission{}, ErrNoTenant
	}
	if r.Role == domain.RoleSuperadmin && tenant != domain.SystemTenant {
		return Admission{}, ErrNoTenant
	}
	// The tenant must be active (a deleting one takes no sign-ins), as for
	// an API key.
	if _, err := id.access.GetTenant(ctx, tenant); errors.Is(err, access.ErrNotFound) {
		return Admission{}, ErrNoTenant
	} else if err != nil {
		return Admission{}, fmt.Errorf("identity: reading tenant %s: %w", tenant, err)
	}
	a := Admission{Principal: access.Principal{Tenant: tenant, User: name, Role: r.Role, KeyID: "issuer:" + is.TenantID + "/" + is.Name}}
	// A read first: the user exists at every sign-in but the first, and a
	// create that fails is a write (on bbolt, a disk sync) per request.
	u, err := id.access.GetUser(ctx, tenant, name)
	switch {
	case errors.Is(err, access.ErrNotFound):
		_, err = id.access.CreateUser(ctx, tenant, domain.User{Name: name, Role: r.Role})
		a.Created = err == nil
	case err == nil && u.Role != r.Role:
		_, err = id.access.SetRole(ctx, tenant, name, r.Role, u.Version)
		if err == nil {
			a.PreviousRole = u.Role
		} else if errors.Is(err, access.ErrConflict) {
			// Another request changed the user meanwhile (most likely a
			// sign-in doing the same): the next one sees its role.
			err = nil
		}
	}
	switch {
	case errors.Is(err, access.ErrNotFound):
		return Admission{}, ErrNoTenant // the tenant is gone or being deleted
	case err != nil && !errors.Is(err, access.ErrExists):
		return Admission{}, fmt.Errorf("identity: adding user %s to tenant %s: %w", name, tenant, err)
	}
	return a, nil
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
	wait := id.cfg.MinRefresh
	if p.err != nil {
		wait = min(wait, retryFailed)
	}
	if due && (p.attempted.IsZero() || now.Sub(p.attempted) >= wait) {
		p.attempted = now
		if err := id.discover(ctx, issuerURL, p); err != nil {
			p.err = err
			id.log.WarnContext(ctx, "identity: discovery failed", slog.String("issuer", issuerURL), slog.Any("error", err))
		} else {
			p.err, p.found = nil, now
		}
	}
	if p.verifier == nil {
		retry := min(id.cfg.MinRefresh, retryFailed) - now.Sub(p.attempted)
		return nil, nil, &UnavailableError{Issuer: issuerURL, RetryAfter: max(retry, time.Second), Err: p.err}
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
		keys = &keySet{issuer: issuerURL, url: meta.JWKSURL, client: id.cfg.HTTPClient, minRefresh: id.cfg.MinRefresh, maxAge: id.cfg.MaxAge, now: id.now, algs: algs, log: id.log}
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
