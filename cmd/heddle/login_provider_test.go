package main

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestLoginAsksForTheIssuersScopes: heddle login asks for the scopes the
// issuer names (Dex sends groups only when asked), and says once, on
// stderr, when a rule reads a claim the token lacks.
func TestLoginAsksForTheIssuersScopes(t *testing.T) {
	e := newSignInEnv(t)
	e.idp.SetUser(map[string]any{"sub": "4", "email": "cy@example.com"})
	r := e.heddle(t, "login")
	require.Zero(t, r.code, "stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	require.Equal(t, "openid email profile offline_access", e.idp.LastScope())
	require.Contains(t, r.stdout, "signed in as cy_at_example.com (user)")
	require.Contains(t, r.stderr, "note: rule 1 reads claim groups, which the token does not carry: ask for scope groups")
	require.Equal(t, 1, strings.Count(r.stderr, "note:"))

	out := e.srv.must(e.admin, "issuers", "add", "corp", "--url", e.idp.URL, "--audience", "heddle-cli", "--scope", "groups",
		"--rule", "groups=heddle-admins,role=admin", "--rule", "emailDomain=example.com,role=user", "--replace")
	require.Contains(t, out, "scopes      openid email profile offline_access groups")
	e.idp.SetUser(map[string]any{"sub": "4", "email": "cy@example.com", "groups": []string{"heddle-admins"}})
	r = e.heddle(t, "login")
	require.Zero(t, r.code, "stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	require.Equal(t, "openid email profile offline_access groups", e.idp.LastScope())
	require.Contains(t, r.stdout, "signed in as cy_at_example.com (admin)")
	require.NotContains(t, r.stderr, "note:")

	// The first sign-in created the user and the second changed its role:
	// both are in the tenant's audit log, and the stored role is the new one.
	out = e.srv.must(e.admin, "audit", "-o", "json")
	require.Contains(t, out, `"route": "(sign-in)"`)
	require.Contains(t, out, `"previousRole": "user"`)
	out = e.srv.must(e.admin, "users", "list")
	require.Regexp(t, `cy_at_example.com\s+admin`, out)
}

// TestRefreshThatHangsUsesTheValidToken: a provider whose token endpoint
// does not answer costs a command refreshTimeout, not minutes, and the ID
// token still valid is used (the command works, stderr says why); once it
// has expired the command fails and says to sign in again.
func TestRefreshThatHangsUsesTheValidToken(t *testing.T) {
	old := refreshTimeout
	refreshTimeout = 300 * time.Millisecond
	t.Cleanup(func() { refreshTimeout = old })
	e := newSignInEnv(t)
	r := e.heddle(t, "login")
	require.Zero(t, r.code, "stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	fc := e.saved(t)
	fc.Login.Expiry = time.Now().Add(45 * time.Second) // due for renewal, still valid
	require.NoError(t, writeConfig(e.config, fc))

	e.idp.SetTokenHangs(true)
	r = e.heddle(t, "issuers", "list")
	require.Zero(t, r.code, "stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	require.Contains(t, r.stdout, "corp")
	require.Contains(t, r.stderr, "renewing your sign-in failed")
	require.Contains(t, r.stderr, "using the current sign-in, valid for another")
	require.Equal(t, fc.Login.IDToken, e.saved(t).Login.IDToken, "nothing new to keep")

	fc.Login.Expiry = time.Now().Add(-time.Second)
	require.NoError(t, writeConfig(e.config, fc))
	r = e.heddle(t, "issuers", "list")
	require.NotZero(t, r.code)
	require.Contains(t, r.stderr, "run `heddle login` again")

	e.idp.SetTokenHangs(false)
	fc.Login.Expiry = time.Now().Add(45 * time.Second)
	require.NoError(t, writeConfig(e.config, fc))
	r = e.heddle(t, "issuers", "list")
	require.Zero(t, r.code, r.stderr)
	require.NotContains(t, r.stderr, "using the current sign-in")
	require.NotEqual(t, fc.Login.IDToken, e.saved(t).Login.IDToken, "renewed once the provider answers")
}

// TestLoginWithAClientOfItsOwn: an issuer whose dashboard client is not
// the CLI's (a client per surface) signs the CLI in with --cli-client-id,
// and heddle accepts its tokens' audience.
func TestLoginWithAClientOfItsOwn(t *testing.T) {
	e := newSignInEnv(t)
	out := e.srv.must(e.admin, "issuers", "add", "corp", "--url", e.idp.URL, "--audience", "heddle-dashboard", "--cli-client-id", "heddle-cli",
		"--rule", "emailDomain=example.com,role=user", "--replace")
	require.Contains(t, out, "client id   heddle-dashboard")
	require.Contains(t, out, "cli client  heddle-cli")
	r := e.heddle(t, "login")
	require.Zero(t, r.code, "stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	require.Contains(t, r.stdout, "signed in as ada_at_example.com (user) in tenant acme")
	require.Equal(t, "heddle-cli", e.saved(t).Login.ClientID)
}
