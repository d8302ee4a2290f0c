package api

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/ratelimit"
)

// TestRefusedTokensCountAsAuthFailures: forged tokens are guesses like bad
// API keys, and one source's failures of both kinds share its limit.
func TestRefusedTokensCountAsAuthFailures(t *testing.T) {
	t.Parallel()
	b := setupIdentityWith(t, &Throttle{Limiter: ratelimit.NewMemory(), AuthFailures: ratelimit.Limit{Requests: 3, Window: time.Minute}})
	status, body := b.do(t, b.acmeKey, http.MethodPost, "/v1/issuers", b.issuerBody())
	require.Equal(t, http.StatusCreated, status, "%v", body)
	for i := range 2 {
		status, _ = b.do(t, b.idp.ForeignToken(b.idp.Claims()), http.MethodGet, "/v1/me", nil)
		require.Equal(t, http.StatusUnauthorized, status, "forgery %d", i)
	}
	status, _ = b.do(t, "hdl_not-a-key", http.MethodGet, "/v1/me", nil)
	require.Equal(t, http.StatusUnauthorized, status, "the third failure, a key, is still answered")
	resp := b.raw(t, b.idp.ForeignToken(b.idp.Claims()), http.MethodGet, "/v1/me", nil)
	resp.Body.Close()
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode, "the fourth is over the limit")
	require.NotEmpty(t, resp.Header.Get("Retry-After"))
	status, _ = b.do(t, b.idp.Token(b.idp.Claims()), http.MethodGet, "/v1/me", nil)
	require.Equal(t, http.StatusTooManyRequests, status, "the source is refused until the window ends, a good token too")
}

// TestKeyOutageAnswers503: a provider whose key set cannot be read makes a
// token's request 503 with Retry-After, not a 401 telling the person to
// sign in again; it does not count as a failed authentication.
func TestKeyOutageAnswers503(t *testing.T) {
	t.Parallel()
	b := setupIdentityWith(t, &Throttle{Limiter: ratelimit.NewMemory(), AuthFailures: ratelimit.Limit{Requests: 1, Window: time.Minute}})
	status, body := b.do(t, b.acmeKey, http.MethodPost, "/v1/issuers", b.issuerBody())
	require.Equal(t, http.StatusCreated, status, "%v", body)
	b.idp.SetJWKSDown(true)
	for range 2 {
		resp := b.raw(t, b.idp.Token(b.idp.Claims()), http.MethodGet, "/v1/me", nil)
		resp.Body.Close()
		require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
		after, err := strconv.Atoi(resp.Header.Get("Retry-After"))
		require.NoError(t, err, "Retry-After is seconds")
		require.Positive(t, after)
	}
}

// TestSignInChangesAreAudited: the user a token's first request creates,
// and a role the rules change, are in the tenant's audit log whatever the
// request (a GET, as heddle login's /v1/me); /v1/users shows the role the
// rules give now; /v1/me notes a rule on a claim the token lacks.
func TestSignInChangesAreAudited(t *testing.T) {
	t.Parallel()
	b := setupIdentity(t)
	status, body := b.do(t, b.acmeKey, http.MethodPost, "/v1/issuers", b.issuerBody())
	require.Equal(t, http.StatusCreated, status, "%v", body)

	status, body = b.do(t, b.idp.Token(b.idp.Claims()), http.MethodGet, "/v1/me", nil)
	require.Equal(t, http.StatusOK, status, "%v", body)
	require.Equal(t, "user", body["role"])
	require.Len(t, body["notes"], 1)
	require.Contains(t, body["notes"].([]any)[0], "rule 1 reads claim groups, which the token does not carry: ask for scope groups")

	c := b.idp.Claims()
	c["groups"] = []string{"heddle-admins"}
	status, body = b.do(t, b.idp.Token(c), http.MethodGet, "/v1/me", nil)
	require.Equal(t, http.StatusOK, status, "%v", body)
	require.Equal(t, "admin", body["role"])
	require.Nil(t, body["notes"])
	status, body = b.do(t, b.acmeKey, http.MethodGet, "/v1/users/alice_at_example.com", nil)
	require.Equal(t, http.StatusOK, status, "%v", body)
	require.Equal(t, "admin", body["role"], "the stored role follows the rules")

	status, body = b.do(t, b.acmeKey, http.MethodGet, "/v1/audit", nil)
	require.Equal(t, http.StatusOK, status)
	var created, promoted int
	for _, rec := range body["items"].([]any) {
		r := rec.(map[string]any)
		if r["route"] != signInRoute || r["user"] != "alice_at_example.com" || r["keyId"] != "issuer:acme/corp" {
			continue
		}
		target := r["target"].(map[string]any)
		switch {
		case r["status"] == float64(http.StatusCreated) && target["user"] == "alice_at_example.com" && target["role"] == "user":
			created++
		case target["previousRole"] == "user" && target["role"] == "admin":
			promoted++
		}
	}
	require.Equal(t, 1, created, "the user's creation is audited: %v", body)
	require.Equal(t, 1, promoted, "the role change is audited: %v", body)
}
