package identity_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/access"
	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/identity"
	"github.com/heddle-io/heddle/internal/identity/identitytest"
	"github.com/heddle-io/heddle/internal/store"
	"github.com/heddle-io/heddle/internal/store/boltstore"
	"github.com/heddle-io/heddle/internal/store/dynamotest"
)

type bundle struct {
	ctx context.Context
	db  store.Store
	acc *access.Access
	id  *identity.Identity
	idp *identitytest.Issuer
}

func setup(t testing.TB) *bundle {
	t.Helper()
	db, err := boltstore.Open(filepath.Join(t.TempDir(), "heddle.db"), boltstore.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	return setupOn(t, db)
}

func setupOn(t testing.TB, db store.Store) *bundle {
	t.Helper()
	ctx := context.Background()
	acc := access.New(db)
	_, err := acc.Bootstrap(ctx, "")
	require.NoError(t, err)
	for _, tenant := range []string{"acme", "beta"} {
		_, _, err = acc.CreateTenant(ctx, domain.Tenant{ID: tenant, Workers: 1, MaxClusters: 1, MaxNodes: 1}, "")
		require.NoError(t, err)
	}
	idp := identitytest.New(t, "heddle-cli")
	// A short MinRefresh keeps the rotation test quick; the bound it sets
	// is still checked (several forged tokens, at most one fetch).
	return &bundle{ctx: ctx, db: db, acc: acc, idp: idp, id: identity.New(db, acc, identity.Config{MinRefresh: time.Hour})}
}

// trust configures the test issuer for acme: its engineers are users, the
// heddle-admins group makes admins.
func (b *bundle) trust(t testing.TB) identity.Issuer {
	t.Helper()
	is, err := b.id.CreateIssuer(b.ctx, "acme", identity.Issuer{Name: "corp", URL: b.idp.URL, Audience: "heddle-cli",
		Rules: []identity.Rule{
			{Claim: "groups", Value: "heddle-admins", Role: domain.RoleAdmin},
			{EmailDomain: "example.com", Role: domain.RoleUser},
		}})
	require.NoError(t, err)
	return is
}

func (b *bundle) users(t *testing.T, tenant string) []string {
	t.Helper()
	us, _, err := b.acc.ListUsers(b.ctx, tenant, 100, "")
	require.NoError(t, err)
	var names []string
	for _, u := range us {
		names = append(names, u.Name)
	}
	return names
}

func TestSignInAddsTheUserOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.trust(t)
	require.Empty(t, b.users(t, "acme"))
	p, err := b.id.Authenticate(b.ctx, b.idp.Token(b.idp.Claims()))
	require.NoError(t, err)
	require.Equal(t, access.Principal{Tenant: "acme", User: "alice_at_example.com", Role: domain.RoleUser, KeyID: "issuer:acme/corp"}, p)
	require.Equal(t, []string{"alice_at_example.com"}, b.users(t, "acme"))

	again, err := b.id.Authenticate(b.ctx, b.idp.Token(b.idp.Claims()))
	require.NoError(t, err)
	require.Equal(t, p, again)
	require.Equal(t, []string{"alice_at_example.com"}, b.users(t, "acme"))
}

func TestClaimMapping(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.trust(t)
	// The superadmin's issuer maps the ops group into beta, and its
	// platform group to superadmin.
	_, err := b.id.CreateIssuer(b.ctx, domain.SystemTenant, identity.Issuer{Name: "all", URL: b.idp.URL, Audience: "heddle-dashboard",
		UserClaim: "preferred_username",
		Rules: []identity.Rule{
			{Claim: "groups", Value: "platform", Tenant: domain.SystemTenant, Role: domain.RoleSuperadmin},
			{Claim: "groups", Value: "ops", Tenant: "beta", Role: domain.RoleAdmin},
		}})
	require.NoError(t, err)

	cases := []struct {
		name   string
		claims map[string]any
		want   access.Principal
		err    error
	}{
		{"group makes an admin", map[string]any{"groups": []string{"dev", "heddle-admins"}},
			access.Principal{Tenant: "acme", User: "alice_at_example.com", Role: domain.RoleAdmin, KeyID: "issuer:acme/corp"}, nil},
		{"email domain makes a user", map[string]any{},
			access.Principal{Tenant: "acme", User: "alice_at_example.com", Role: domain.RoleUser, KeyID: "issuer:acme/corp"}, nil},
		{"the domain compares without case", map[string]any{"email": "Bob@EXAMPLE.com"},
			access.Principal{Tenant: "acme", User: "Bob_at_EXAMPLE.com", Role: domain.RoleUser, KeyID: "issuer:acme/corp"}, nil},
		{"an unverified email matches no domain", map[string]any{"email_verified": false}, access.Principal{}, identity.ErrNoTenant},
		{"another domain", map[string]any{"email": "mallory@example.org"}, access.Principal{}, identity.ErrNoTenant},
		{"a look-alike domain", map[string]any{"email": "mallory@evilexample.com"}, access.Principal{}, identity.ErrNoTenant},
		{"the system issuer's audience maps ops into beta", map[string]any{"aud": "heddle-dashboard", "groups": []string{"ops"}, "preferred_username": "olga"},
			access.Principal{Tenant: "beta", User: "olga", Role: domain.RoleAdmin, KeyID: "issuer:system/all"}, nil},
		{"and platform to superadmin", map[string]any{"aud": "heddle-dashboard", "groups": []string{"platform"}, "preferred_username": "pat"},
			access.Principal{Tenant: domain.SystemTenant, User: "pat", Role: domain.RoleSuperadmin, KeyID: "issuer:system/all"}, nil},
		{"a user claim that makes no name", map[string]any{"aud": "heddle-dashboard", "groups": []string{"ops"}, "preferred_username": "no spaces allowed"},
			access.Principal{}, identity.ErrNoUserName},
	}
	for _, c := range cases {
		claims := b.idp.Claims()
		for k, v := range c.claims {
			claims[k] = v
		}
		p, err := b.id.Authenticate(b.ctx, b.idp.Token(claims))
		if c.err != nil {
			require.ErrorIs(t, err, c.err, c.name)
			continue
		}
		require.NoError(t, err, c.name)
		require.Equal(t, c.want, p, c.name)
	}
}

// TestBadTokens: each token the issue lists is refused with its own
// reason, matches access.ErrUnauthorized, and creates no user.
func TestBadTokens(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.trust(t)
	stranger := identitytest.New(t, "heddle-cli")
	now := time.Now()
	with := func(changes map[string]any) map[string]any {
		c := b.idp.Claims()
		for k, v := range changes {
			c[k] = v
		}
		return c
	}
	cases := []struct {
		name  string
		token string
		err   error
	}{
		{"expired", b.idp.Token(with(map[string]any{"exp": now.Add(-2 * time.Minute).Unix()})), identity.ErrExpired},
		{"not yet valid", b.idp.Token(with(map[string]any{"nbf": now.Add(5 * time.Minute).Unix()})), identity.ErrNotYetValid},
		{"issued in the future", b.idp.Token(with(map[string]any{"iat": now.Add(5 * time.Minute).Unix()})), identity.ErrNotYetValid},
		{"without expiry", b.idp.Token(with(map[string]any{"exp": nil})), identity.ErrNoExpiry},
		{"wrongly signed", b.idp.ForeignToken(b.idp.Claims()), identity.ErrUntrusted},
		{"wrong audience", b.idp.Token(with(map[string]any{"aud": "some-other-app"})), identity.ErrAudience},
		{"unknown issuer", stranger.Token(stranger.Claims()), identity.ErrUntrusted},
		{"an unknown issuer claiming a trusted iss", stranger.Token(with(nil)), identity.ErrUntrusted},
		{"maps to no tenant", b.idp.Token(with(map[string]any{"email": "eve@elsewhere.org"})), identity.ErrNoTenant},
		{"not a JWT", "hello", identity.ErrMalformed},
		{"a JWT without a signature", "eyJhbGciOiJub25lIn0.eyJpc3MiOiJ4In0.", identity.ErrMalformed},
		{"an HMAC token", "eyJhbGciOiJIUzI1NiJ9.eyJpc3MiOiJ4In0.c2lnbmF0dXJl", identity.ErrMalformed},
	}
	for _, c := range cases {
		_, err := b.id.Authenticate(b.ctx, c.token)
		require.ErrorIs(t, err, c.err, c.name)
		require.ErrorIs(t, err, access.ErrUnauthorized, c.name)
	}
	require.Empty(t, b.users(t, "acme"), "no refused token creates a user")
}

func TestClockSkewIsSmall(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.trust(t)
	now := time.Now()
	c := b.idp.Claims()
	c["exp"], c["nbf"] = now.Add(-20*time.Second).Unix(), now.Add(20*time.Second).Unix()
	_, err := b.id.Authenticate(b.ctx, b.idp.Token(c))
	require.NoError(t, err, "20 s either way is within the skew")
	c["exp"] = now.Add(-90 * time.Second).Unix()
	_, err = b.id.Authenticate(b.ctx, b.idp.Token(c))
	require.ErrorIs(t, err, identity.ErrExpired)
}

// TestKeyRotation: a token signed by a key published after the JWKS was
// cached is verified after one early refetch, even right after a fetch;
// forged tokens with unknown keys never make heddle fetch more than that
// one early time and once per MinRefresh.
func TestKeyRotation(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.trust(t)
	var mu sync.Mutex
	clock := time.Now()
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	advance := func(d time.Duration) { mu.Lock(); defer mu.Unlock(); clock = clock.Add(d) }
	id := identity.New(b.db, b.acc, identity.Config{MinRefresh: time.Minute, Now: now})

	oldToken := b.idp.Token(b.idp.Claims())
	_, err := id.Authenticate(b.ctx, oldToken)
	require.NoError(t, err)
	require.EqualValues(t, 1, b.idp.JWKSRequests())

	b.idp.Rotate(true)
	advance(time.Second)
	newToken := b.idp.Token(b.idp.Claims())
	_, err = id.Authenticate(b.ctx, newToken)
	require.NoError(t, err, "a key id the cache lacks fetches the keys early, within MinRefresh of the last fetch")
	require.EqualValues(t, 2, b.idp.JWKSRequests())
	_, err = id.Authenticate(b.ctx, oldToken)
	require.NoError(t, err, "the old key is still published (overlap), so its tokens still verify")

	for range 5 {
		_, err = id.Authenticate(b.ctx, b.idp.ForeignToken(b.idp.Claims()))
		require.ErrorIs(t, err, identity.ErrUntrusted)
		_, err = id.Authenticate(b.ctx, b.idp.UnknownKeyToken(b.idp.Claims()))
		require.ErrorIs(t, err, identity.ErrUntrusted)
	}
	require.EqualValues(t, 2, b.idp.JWKSRequests(), "forgeries do not make heddle fetch the keys again within MinRefresh")

	advance(61 * time.Second)
	for range 5 {
		_, err = id.Authenticate(b.ctx, b.idp.UnknownKeyToken(b.idp.Claims()))
		require.ErrorIs(t, err, identity.ErrUntrusted)
	}
	require.EqualValues(t, 4, b.idp.JWKSRequests(), "a minute later: one early fetch and one bounded fetch, then none")

	b.idp.Rotate(false)
	advance(61 * time.Second)
	_, err = id.Authenticate(b.ctx, b.idp.Token(b.idp.Claims()))
	require.NoError(t, err)
	_, err = id.Authenticate(b.ctx, oldToken)
	require.ErrorIs(t, err, identity.ErrUntrusted, "a key the provider dropped verifies nothing once the keys are refetched")
}

func TestUnreachableIssuerIsUnavailable(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, err := b.id.CreateIssuer(b.ctx, "acme", identity.Issuer{Name: "gone", URL: "http://127.0.0.1:1", Audience: "a",
		Rules: []identity.Rule{{Role: domain.RoleUser}}})
	require.NoError(t, err)
	c := b.idp.Claims()
	c["iss"] = "http://127.0.0.1:1"
	_, err = b.id.Authenticate(b.ctx, b.idp.Token(c))
	require.ErrorIs(t, err, identity.ErrUnavailable)
	require.NotErrorIs(t, err, access.ErrUnauthorized)
}

func TestAuthorizerClaims(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.trust(t)
	exp := fmt.Sprint(time.Now().Add(time.Minute).Unix())
	claims := map[string]string{"iss": b.idp.URL, "aud": "heddle-cli", "exp": exp, "iat": fmt.Sprint(time.Now().Unix()),
		"email": "carol@example.com", "email_verified": "true", "groups": "[dev heddle-admins]"}
	p, err := b.id.AuthenticateClaims(b.ctx, claims)
	require.NoError(t, err)
	require.Equal(t, access.Principal{Tenant: "acme", User: "carol_at_example.com", Role: domain.RoleAdmin, KeyID: "issuer:acme/corp"}, p)

	claims["iss"] = "https://not-trusted.example.com"
	_, err = b.id.AuthenticateClaims(b.ctx, claims)
	require.ErrorIs(t, err, identity.ErrUntrusted)
	claims["iss"], claims["exp"] = b.idp.URL, fmt.Sprint(time.Now().Add(-time.Hour).Unix())
	_, err = b.id.AuthenticateClaims(b.ctx, claims)
	require.ErrorIs(t, err, identity.ErrExpired)
}

func TestIssuerCRUDOnBolt(t *testing.T) {
	t.Parallel()
	checkIssuerCRUD(t, setup(t))
}

func TestIssuerCRUDOnDynamoDB(t *testing.T) {
	t.Parallel()
	checkIssuerCRUD(t, setupOn(t, dynamotest.Store(t, "heddle-identity")))
}

// checkIssuerCRUD: issuers are kept per tenant; one tenant neither sees
// nor removes another's, and a tenant's issuer maps only into its tenant.
func checkIssuerCRUD(t *testing.T, b *bundle) {
	is := b.trust(t)
	require.Equal(t, "acme", is.TenantID)
	require.False(t, is.CreatedAt.IsZero())

	_, err := b.id.CreateIssuer(b.ctx, "acme", identity.Issuer{Name: "corp", URL: b.idp.URL, Audience: "x", Rules: []identity.Rule{{Role: domain.RoleUser}}})
	require.ErrorIs(t, err, identity.ErrExists)

	list, next, err := b.id.ListIssuers(b.ctx, "acme", 10, "")
	require.NoError(t, err)
	require.Empty(t, next)
	require.Len(t, list, 1)
	list, _, err = b.id.ListIssuers(b.ctx, "beta", 10, "")
	require.NoError(t, err)
	require.Empty(t, list, "beta sees none of acme's issuers")
	_, err = b.id.GetIssuer(b.ctx, "beta", "corp")
	require.ErrorIs(t, err, identity.ErrNotFound)
	require.ErrorIs(t, b.id.DeleteIssuer(b.ctx, "beta", "corp"), identity.ErrNotFound)

	_, err = b.id.CreateIssuer(b.ctx, "beta", identity.Issuer{Name: "sneaky", URL: b.idp.URL, Audience: "heddle-cli",
		Rules: []identity.Rule{{Tenant: "acme", Role: domain.RoleAdmin}, {Role: domain.RoleSuperadmin}}})
	var ps domain.Problems
	require.ErrorAs(t, err, &ps)
	require.Len(t, ps, 2)
	require.Equal(t, "rules[0].tenant", ps[0].Field)
	require.Equal(t, "rules[1].role", ps[1].Field)

	require.NoError(t, b.id.DeleteIssuer(b.ctx, "acme", "corp"))
	_, err = b.id.Authenticate(b.ctx, b.idp.Token(b.idp.Claims()))
	require.ErrorIs(t, err, identity.ErrUntrusted, "a removed issuer is trusted no more")
}

func TestValidate(t *testing.T) {
	t.Parallel()
	cases := map[string]identity.Issuer{
		"url":                  {Name: "a", URL: "http://idp.example.com", Audience: "x", Rules: []identity.Rule{{Role: domain.RoleUser}}},
		"name":                 {Name: "no spaces", URL: "https://idp.example.com", Audience: "x", Rules: []identity.Rule{{Role: domain.RoleUser}}},
		"audience":             {Name: "a", URL: "https://idp.example.com", Rules: []identity.Rule{{Role: domain.RoleUser}}},
		"rules":                {Name: "a", URL: "https://idp.example.com", Audience: "x"},
		"rules[0].claim":       {Name: "a", URL: "https://idp.example.com", Audience: "x", Rules: []identity.Rule{{Claim: "groups", Role: domain.RoleUser}}},
		"rules[0].emailDomain": {Name: "a", URL: "https://idp.example.com", Audience: "x", Rules: []identity.Rule{{EmailDomain: "@x.com", Role: domain.RoleUser}}},
		"rules[0].role":        {Name: "a", URL: "https://idp.example.com", Audience: "x", Rules: []identity.Rule{{Role: "boss"}}},
	}
	for field, is := range cases {
		ps := is.Validate("acme")
		require.Len(t, ps, 1, field)
		require.Equal(t, field, ps[0].Field)
	}
	ok := identity.Issuer{Name: "a", URL: "http://localhost:5556/dex", Audience: "x", Rules: []identity.Rule{{Role: domain.RoleUser}}}
	require.Empty(t, ok.Validate("acme"), "http is fine on a loopback host")
}

func TestDeletedTenantTakesNoSignIns(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, err := b.id.CreateIssuer(b.ctx, domain.SystemTenant, identity.Issuer{Name: "all", URL: b.idp.URL, Audience: "heddle-cli",
		Rules: []identity.Rule{{Tenant: "beta", Role: domain.RoleUser}}})
	require.NoError(t, err)
	_, err = b.id.Authenticate(b.ctx, b.idp.Token(b.idp.Claims()))
	require.NoError(t, err)
	require.NoError(t, b.acc.DeleteTenant(b.ctx, "beta", func(context.Context, string) error { return nil }))
	_, err = b.id.Authenticate(b.ctx, b.idp.Token(b.idp.Claims()))
	require.ErrorIs(t, err, identity.ErrNoTenant, "the user existed, but the tenant is gone")
}

func TestSignInOptions(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.trust(t)
	_, err := b.id.CreateIssuer(b.ctx, "beta", identity.Issuer{Name: "same", URL: b.idp.URL, Audience: "heddle-cli", Rules: []identity.Rule{{Role: domain.RoleUser}}})
	require.NoError(t, err)
	_, err = b.id.CreateIssuer(b.ctx, "beta", identity.Issuer{Name: "gone", URL: "http://127.0.0.1:1", Audience: "x", DisplayName: "Gone",
		Rules: []identity.Rule{{Role: domain.RoleUser}}})
	require.NoError(t, err)
	opts, err := b.id.SignInOptions(b.ctx)
	require.NoError(t, err)
	require.ElementsMatch(t, []identity.SignInOption{
		{Label: "127.0.0.1:" + b.idp.URL[len("http://127.0.0.1:"):], Issuer: b.idp.URL, ClientID: "heddle-cli", Scopes: identity.DefaultScopes, AuthorizationEndpoint: b.idp.URL + "/authorize"},
		{Label: "Gone", Issuer: "http://127.0.0.1:1", ClientID: "x", Scopes: identity.DefaultScopes},
	}, opts, "one option per issuer and client id, whatever the tenants; an unreachable one without an endpoint")
}
