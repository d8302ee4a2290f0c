// Package identitytest is an OpenID Connect provider for tests, served by
// httptest in the test's own process: discovery, a JWKS with rotating
// ECDSA keys, the device authorization endpoint, an authorization endpoint
// that approves at once (with PKCE checked at the token endpoint), and a
// token endpoint for the device code, authorization code and refresh token
// grants. Tokens are signed with go-jose.
package identitytest
