package infra

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestOidcAuthorizer: template.yaml declares API Gateway's JWT authorizer
// for the OidcIssuer and OidcAudience parameters, only when an issuer is
// given, on the route the API function trusts claims from; the catch-all
// route stays open to API keys.
func TestOidcAuthorizer(t *testing.T) {
	t.Parallel()
	tpl := load(t, filepath.Join(repoRoot, "template.yaml"))
	for _, p := range []string{"OidcIssuer", "OidcAudience"} {
		require.Contains(t, tpl.parameters, p)
		require.Equal(t, "", get(tpl.parameters[p], "Default").Value, "%s is optional", p)
	}
	require.Contains(t, tpl.conditions, "HasOidcIssuer")

	auth := tpl.resources["OidcAuthorizer"]
	require.NotNil(t, auth)
	require.Equal(t, "AWS::ApiGatewayV2::Authorizer", get(auth, "Type").Value)
	require.Equal(t, "HasOidcIssuer", get(auth, "Condition").Value)
	props := get(auth, "Properties")
	require.Equal(t, "JWT", get(props, "AuthorizerType").Value)
	jwt := get(props, "JwtConfiguration")
	require.Equal(t, "!Ref", get(jwt, "Issuer").Tag)
	require.Equal(t, "OidcIssuer", get(jwt, "Issuer").Value)
	require.Equal(t, "OidcAudience", get(jwt, "Audience").Content[0].Value)
	require.Equal(t, "$request.header.Authorization", get(props, "IdentitySource").Content[0].Value)

	route := get(tpl.resources["OidcRoute"], "Properties")
	require.Equal(t, "JWT", get(route, "AuthorizationType").Value)
	require.Equal(t, "OidcAuthorizer", get(route, "AuthorizerId").Value)
	src, err := os.ReadFile(filepath.Join(repoRoot, "functions", "api", "authorizer.go"))
	require.NoError(t, err)
	m := regexp.MustCompile(`AuthorizerRouteKey = "([^"]+)"`).FindSubmatch(src)
	require.NotNil(t, m)
	require.Equal(t, string(m[1]), get(route, "RouteKey").Value, "the API function trusts claims of exactly this route")

	integ := get(tpl.resources["OidcIntegration"], "Properties")
	require.Equal(t, "AWS_PROXY", get(integ, "IntegrationType").Value)
	require.Equal(t, "2.0", get(integ, "PayloadFormatVersion").Value)
	perm := get(tpl.resources["OidcInvokePermission"], "Properties")
	require.Equal(t, "apigateway.amazonaws.com", get(perm, "Principal").Value)
	require.Contains(t, get(perm, "SourceArn").Value, "${HttpApi}/*/*/oidc/*", "the permission is for this API's authorizer route only")

	// The catch-all route has no authorizer: API keys go there.
	any := get(get(get(get(tpl.resources["ApiFunction"], "Properties"), "Events"), "Any"), "Properties")
	require.Equal(t, "/{proxy+}", get(any, "Path").Value)
	require.Nil(t, get(any, "Auth"))
	require.Nil(t, get(get(tpl.resources["HttpApi"], "Properties"), "Auth"))
}
