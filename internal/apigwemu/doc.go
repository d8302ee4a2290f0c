// Package apigwemu is the front door of make local-aws: an HTTP server
// that does what API Gateway's HTTP API does in front of the api function
// (template.yaml: ANY /{proxy+} and ANY / for the root, payload format 2.0, stage
// $default). It turns each request into an events.APIGatewayV2HTTPRequest
// as API Gateway builds it (lower-cased headers with repeated ones joined
// by commas, the Cookie header moved to cookies, the decoded query with
// repeated keys joined by commas, the path's proxy parameter, the
// x-forwarded-* headers, a requestContext, and a body that is base64 unless
// its content type is text), invokes the function, and turns its answer
// back into an HTTP response.
//
// It enforces API Gateway's and Lambda's limits and answers as API Gateway
// does when they are exceeded: a request body over 10 MB is refused with
// 413 before the function sees it; a function that does not answer within
// 30 seconds gets 503 {"message":"Service Unavailable"}; an answer Lambda
// refuses as over 6 MB is 502 {"message":"Bad Gateway"}; a failed
// invocation or an answer that is not a payload-2.0 response is 500
// {"message":"Internal Server Error"}; a path the route does not match
// (an empty segment at the root, "//") is 404 {"message":"Not Found"}.
package apigwemu
