package apigwemu

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/coreos/go-oidc/v3/oidc"
)

// ownClient serves authorizers without an HTTPClient. Its transport is its
// own, not http.DefaultTransport, whose connections anything else in the
// process may close under a request in flight (httptest.Server.Close closes
// its idle connections).
var ownClient = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}

// JWTAuthorizer is template.yaml's OidcAuthorizer: a JWT authorizer on the
// route RouteKey, whose paths start with Prefix. Like API Gateway's, it
// reads the token from the Authorization header, verifies it against the
// issuer's discovery document and JWKS (signature, iss, aud, exp, nbf),
// answers 401 {"message":"Unauthorized"} without invoking the function
// when it does not verify, and otherwise passes the claims, flattened to
// strings (lists as "[a b c]"), in requestContext.authorizer.jwt.claims.
// Verification is go-oidc's.
type JWTAuthorizer struct {
	Issuer, Audience string
	// RouteKey and Prefix: "ANY /oidc/{proxy+}" and "/oidc" in
	// template.yaml.
	RouteKey, Prefix string
	// HTTPClient reads discovery and keys; nil is a client with a transport
	// of its own (see ownClient).
	HTTPClient *http.Client

	mu       sync.Mutex
	verifier *oidc.IDTokenVerifier
}

// guards reports whether path is on the authorizer's route.
func (a *JWTAuthorizer) guards(path string) bool {
	return strings.HasPrefix(path, a.Prefix+"/") && len(path) > len(a.Prefix)+1
}

func (a *JWTAuthorizer) verify(ctx context.Context, header string) (map[string]string, bool) {
	raw, ok := strings.CutPrefix(header, "Bearer ")
	if !ok || raw == "" {
		return nil, false
	}
	v, err := a.ready(ctx)
	if err != nil {
		return nil, false
	}
	tok, err := v.Verify(ctx, strings.TrimSpace(raw))
	if err != nil {
		return nil, false
	}
	var claims map[string]any
	if err := tok.Claims(&claims); err != nil {
		return nil, false
	}
	return FlattenClaims(claims), true
}

// ready runs discovery once it succeeds.
func (a *JWTAuthorizer) ready(ctx context.Context) (*oidc.IDTokenVerifier, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.verifier != nil {
		return a.verifier, nil
	}
	client := a.HTTPClient
	if client == nil {
		client = ownClient
	}
	dctx, cancel := context.WithTimeout(oidc.ClientContext(context.WithoutCancel(ctx), client), 10*time.Second)
	defer cancel()
	p, err := oidc.NewProvider(dctx, a.Issuer)
	if err != nil {
		return nil, fmt.Errorf("apigwemu: discovery of %s: %w", a.Issuer, err)
	}
	// The key set fetches with the context it was made with: one that
	// outlives this request.
	kctx := oidc.ClientContext(context.Background(), client)
	var meta struct {
		JWKSURL string   `json:"jwks_uri"`
		Algs    []string `json:"id_token_signing_alg_values_supported"`
	}
	if err := p.Claims(&meta); err != nil {
		return nil, err
	}
	a.verifier = oidc.NewVerifier(a.Issuer, oidc.NewRemoteKeySet(kctx, meta.JWKSURL), &oidc.Config{ClientID: a.Audience, SupportedSigningAlgs: meta.Algs})
	return a.verifier, nil
}

// FlattenClaims writes claims the way API Gateway hands a JWT authorizer's
// claims to the function: strings as they are, numbers in decimal,
// booleans as true/false, lists as "[a b c]", objects as JSON.
func FlattenClaims(claims map[string]any) map[string]string {
	out := make(map[string]string, len(claims))
	for k, v := range claims {
		out[k] = flatten(v)
	}
	return out
}

func flatten(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	case bool:
		return strconv.FormatBool(v)
	case []any:
		parts := make([]string, len(v))
		for i, e := range v {
			parts[i] = flatten(e)
		}
		return "[" + strings.Join(parts, " ") + "]"
	case nil:
		return ""
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// authorize applies the authorizer to a request on its route: the event
// gets the route key, the proxy parameter and the claims; ok is false when
// the token does not verify (answer 401, do not invoke).
func (a *JWTAuthorizer) authorize(r *http.Request, ev *events.APIGatewayV2HTTPRequest) (ok bool) {
	claims, ok := a.verify(r.Context(), r.Header.Get("Authorization"))
	if !ok {
		return false
	}
	ev.RouteKey, ev.RequestContext.RouteKey = a.RouteKey, a.RouteKey
	ev.PathParameters = map[string]string{"proxy": strings.TrimPrefix(r.URL.Path, a.Prefix+"/")}
	ev.RequestContext.Authorizer = &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
		JWT: &events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription{Claims: claims, Scopes: scopes(claims)},
	}
	return true
}

// scopes are the token's scope claim split, as API Gateway lists them.
func scopes(claims map[string]string) []string {
	s := strings.Fields(claims["scope"])
	sort.Strings(s)
	if len(s) == 0 {
		return nil
	}
	return s
}
