// Package identity lets people sign in with their company's identity
// provider: it keeps the trusted issuers (OpenID Connect providers) of each
// tenant, verifies the tokens they issue, maps a token's claims to a tenant
// and a role, and adds the user it names to that tenant on first sign-in.
//
// An issuer belongs to a tenant, whose admins manage it, and whose rules can
// only map into that tenant; the system tenant's issuers (managed by the
// superadmin) may map into any tenant. Each issuer is stored twice in one
// transaction, like an API key: under the tenant's scope (so a tenant lists
// and deletes only its own) and as a system lookup item keyed by the issuer
// URL's hash, which is how a token's iss finds its candidate configurations.
//
// Verification is go-oidc's (discovery, signature with go-jose, issuer)
// followed by go-jose's claim validation (audience, exp, nbf, iat) with a
// small clock skew: no JWT code is written here. The JWKS is cached per
// issuer and refreshed when it grows old or when a token names a key the
// cache does not have, but never more often than once per MinRefresh, so a
// stream of forged tokens with made-up key ids cannot turn heddle into a
// load generator against the identity provider.
//
// Every failure is an *AuthError carrying a reason meant for the caller: it
// says what is wrong with the token the caller holds (expired, not yet
// valid, not for heddle, not from a trusted issuer or not signed by it,
// mapped to no tenant) and nothing about heddle's configuration beyond
// that. Nothing is written before a token has been verified and mapped.
package identity
