package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/access"
	"github.com/heddle-io/heddle/internal/apigwemu"
	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/identity"
	"github.com/heddle-io/heddle/internal/identity/identitytest"
	"github.com/heddle-io/heddle/internal/lambdaemu"
	"github.com/heddle-io/heddle/internal/store/boltstore"
)

// handlerInvoker invokes the Lambda handler in process, as the Lambda
// runtime would: the event and the answer cross as JSON.
type handlerInvoker struct{ h lambdaHandler }

func (i handlerInvoker) Invoke(ctx context.Context, payload []byte) (lambdaemu.Result, error) {
	var ev events.APIGatewayV2HTTPRequest
	if err := json.Unmarshal(payload, &ev); err != nil {
		return lambdaemu.Result{}, err
	}
	resp, err := i.h(ctx, ev)
	if err != nil {
		return lambdaemu.Result{}, err
	}
	out, err := json.Marshal(resp)
	return lambdaemu.Result{Payload: out}, err
}

// TestAuthorizerThroughFrontDoor sends requests through the emulated API
// Gateway with template.yaml's JWT authorizer to the API Lambda's handler:
// on the authorizer's route the gateway verifies the token and the handler
// trusts its claims; on the catch-all route the handler verifies tokens
// itself and API keys keep working.
func TestAuthorizerThroughFrontDoor(t *testing.T) {
	t.Parallel()
	db, err := boltstore.Open(filepath.Join(t.TempDir(), "heddle.db"), boltstore.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	h, err := newServicesHandler(context.Background(), catalogOnly(db), "bolt", testKey, slog.New(slog.DiscardHandler))
	require.NoError(t, err)

	idp := identitytest.New(t, "heddle")
	_, err = identity.New(db, access.New(db), identity.Config{}).CreateIssuer(context.Background(), domain.SystemTenant, identity.Issuer{
		Name: "corp", URL: idp.URL, Audience: "heddle",
		Rules: []identity.Rule{{Claim: "groups", Value: "ops", Role: domain.RoleAdmin}, {EmailDomain: "example.com", Role: domain.RoleUser}}})
	require.NoError(t, err)

	door := apigwemu.New(apigwemu.Config{Function: handlerInvoker{h}, Authorizer: &apigwemu.JWTAuthorizer{
		Issuer: idp.URL, Audience: "heddle", RouteKey: AuthorizerRouteKey, Prefix: AuthorizerPrefix}})
	srv := httptest.NewServer(door)
	t.Cleanup(srv.Close)
	get := func(path, bearer string) (int, string) {
		req, err := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		require.NoError(t, err)
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		resp, err := testHTTP.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(body)
	}

	claims := idp.Claims()
	claims["groups"] = []string{"staff", "ops"}
	token := idp.Token(claims)
	status, body := get("/oidc/v1/me", token)
	require.Equal(t, http.StatusOK, status, body)
	require.JSONEq(t, `{"tenant":"system","user":"alice_at_example.com","role":"admin","keyId":"issuer:system/corp"}`, body,
		"the groups list crossed the gateway as \"[staff ops]\" and still matched")

	expired := idp.Claims()
	expired["exp"] = time.Now().Add(-time.Hour).Unix()
	for name, bad := range map[string]string{"forged": idp.ForeignToken(idp.Claims()), "expired": idp.Token(expired), "API key": testKey, "none": ""} {
		status, body = get("/oidc/v1/me", bad)
		require.Equal(t, http.StatusUnauthorized, status, name)
		require.JSONEq(t, `{"message":"Unauthorized"}`, body, "%s: the gateway refuses it; the function never runs", name)
	}

	// The catch-all route: the API verifies the token itself.
	status, body = get("/v1/me", token)
	require.Equal(t, http.StatusOK, status, body)
	status, body = get("/v1/me", idp.Token(expired))
	require.Equal(t, http.StatusUnauthorized, status, body)
	require.Contains(t, body, "expired")
	status, body = get("/v1/me", testKey)
	require.Equal(t, http.StatusOK, status, body)
	require.Contains(t, body, `"superadmin"`)
}
