package identity

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/heddle-io/heddle/internal/access"
	"github.com/heddle-io/heddle/internal/domain"
)

// SignInOption is one provider people may sign in with, as the dashboard
// and the CLI need it.
type SignInOption struct {
	Label    string `json:"label"`
	Issuer   string `json:"issuer"`
	ClientID string `json:"clientId"`
	// CLIClientID is the client `heddle login` uses, when not ClientID.
	CLIClientID string `json:"cliClientId,omitempty"`
	// Scopes are what a sign-in asks for: DefaultScopes and the scopes of
	// every issuer configuration with this URL and client id.
	Scopes []string `json:"scopes"`
	// AuthorizationEndpoint is where the dashboard sends the browser; empty
	// when the provider's discovery document cannot be read now.
	AuthorizationEndpoint string `json:"authorizationEndpoint,omitempty"`
}

// SignInOptions lists the providers people may sign in with, one per
// issuer and client id, without saying which tenants trust them.
func (id *Identity) SignInOptions(ctx context.Context) ([]SignInOption, error) {
	all, err := id.AllIssuers(ctx)
	if err != nil {
		return nil, err
	}
	out := []SignInOption{}
	seen := map[[2]string]int{} // the option's index
	// Discovery of a provider that does not answer must not hold the
	// listing (a public page) for long: past this, options go without an
	// authorization endpoint.
	dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	for _, is := range all {
		k := [2]string{is.URL, is.ClientIDOrAudience()}
		if i, ok := seen[k]; ok {
			// Tenants that trust one provider through one client share a
			// sign-in, which asks for what any of them needs.
			out[i].Scopes = mergeScopes(out[i].Scopes, is.Scopes)
			continue
		}
		seen[k] = len(out)
		o := SignInOption{Label: is.Label(), Issuer: is.URL, ClientID: is.ClientIDOrAudience(), CLIClientID: is.CLIClientID, Scopes: is.ScopesToAsk()}
		if _, op, err := id.discovered(dctx, is.URL); err == nil {
			o.AuthorizationEndpoint = op.Endpoint().AuthURL
		}
		out = append(out, o)
	}
	return out, nil
}

// SignedIn is the answer to a finished sign-in: the tokens (the ID token is
// the bearer from now on) and who they name.
type SignedIn struct {
	IDToken      string           `json:"idToken"`
	RefreshToken string           `json:"refreshToken,omitempty"`
	Expiry       time.Time        `json:"expiry"`
	Principal    access.Principal `json:"principal"`
	// Notes say what may have kept a rule from matching (see Admission).
	Notes []string `json:"notes,omitempty"`
	// Created and PreviousRole are the Admission's, for the API's audit
	// record.
	Created      bool        `json:"-"`
	PreviousRole domain.Role `json:"-"`
}

// ErrNotOffered: the issuer and client id are not a sign-in option.
var ErrNotOffered = &AuthError{Reason: "heddle offers no sign-in with that issuer and client id; GET /v1/signin lists the ones it does"}

// ErrGrantRefused: the provider did not accept the code or refresh token.
var ErrGrantRefused = &AuthError{Reason: "the identity provider refused the sign-in's code or refresh token (used twice, expired, or a PKCE verifier or redirect URI that does not match); sign in again"}

// ErrNonce: the ID token does not carry the nonce the sign-in started with.
var ErrNonce = &AuthError{Reason: "the ID token does not carry this sign-in's nonce; sign in again"}

// client is the OAuth public client of an offered issuer and client id.
func (id *Identity) client(ctx context.Context, issuerURL, clientID string) (*oauth2.Config, error) {
	opts, err := id.trusting(ctx, issuerURL)
	if err != nil {
		return nil, err
	}
	offered := false
	for _, is := range opts {
		offered = offered || is.ClientIDOrAudience() == clientID
	}
	if !offered {
		return nil, ErrNotOffered
	}
	_, op, err := id.discovered(ctx, issuerURL)
	if err != nil {
		return nil, err
	}
	ep := op.Endpoint()
	// A public client (PKCE, no secret) names itself in the form.
	ep.AuthStyle = oauth2.AuthStyleInParams
	return &oauth2.Config{ClientID: clientID, Endpoint: ep}, nil
}

// ExchangeCode finishes the dashboard's authorization code flow: heddle
// redeems the code at the provider's token endpoint with the PKCE
// verifier (the dashboard's Content-Security-Policy lets it talk to its
// own origin only), then verifies the ID token as any other, including
// the nonce. Nothing is created unless the token is accepted.
func (id *Identity) ExchangeCode(ctx context.Context, issuerURL, clientID, code, verifier, redirectURI, nonce string) (SignedIn, error) {
	conf, err := id.client(ctx, issuerURL, clientID)
	if err != nil {
		return SignedIn{}, err
	}
	conf.RedirectURL = redirectURI
	tok, err := conf.Exchange(oidc.ClientContext(ctx, id.cfg.HTTPClient), code, oauth2.VerifierOption(verifier))
	if err != nil {
		return SignedIn{}, grantError(err)
	}
	return id.signedIn(ctx, tok, nonce, "")
}

// Refresh renews a dashboard sign-in with its refresh token.
func (id *Identity) Refresh(ctx context.Context, issuerURL, clientID, refreshToken string) (SignedIn, error) {
	conf, err := id.client(ctx, issuerURL, clientID)
	if err != nil {
		return SignedIn{}, err
	}
	tok, err := conf.TokenSource(oidc.ClientContext(ctx, id.cfg.HTTPClient),
		&oauth2.Token{RefreshToken: refreshToken, Expiry: time.Unix(1, 0)}).Token()
	if err != nil {
		return SignedIn{}, grantError(err)
	}
	return id.signedIn(ctx, tok, "", refreshToken)
}

func grantError(err error) error {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		return ErrGrantRefused
	}
	return fmt.Errorf("%w: %v", ErrUnavailable, err)
}

func (id *Identity) signedIn(ctx context.Context, tok *oauth2.Token, nonce, keepRefresh string) (SignedIn, error) {
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		return SignedIn{}, &AuthError{Reason: "the identity provider answered without an ID token; allow the openid scope for heddle's client"}
	}
	a, idt, err := id.authenticate(ctx, raw, nonce)
	if err != nil {
		return SignedIn{}, err
	}
	refresh := tok.RefreshToken
	if refresh == "" {
		refresh = keepRefresh
	}
	return SignedIn{IDToken: raw, RefreshToken: refresh, Expiry: idt.Expiry, Principal: a.Principal,
		Notes: a.Notes, Created: a.Created, PreviousRole: a.PreviousRole}, nil
}
