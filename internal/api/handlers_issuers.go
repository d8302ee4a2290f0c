package api

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/heddle-io/heddle/internal/access"
	"github.com/heddle-io/heddle/internal/audit"
	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/identity"
)

var errNoIdentity = newError(http.StatusServiceUnavailable, CodeUnavailable,
	"this server does not accept sign-in with an identity provider; use an API key")

// authorizerClaimsKey carries the claims API Gateway's JWT authorizer
// verified. Only WithAuthorizerClaims sets it: nothing a request carries
// (a header, a query) can.
type authorizerClaimsKey struct{}

// WithAuthorizerClaims returns ctx carrying the claims API Gateway's JWT
// authorizer verified for the request. The API Lambda calls it with the
// claims it read from the event's requestContext, and only for the route
// the authorizer guards; a request in that context is authenticated by the
// claims alone (its Authorization header was the token they came from).
func WithAuthorizerClaims(ctx context.Context, claims map[string]string) context.Context {
	return context.WithValue(ctx, authorizerClaimsKey{}, claims)
}

// authenticateBearer resolves the request's caller: claims an authorizer
// verified, an API key, or an identity provider's token. For a token it
// also returns what the sign-in changed and its notes (nil otherwise).
func (s *Server) authenticateBearer(r *http.Request, header string) (access.Principal, *identity.Admission, error) {
	if claims, ok := r.Context().Value(authorizerClaimsKey{}).(map[string]string); ok {
		if s.identity == nil {
			return access.Principal{}, nil, errNoIdentity
		}
		return admissionResult(s.identity.SignInClaims(r.Context(), claims))
	}
	secret, ok := strings.CutPrefix(header, "Bearer ")
	if !ok {
		return access.Principal{}, nil, access.ErrUnauthorized
	}
	secret = strings.TrimSpace(secret)
	if s.identity != nil && !strings.HasPrefix(secret, access.KeyPrefix) && identity.LooksLikeJWT(secret) {
		return admissionResult(s.identity.SignIn(r.Context(), secret))
	}
	p, err := s.access.Authenticate(r.Context(), secret)
	return p, nil, err
}

func admissionResult(a identity.Admission, err error) (access.Principal, *identity.Admission, error) {
	if err != nil {
		_, err = identityResult(access.Principal{}, err)
		return access.Principal{}, nil, err
	}
	return a.Principal, &a, nil
}

// defaultIdentityRetry is the Retry-After of a provider outage whose
// next attempt heddle cannot tell (its token endpoint failed).
const defaultIdentityRetry = 5 * time.Second

// identityResult turns a refused token into a 401 whose message is the
// refusal's reason, and an unreachable provider into a 503 with
// Retry-After (when heddle will try the provider again).
func identityResult(p access.Principal, err error) (access.Principal, error) {
	var ae *identity.AuthError
	switch {
	case errors.As(err, &ae):
		return p, newError(http.StatusUnauthorized, CodeUnauthorized, ae.Reason)
	case errors.Is(err, identity.ErrUnavailable):
		e := newError(http.StatusServiceUnavailable, CodeUnavailable,
			"the identity provider that issued the token cannot be reached to verify it; try again shortly, or use an API key")
		e.retryAfter = defaultIdentityRetry
		var ue *identity.UnavailableError
		if errors.As(err, &ue) && ue.RetryAfter > 0 {
			e.retryAfter = ue.RetryAfter
		}
		e.cause = err
		return p, e
	}
	return p, err
}

// recordSignIn audits what a request's sign-in changed: the user it
// created, or the role the rules gave a user instead of the stored one.
// The record is the person's own, in their tenant, beside the record of
// the request itself (if it is a change).
func (s *Server) recordSignIn(w http.ResponseWriter, r *http.Request, a *identity.Admission) {
	if s.audit == nil || a == nil || (!a.Created && a.PreviousRole == "") {
		return
	}
	p := a.Principal
	target := map[string]string{"user": p.User, "role": string(p.Role)}
	status := http.StatusOK
	if a.Created {
		status = http.StatusCreated
	} else {
		target["previousRole"] = string(a.PreviousRole)
	}
	rec := audit.Record{At: time.Now().UTC(), Tenant: p.Tenant, User: p.User, KeyID: p.KeyID,
		Method: r.Method, Route: signInRoute, Path: r.URL.Path, Target: target, RequestID: requestID(r.Context()),
		Status: status, Outcome: audit.Done}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), 5*time.Second)
	defer cancel()
	if err := s.audit.Append(ctx, rec); err != nil {
		s.log.ErrorContext(ctx, "audit record lost", slog.String("requestId", rec.RequestID), slog.Any("error", err))
	}
}

// signInRoute is the audit route of a sign-in's own changes (a user
// created, a role updated), whatever request carried the token: its
// path says which.
const signInRoute = "(sign-in)"

// issuerError maps the identity package's errors to responses.
func issuerError(err error) error {
	switch {
	case errors.Is(err, identity.ErrNotFound):
		return errNotFound(strings.TrimPrefix(err.Error(), identity.ErrNotFound.Error()+": ") + " does not exist in your tenant")
	case errors.Is(err, identity.ErrExists):
		return newError(http.StatusConflict, CodeAlreadyExists, strings.TrimPrefix(err.Error(), identity.ErrExists.Error()+": ")+
			" already exists; PUT /v1/issuers/{issuer} changes it")
	case errors.Is(err, identity.ErrChanged):
		return newError(http.StatusPreconditionFailed, CodePreconditionFailed,
			"the issuer changed since you read it (If-Match or version does not match the latest); read it again and reapply your change")
	}
	return err
}

func (s *Server) listIssuers(w http.ResponseWriter, r *http.Request, p access.Principal) error {
	if s.identity == nil {
		return errNoIdentity
	}
	pr, err := s.pageOf(r, p, listPaging)
	if err != nil {
		return err
	}
	items, next, err := s.identity.ListIssuers(r.Context(), p.Tenant, pr.Limit, pr.After)
	if err != nil {
		return err
	}
	writePage(s, w, pr, items, next)
	return nil
}

func (s *Server) createIssuer(w http.ResponseWriter, r *http.Request, p access.Principal) error {
	if s.identity == nil {
		return errNoIdentity
	}
	var is identity.Issuer
	if err := decode(r, &is); err != nil {
		return err
	}
	if is.Version != 0 || !is.CreatedAt.IsZero() || (is.TenantID != "" && is.TenantID != p.Tenant) {
		return domain.Problems{{Field: "version", Code: domain.CodeInvalid, Message: "tenantId, version and createdAt are set by the server; leave them out"}}
	}
	created, err := s.identity.CreateIssuer(r.Context(), p.Tenant, is)
	if err != nil {
		return issuerError(err)
	}
	w.Header().Set("Location", "/v1/issuers/"+created.Name)
	w.Header().Set("ETag", versionETag(created.Version))
	writeJSON(w, http.StatusCreated, created)
	return nil
}

func (s *Server) getIssuer(w http.ResponseWriter, r *http.Request, p access.Principal) error {
	if s.identity == nil {
		return errNoIdentity
	}
	name, err := pathName(r, "issuer")
	if err != nil {
		return err
	}
	is, err := s.identity.GetIssuer(r.Context(), p.Tenant, name)
	if err != nil {
		return issuerError(err)
	}
	w.Header().Set("ETag", versionETag(is.Version))
	writeJSON(w, http.StatusOK, is)
	return nil
}

func (s *Server) updateIssuer(w http.ResponseWriter, r *http.Request, p access.Principal) error {
	if s.identity == nil {
		return errNoIdentity
	}
	name, err := pathName(r, "issuer")
	if err != nil {
		return err
	}
	var is identity.Issuer
	if err := decode(r, &is); err != nil {
		// Another tenant's issuer answers 404 whatever the body, as every
		// route answers for ids the caller may not see.
		if _, gerr := s.identity.GetIssuer(r.Context(), p.Tenant, name); gerr != nil {
			return issuerError(gerr)
		}
		return err
	}
	if is.Name == "" {
		is.Name = name
	}
	if is.Name != name {
		return domain.Problems{{Field: "name", Code: domain.CodeConflict, Message: fmt.Sprintf("is %q but the URL names %q; they must agree", is.Name, name)}}
	}
	ifVersion := is.Version
	if m := r.Header.Get("If-Match"); m != "" {
		if ifVersion, err = strconv.ParseInt(strings.Trim(m, `"`), 10, 64); err != nil {
			return badParam("If-Match", fmt.Sprintf("%q is not an ETag this API returned", m))
		}
	}
	updated, err := s.identity.UpdateIssuer(r.Context(), p.Tenant, is, ifVersion)
	if err != nil {
		return issuerError(err)
	}
	w.Header().Set("ETag", versionETag(updated.Version))
	writeJSON(w, http.StatusOK, updated)
	return nil
}

func (s *Server) deleteIssuer(w http.ResponseWriter, r *http.Request, p access.Principal) error {
	if s.identity == nil {
		return errNoIdentity
	}
	name, err := pathName(r, "issuer")
	if err != nil {
		return err
	}
	if err := s.identity.DeleteIssuer(r.Context(), p.Tenant, name); err != nil {
		return issuerError(err)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// SignInOption is one way to sign in, as GET /v1/signin lists them: what
// the CLI and the dashboard need to start the authorization, and nothing
// about which tenant trusts the provider.
type SignInOption = identity.SignInOption

// SignInOptions is the answer to GET /v1/signin.
type SignInOptions struct {
	Items []SignInOption `json:"items"`
}

func (s *Server) listSignIn(w http.ResponseWriter, r *http.Request, _ access.Principal) error {
	out := SignInOptions{Items: []SignInOption{}}
	if s.identity != nil {
		var err error
		if out.Items, err = s.identity.SignInOptions(r.Context()); err != nil {
			return err
		}
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, out)
	return nil
}

// Grant types of POST /v1/signin/token.
const (
	GrantAuthorizationCode = "authorization_code"
	GrantRefreshToken      = "refresh_token"
)

// SignInTokenRequest is the body of POST /v1/signin/token: the end of the
// dashboard's authorization code flow (with PKCE), or the renewal of its
// sign-in.
type SignInTokenRequest struct {
	Issuer       string `json:"issuer"`
	ClientID     string `json:"clientId"`
	GrantType    string `json:"grantType"`
	Code         string `json:"code,omitempty"`
	CodeVerifier string `json:"codeVerifier,omitempty"`
	RedirectURI  string `json:"redirectUri,omitempty"`
	Nonce        string `json:"nonce,omitempty"`
	RefreshToken string `json:"refreshToken,omitempty"`
}

func (req *SignInTokenRequest) validate() domain.Problems {
	var ps domain.Problems
	need := func(field, value, why string) {
		if value == "" {
			ps = append(ps, domain.Problem{Field: field, Code: domain.CodeRequired, Message: why})
		}
	}
	need("issuer", req.Issuer, "give the issuer of GET /v1/signin you signed in with")
	need("clientId", req.ClientID, "give the clientId of GET /v1/signin you signed in with")
	switch req.GrantType {
	case GrantAuthorizationCode:
		need("code", req.Code, "give the code the identity provider sent back")
		need("codeVerifier", req.CodeVerifier, "give the PKCE verifier whose challenge started the sign-in")
		need("redirectUri", req.RedirectURI, "give the redirect_uri the sign-in started with")
		need("nonce", req.Nonce, "give the nonce the sign-in started with")
	case GrantRefreshToken:
		need("refreshToken", req.RefreshToken, "give the refresh token of the sign-in to renew")
	default:
		ps = append(ps, domain.Problem{Field: "grantType", Code: domain.CodeInvalid,
			Message: fmt.Sprintf("%q is not a grant type; use %s or %s", req.GrantType, GrantAuthorizationCode, GrantRefreshToken)})
	}
	return ps
}

func (s *Server) signInToken(w http.ResponseWriter, r *http.Request, _ access.Principal) error {
	if s.identity == nil {
		return errNoIdentity
	}
	var req SignInTokenRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	if ps := req.validate(); len(ps) > 0 {
		return ps
	}
	var (
		got identity.SignedIn
		err error
	)
	if req.GrantType == GrantAuthorizationCode {
		got, err = s.identity.ExchangeCode(r.Context(), req.Issuer, req.ClientID, req.Code, req.CodeVerifier, req.RedirectURI, req.Nonce)
	} else {
		got, err = s.identity.Refresh(r.Context(), req.Issuer, req.ClientID, req.RefreshToken)
	}
	if _, err := identityResult(access.Principal{}, err); err != nil {
		return err
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, got)
	// A sign-in is recorded under the person it names, in their tenant,
	// with the user it created or the role it updated.
	if s.audit != nil {
		if got.Created {
			noteMade(w, "user", got.Principal.User)
		} else if got.PreviousRole != "" {
			noteMade(w, "previousRole", string(got.PreviousRole))
		}
		s.record(w, r, route{Method: http.MethodPost, Path: "/v1/signin/token"}, got.Principal)
	}
	return nil
}

// RequestIDFrom is the request id the API would answer a request whose
// X-Request-Id header is header with (the header when usable, else a new
// one), for answers made before the API sees the request.
func RequestIDFrom(header string) string { return requestIDFrom(header) }
