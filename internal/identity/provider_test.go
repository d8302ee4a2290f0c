package identity_test

import (
	"bytes"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/access"
	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/identity"
)

// These tests hold what a real provider (Dex) showed heddle getting wrong:
// groups only with a scope, key-endpoint outages, rotation right after a
// fetch, and stale stored roles.

func TestScopesPerIssuer(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, err := b.id.CreateIssuer(b.ctx, "acme", identity.Issuer{Name: "dex", URL: b.idp.URL, Audience: "heddle-cli",
		Scopes: []string{"groups"}, Rules: []identity.Rule{{Role: domain.RoleUser}}})
	require.NoError(t, err)
	// Another tenant trusting the same provider and client adds its own
	// scope to the one sign-in both share.
	_, err = b.id.CreateIssuer(b.ctx, "beta", identity.Issuer{Name: "dex", URL: b.idp.URL, Audience: "heddle-cli",
		Scopes: []string{"groups", "federated:id"}, Rules: []identity.Rule{{Role: domain.RoleUser}}})
	require.NoError(t, err)
	opts, err := b.id.SignInOptions(b.ctx)
	require.NoError(t, err)
	require.Len(t, opts, 1)
	require.Equal(t, []string{"openid", "email", "profile", "offline_access", "groups", "federated:id"}, opts[0].Scopes)

	bad := identity.Issuer{Name: "a", URL: "https://idp.example.com", Audience: "x", Scopes: []string{"groups", "two words"},
		Rules: []identity.Rule{{Role: domain.RoleUser}}}
	ps := bad.Validate("acme")
	require.Len(t, ps, 1)
	require.Equal(t, "scopes[1]", ps[0].Field)
}

// TestRuleOnMissingClaimIsNoted: a rule reading a claim the token lacks is
// said once in the sign-in's answer; a refusal keeps the rules to itself
// (the notes go to the log); a token that carries the claim gets no note.
func TestRuleOnMissingClaimIsNoted(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.trust(t)
	var logs syncBuffer
	b.id = identity.New(b.db, b.acc, identity.Config{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	a, err := b.id.SignIn(b.ctx, b.idp.Token(b.idp.Claims()))
	require.NoError(t, err)
	require.Equal(t, domain.RoleUser, a.Principal.Role)
	require.Len(t, a.Notes, 1)
	require.Contains(t, a.Notes[0], "rule 1 reads claim groups, which the token does not carry: ask for scope groups")

	c := b.idp.Claims()
	c["groups"] = []string{"dev"}
	a, err = b.id.SignIn(b.ctx, b.idp.Token(c))
	require.NoError(t, err)
	require.Empty(t, a.Notes, "the claim is there, only without the value")

	c = b.idp.Claims()
	c["email"] = "eve@elsewhere.org"
	_, err = b.id.SignIn(b.ctx, b.idp.Token(c))
	require.Equal(t, identity.ErrNoTenant, err, "the refusal names no rule")
	require.Contains(t, logs.String(), "rule 1 reads claim groups")
}

// TestStoredRoleFollowsTheRules: a sign-in whose rules give another role
// than the stored one updates it (what /v1/users shows), and says so for
// the audit; the first sign-in says it created the user.
func TestStoredRoleFollowsTheRules(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.trust(t)
	a, err := b.id.SignIn(b.ctx, b.idp.Token(b.idp.Claims()))
	require.NoError(t, err)
	require.True(t, a.Created)
	require.Empty(t, a.PreviousRole)

	c := b.idp.Claims()
	c["groups"] = []string{"heddle-admins"}
	a, err = b.id.SignIn(b.ctx, b.idp.Token(c))
	require.NoError(t, err)
	require.False(t, a.Created)
	require.Equal(t, domain.RoleAdmin, a.Principal.Role)
	require.Equal(t, domain.RoleUser, a.PreviousRole)
	u, err := b.acc.GetUser(b.ctx, "acme", "alice_at_example.com")
	require.NoError(t, err)
	require.Equal(t, domain.RoleAdmin, u.Role)

	a, err = b.id.SignIn(b.ctx, b.idp.Token(c))
	require.NoError(t, err)
	require.Empty(t, a.PreviousRole, "the same role again changes nothing")
	u2, err := b.acc.GetUser(b.ctx, "acme", "alice_at_example.com")
	require.NoError(t, err)
	require.Equal(t, u.Version, u2.Version, "no write when the role is the stored one")
}

// syncBuffer is a log destination tests read while the code writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestKeyEndpointOutage: with the provider's JWKS down, a token is neither
// accepted nor refused (ErrUnavailable, with when to retry) and the cause
// is logged; tokens signed with keys already cached keep working; once the
// JWKS is back, the token is verified.
func TestKeyEndpointOutage(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.trust(t)
	var mu sync.Mutex
	clock := time.Now()
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	advance := func(d time.Duration) { mu.Lock(); defer mu.Unlock(); clock = clock.Add(d) }
	var logs syncBuffer
	id := identity.New(b.db, b.acc, identity.Config{MinRefresh: time.Minute, Now: now, Logger: slog.New(slog.NewTextHandler(&logs, nil))})

	b.idp.SetJWKSDown(true)
	token := b.idp.Token(b.idp.Claims())
	_, err := id.Authenticate(b.ctx, token)
	require.ErrorIs(t, err, identity.ErrUnavailable)
	require.NotErrorIs(t, err, access.ErrUnauthorized)
	var ue *identity.UnavailableError
	require.ErrorAs(t, err, &ue)
	require.Positive(t, ue.RetryAfter)
	require.LessOrEqual(t, ue.RetryAfter, time.Minute)
	require.Contains(t, logs.String(), "fetching the issuer's keys failed")
	require.Contains(t, logs.String(), "503")
	require.Empty(t, b.users(t, "acme"))

	b.idp.SetJWKSDown(false)
	advance(ue.RetryAfter)
	_, err = id.Authenticate(b.ctx, token)
	require.NoError(t, err, "the keys are fetched again once the retry time has passed")

	// Down again: a forgery under the cached key id is refused outright;
	// after a rotation the cached key still verifies its tokens, and a
	// token under the new key cannot be checked (503, not 401).
	b.idp.SetJWKSDown(true)
	advance(2 * time.Minute)
	_, err = id.Authenticate(b.ctx, b.idp.ForeignToken(b.idp.Claims()))
	require.ErrorIs(t, err, identity.ErrUntrusted)
	b.idp.Rotate(true)
	_, err = id.Authenticate(b.ctx, token)
	require.NoError(t, err)
	_, err = id.Authenticate(b.ctx, b.idp.Token(b.idp.Claims()))
	require.ErrorIs(t, err, identity.ErrUnavailable)
}

// TestCLIClientAudience: an issuer with a client of its own for the CLI
// accepts tokens for either client, and no other audience.
func TestCLIClientAudience(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, err := b.id.CreateIssuer(b.ctx, "acme", identity.Issuer{Name: "dex", URL: b.idp.URL, Audience: "heddle-dashboard",
		CLIClientID: "heddle-cli", Rules: []identity.Rule{{Role: domain.RoleUser}}})
	require.NoError(t, err)
	for aud, want := range map[string]error{"heddle-cli": nil, "heddle-dashboard": nil, "other": identity.ErrAudience} {
		c := b.idp.Claims()
		c["aud"] = aud
		_, err := b.id.Authenticate(b.ctx, b.idp.Token(c))
		if want == nil {
			require.NoError(t, err, aud)
		} else {
			require.ErrorIs(t, err, want, aud)
		}
	}
	opts, err := b.id.SignInOptions(b.ctx)
	require.NoError(t, err)
	require.Equal(t, "heddle-dashboard", opts[0].ClientID)
	require.Equal(t, "heddle-cli", opts[0].CLIClientID)
}
