package main

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/aws/aws-lambda-go/events"

	"github.com/heddle-io/heddle/internal/api"
)

// API Gateway's JWT authorizer guards one route of template.yaml's HTTP
// API: AuthorizerRouteKey, whose paths are the API's under AuthorizerPrefix
// (<api>/oidc/v1/clusters is /v1/clusters). API Gateway verifies the token
// there (issuer, audience, signature, exp, nbf) before the function runs
// and passes the verified claims in requestContext.authorizer.jwt.claims.
// The catch-all route ANY /{proxy+} has no authorizer: API keys, and
// identity-provider tokens the API verifies itself, go there.
const (
	AuthorizerRouteKey = "ANY /oidc/{proxy+}"
	AuthorizerPrefix   = "/oidc"
)

// trustAuthorizer hands the authorizer's claims to the API, through the
// request's context, only for events of the authorizer's route: API
// Gateway alone builds the requestContext (nothing a caller sends reaches
// it), and only that route's requests passed the authorizer. An event of
// that route without claims (which API Gateway never sends) is refused.
func trustAuthorizer(next lambdaHandler) lambdaHandler {
	return func(ctx context.Context, ev events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		if ev.RouteKey != AuthorizerRouteKey {
			return next(ctx, ev)
		}
		auth := ev.RequestContext.Authorizer
		if auth == nil || auth.JWT == nil || len(auth.JWT.Claims) == 0 {
			return unauthorized(ev, "this route is guarded by API Gateway's JWT authorizer, but the request carries no verified claims")
		}
		ctx = api.WithAuthorizerClaims(ctx, auth.JWT.Claims)
		ev.RawPath = strings.TrimPrefix(ev.RawPath, AuthorizerPrefix)
		ev.RequestContext.HTTP.Path = strings.TrimPrefix(ev.RequestContext.HTTP.Path, AuthorizerPrefix)
		return next(ctx, ev)
	}
}

func unauthorized(ev events.APIGatewayV2HTTPRequest, message string) (events.APIGatewayV2HTTPResponse, error) {
	requestID := api.RequestIDFrom(ev.Headers["x-request-id"])
	body, err := json.MarshalIndent(api.ErrorBody{Error: api.ErrorDetail{Status: http.StatusUnauthorized, Code: api.CodeUnauthorized,
		Message: message, RequestID: requestID}}, "", "  ")
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	return events.APIGatewayV2HTTPResponse{StatusCode: http.StatusUnauthorized, Body: string(body) + "\n",
		Headers: map[string]string{"Content-Type": "application/json", "X-Content-Type-Options": "nosniff", "X-Request-Id": requestID,
			"Www-Authenticate": `Bearer realm="heddle"`}}, nil
}
