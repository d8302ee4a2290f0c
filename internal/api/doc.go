// Package api is heddle's REST API under /v1: a plain net/http handler that the
// local server mounts on a listener and the API Lambda adapts from API Gateway
// events. Every route is declared once in the route table (routes.go), which
// both registers it and carries the role it needs; openapi.yaml documents each
// of them and a test keeps the two in step. The document is also the rule for
// what a request may carry: before any handler runs, its query is held to the
// route's declared parameters and its body to the schema's required fields
// (params.go), so an unknown parameter is refused, never ignored.
//
// Handlers return errors; writeError turns each kind into one JSON envelope
// with an HTTP status, a stable code, a sentence and, for bad input, the field
// paths at fault. Nothing a client sends can produce a 500 except a bug, and a
// rejected request changes nothing.
package api
