package api

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/access"
	"github.com/heddle-io/heddle/internal/audit"
	"github.com/heddle-io/heddle/internal/catalog"
	"github.com/heddle-io/heddle/internal/identity"
	"github.com/heddle-io/heddle/internal/identity/identitytest"
	"github.com/heddle-io/heddle/internal/store/boltstore"
)

type identityBundle struct {
	*testBundle
	idp     *identitytest.Issuer
	userKey string // a plain user of acme
}

// setupIdentity serves the API with sign-in by identity provider, tenants
// acme and globex, and a test provider acme may trust.
func setupIdentity(t *testing.T) *identityBundle {
	t.Helper()
	return setupIdentityWith(t, nil)
}

// setupIdentityWith is setupIdentity with a throttle.
func setupIdentityWith(t *testing.T, throttle *Throttle) *identityBundle {
	t.Helper()
	db, err := boltstore.Open(filepath.Join(t.TempDir(), "heddle.db"), boltstore.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	acc := access.New(db)
	root, err := acc.Bootstrap(context.Background(), "")
	require.NoError(t, err)
	s := New(Config{Catalog: catalog.New(db, nil), Access: acc, Identity: identity.New(db, acc, identity.Config{}),
		Backend: "bolt", Version: "test", Logger: testLogger(t), Audit: audit.New(db), Throttle: throttle})
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	b := &identityBundle{testBundle: &testBundle{srv: srv, api: s, rootKey: root}, idp: identitytest.New(t, "heddle")}
	b.acmeKey = b.createTenant(t, "acme")
	b.otherKey = b.createTenant(t, "globex")
	status, body := b.do(t, b.acmeKey, http.MethodPost, "/v1/users", map[string]any{"name": "uma", "role": "user"})
	require.Equal(t, http.StatusCreated, status, "%v", body)
	status, body = b.do(t, b.acmeKey, http.MethodPost, "/v1/users/uma/keys", nil)
	require.Equal(t, http.StatusCreated, status, "%v", body)
	b.userKey = body["secret"].(string)
	return b
}

func (b *identityBundle) issuerBody() map[string]any {
	return map[string]any{"name": "corp", "url": b.idp.URL, "audience": "heddle", "displayName": "Corp SSO",
		"rules": []map[string]any{{"claim": "groups", "value": "heddle-admins", "role": "admin"}, {"emailDomain": "example.com", "role": "user"}}}
}

func TestIssuerRoutes(t *testing.T) {
	t.Parallel()
	b := setupIdentity(t)

	status, body := b.do(t, b.userKey, http.MethodPost, "/v1/issuers", b.issuerBody())
	require.Equal(t, http.StatusForbidden, status, "a user may not add issuers: %v", body)
	status, body = b.do(t, b.acmeKey, http.MethodPost, "/v1/issuers", b.issuerBody())
	require.Equal(t, http.StatusCreated, status, "%v", body)
	require.Equal(t, "acme", body["tenantId"])
	status, body = b.do(t, b.acmeKey, http.MethodPost, "/v1/issuers", b.issuerBody())
	require.Equal(t, http.StatusConflict, status)
	require.Equal(t, CodeAlreadyExists, body["error"].(map[string]any)["code"])

	bad := b.issuerBody()
	bad["url"] = "ftp://idp"
	bad["rules"] = []map[string]any{{"tenant": "globex", "role": "admin"}}
	status, body = b.do(t, b.acmeKey, http.MethodPost, "/v1/issuers", bad)
	require.Equal(t, http.StatusUnprocessableEntity, status)
	details := body["error"].(map[string]any)["details"].([]any)
	require.Len(t, details, 2)
	require.Equal(t, "url", details[0].(map[string]any)["field"])
	require.Equal(t, "rules[0].tenant", details[1].(map[string]any)["field"])

	status, body = b.do(t, b.acmeKey, http.MethodGet, "/v1/issuers", nil)
	require.Equal(t, http.StatusOK, status)
	require.Len(t, body["items"], 1)
	status, body = b.do(t, b.otherKey, http.MethodGet, "/v1/issuers", nil)
	require.Equal(t, http.StatusOK, status)
	require.Empty(t, body["items"], "globex sees none of acme's issuers")
	status, _ = b.do(t, b.otherKey, http.MethodGet, "/v1/issuers/corp", nil)
	require.Equal(t, http.StatusNotFound, status)
	status, _ = b.do(t, b.otherKey, http.MethodDelete, "/v1/issuers/corp", nil)
	require.Equal(t, http.StatusNotFound, status)

	status, body = b.do(t, "", http.MethodGet, "/v1/signin", nil)
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, []any{map[string]any{"label": "Corp SSO", "issuer": b.idp.URL, "clientId": "heddle",
		"scopes": []any{"openid", "email", "profile", "offline_access"}, "authorizationEndpoint": b.idp.URL + "/authorize"}}, body["items"])

	changed := b.issuerBody()
	changed["clientId"] = "heddle-public"
	status, body = b.do(t, b.acmeKey, http.MethodPut, "/v1/issuers/corp", changed, "If-Match", `"7"`)
	require.Equal(t, http.StatusPreconditionFailed, status, "%v", body)
	status, body = b.do(t, b.acmeKey, http.MethodPut, "/v1/issuers/corp", changed, "If-Match", `"1"`)
	require.Equal(t, http.StatusOK, status, "%v", body)
	require.Equal(t, "heddle-public", body["clientId"])

	status, _ = b.do(t, b.acmeKey, http.MethodDelete, "/v1/issuers/corp", nil)
	require.Equal(t, http.StatusNoContent, status)
	status, _ = b.do(t, b.acmeKey, http.MethodGet, "/v1/issuers/corp", nil)
	require.Equal(t, http.StatusNotFound, status)

	// Deleting a tenant removes its issuers: none is offered any more.
	status, body = b.do(t, b.otherKey, http.MethodPost, "/v1/issuers", b.issuerBody())
	require.Equal(t, http.StatusCreated, status, "%v", body)
	status, body = b.do(t, b.rootKey, http.MethodDelete, "/v1/tenants/globex", nil)
	require.Equal(t, http.StatusNoContent, status, "%v", body)
	status, body = b.do(t, "", http.MethodGet, "/v1/signin", nil)
	require.Equal(t, http.StatusOK, status)
	require.Empty(t, body["items"])
}

func TestSignInWithToken(t *testing.T) {
	t.Parallel()
	b := setupIdentity(t)
	status, body := b.do(t, b.acmeKey, http.MethodPost, "/v1/issuers", b.issuerBody())
	require.Equal(t, http.StatusCreated, status, "%v", body)

	b.idp.SetUser(map[string]any{"sub": "1", "email": "ada@example.com", "groups": []string{"heddle-admins"}})
	token := b.idp.Token(b.idp.Claims())
	status, body = b.do(t, token, http.MethodGet, "/v1/me", nil)
	require.Equal(t, http.StatusOK, status, "%v", body)
	require.Equal(t, map[string]any{"tenant": "acme", "user": "ada_at_example.com", "role": "admin", "keyId": "issuer:acme/corp"}, body)

	// The signed-in admin's changes are audited under the issuer.
	status, body = b.do(t, token, http.MethodPost, "/v1/users", map[string]any{"name": "newbie", "role": "user"})
	require.Equal(t, http.StatusCreated, status, "%v", body)
	status, body = b.do(t, b.acmeKey, http.MethodGet, "/v1/audit", nil)
	require.Equal(t, http.StatusOK, status)
	found := false
	for _, rec := range body["items"].([]any) {
		r := rec.(map[string]any)
		if r["user"] == "ada_at_example.com" && r["keyId"] == "issuer:acme/corp" {
			found = true
		}
	}
	require.True(t, found, "the change is recorded under the issuer: %v", body)
	// API keys keep working beside tokens.
	status, _ = b.do(t, b.userKey, http.MethodGet, "/v1/me", nil)
	require.Equal(t, http.StatusOK, status)
}

// TestBadTokensAnswer401: each bad token answers 401 with its reason and
// creates nothing.
func TestBadTokensAnswer401(t *testing.T) {
	t.Parallel()
	b := setupIdentity(t)
	status, body := b.do(t, b.acmeKey, http.MethodPost, "/v1/issuers", b.issuerBody())
	require.Equal(t, http.StatusCreated, status, "%v", body)
	stranger := identitytest.New(t, "heddle")
	with := func(changes map[string]any) string {
		c := b.idp.Claims()
		for k, v := range changes {
			c[k] = v
		}
		return b.idp.Token(c)
	}
	now := time.Now()
	cases := []struct{ name, token, reason string }{
		{"expired", with(map[string]any{"exp": now.Add(-time.Hour).Unix()}), identity.ErrExpired.Reason},
		{"not yet valid", with(map[string]any{"nbf": now.Add(time.Hour).Unix()}), identity.ErrNotYetValid.Reason},
		{"wrongly signed", b.idp.ForeignToken(b.idp.Claims()), identity.ErrUntrusted.Reason},
		{"wrong audience", with(map[string]any{"aud": "other"}), identity.ErrAudience.Reason},
		{"unknown issuer", stranger.Token(stranger.Claims()), identity.ErrUntrusted.Reason},
		{"no tenant", with(map[string]any{"email": "x@elsewhere.org"}), identity.ErrNoTenant.Reason},
		{"garbage", "a.b.c", identity.ErrMalformed.Reason},
	}
	for _, c := range cases {
		status, body := b.do(t, c.token, http.MethodPost, "/v1/clusters", map[string]any{"name": "x"})
		require.Equal(t, http.StatusUnauthorized, status, c.name)
		e := body["error"].(map[string]any)
		require.Equal(t, CodeUnauthorized, e["code"], c.name)
		require.Equal(t, c.reason, e["message"], c.name)
		require.NotContains(t, e["message"], "acme", c.name)
	}
	status, body = b.do(t, b.acmeKey, http.MethodGet, "/v1/users", nil)
	require.Equal(t, http.StatusOK, status)
	require.Len(t, body["items"], 2, "only acme-admin and uma: no refused token created a user")
}

// TestAuthorizerClaimsOnlyFromContext: claims count only when the Lambda
// put them in the request's context; a header that looks like them is
// ignored, and the token in Authorization is not even read.
func TestAuthorizerClaimsOnlyFromContext(t *testing.T) {
	t.Parallel()
	b := setupIdentity(t)
	status, body := b.do(t, b.acmeKey, http.MethodPost, "/v1/issuers", b.issuerBody())
	require.Equal(t, http.StatusCreated, status, "%v", body)
	claims := map[string]string{"iss": b.idp.URL, "aud": "heddle", "exp": fmt.Sprint(time.Now().Add(time.Minute).Unix()), "email": "bo@example.com"}

	req := httptest.NewRequest(http.MethodGet, "/v1/me", nil)
	req.Header.Set("Authorization", "Bearer not-even-a-token")
	rec := httptest.NewRecorder()
	b.api.ServeHTTP(rec, req.WithContext(WithAuthorizerClaims(req.Context(), claims)))
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	require.Contains(t, rec.Body.String(), `"user": "bo_at_example.com"`)

	req = httptest.NewRequest(http.MethodGet, "/v1/me", nil)
	req.Header.Set("X-GoLambdaProxy-ApiGateway-Context", `{"authorizer":{"jwt":{"claims":{"iss":"`+b.idp.URL+`","aud":"heddle","email":"bo@example.com"}}}}`)
	rec = httptest.NewRecorder()
	b.api.ServeHTTP(rec, req)
	require.Equal(t, http.StatusUnauthorized, rec.Code)
}

// authorize runs the provider's side of the dashboard's sign-in: it returns
// the code the provider sends back to redirectURI for the PKCE verifier.
func (b *identityBundle) authorize(t *testing.T, redirectURI, verifier, nonce string) string {
	t.Helper()
	sum := sha256.Sum256([]byte(verifier))
	q := url.Values{"response_type": {"code"}, "client_id": {"heddle"}, "redirect_uri": {redirectURI}, "state": {"s"},
		"nonce": {nonce}, "code_challenge": {base64.RawURLEncoding.EncodeToString(sum[:])}, "code_challenge_method": {"S256"}}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Get(b.idp.URL + "/authorize?" + q.Encode())
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusFound, resp.StatusCode)
	loc, err := url.Parse(resp.Header.Get("Location"))
	require.NoError(t, err)
	return loc.Query().Get("code")
}

func TestSignInTokenExchange(t *testing.T) {
	t.Parallel()
	b := setupIdentity(t)
	status, body := b.do(t, b.acmeKey, http.MethodPost, "/v1/issuers", b.issuerBody())
	require.Equal(t, http.StatusCreated, status, "%v", body)
	const redirect, verifier = "http://dashboard.example/", "a-verifier-of-enough-length-0123456789-abcdef"

	code := b.authorize(t, redirect, verifier, "n1")
	req := map[string]any{"issuer": b.idp.URL, "clientId": "heddle", "grantType": "authorization_code", "code": code,
		"codeVerifier": verifier, "redirectUri": redirect, "nonce": "n1"}
	status, body = b.do(t, "", http.MethodPost, "/v1/signin/token", req)
	require.Equal(t, http.StatusOK, status, "%v", body)
	require.Equal(t, map[string]any{"tenant": "acme", "user": "alice_at_example.com", "role": "user", "keyId": "issuer:acme/corp"}, body["principal"])
	idToken, refresh := body["idToken"].(string), body["refreshToken"].(string)
	status, body = b.do(t, b.acmeKey, http.MethodGet, "/v1/audit", nil)
	require.Equal(t, http.StatusOK, status)
	var signIns int
	for _, rec := range body["items"].([]any) {
		if r := rec.(map[string]any); r["route"] == "/v1/signin/token" && r["user"] == "alice_at_example.com" && r["keyId"] == "issuer:acme/corp" {
			signIns++
		}
	}
	require.Equal(t, 1, signIns, "the sign-in is in acme's audit log")
	status, _ = b.do(t, idToken, http.MethodGet, "/v1/me", nil)
	require.Equal(t, http.StatusOK, status)

	status, body = b.do(t, "", http.MethodPost, "/v1/signin/token", req)
	require.Equal(t, http.StatusUnauthorized, status, "a code is redeemed once: %v", body)
	require.Equal(t, identity.ErrGrantRefused.Reason, body["error"].(map[string]any)["message"])

	status, body = b.do(t, "", http.MethodPost, "/v1/signin/token", map[string]any{"issuer": b.idp.URL, "clientId": "heddle",
		"grantType": "refresh_token", "refreshToken": refresh})
	require.Equal(t, http.StatusOK, status, "%v", body)
	require.NotEqual(t, idToken, body["idToken"])

	// A replayed sign-in (another nonce) is refused before anyone is added.
	b.idp.SetUser(map[string]any{"sub": "9", "email": "replay@example.com"})
	req["code"], req["nonce"] = b.authorize(t, redirect, verifier, "n2"), "n3"
	status, body = b.do(t, "", http.MethodPost, "/v1/signin/token", req)
	require.Equal(t, http.StatusUnauthorized, status)
	require.Equal(t, identity.ErrNonce.Reason, body["error"].(map[string]any)["message"])
	status, _ = b.do(t, b.acmeKey, http.MethodGet, "/v1/users/replay_at_example.com", nil)
	require.Equal(t, http.StatusNotFound, status)

	// A wrong verifier, an issuer heddle does not offer, a bad body.
	req["code"], req["nonce"], req["codeVerifier"] = b.authorize(t, redirect, verifier, "n4"), "n4", "wrong-verifier"
	status, _ = b.do(t, "", http.MethodPost, "/v1/signin/token", req)
	require.Equal(t, http.StatusUnauthorized, status)
	req["issuer"] = "https://elsewhere.example.com"
	status, body = b.do(t, "", http.MethodPost, "/v1/signin/token", req)
	require.Equal(t, http.StatusUnauthorized, status)
	require.Equal(t, identity.ErrNotOffered.Reason, body["error"].(map[string]any)["message"])
	status, body = b.do(t, "", http.MethodPost, "/v1/signin/token", map[string]any{"issuer": b.idp.URL, "clientId": "heddle", "grantType": "password"})
	require.Equal(t, http.StatusUnprocessableEntity, status)
	require.Equal(t, "grantType", body["error"].(map[string]any)["details"].([]any)[0].(map[string]any)["field"])
}
