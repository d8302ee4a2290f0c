package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/spf13/cobra"
	"golang.org/x/oauth2"

	"github.com/heddle-io/heddle/internal/api"
)

// loginTokens are what `heddle login` keeps in the config file (mode
// 0600): the ID token the CLI sends as its bearer, and the refresh token
// that renews it.
type loginTokens struct {
	Issuer       string    `json:"issuer"`
	ClientID     string    `json:"clientId"`
	IDToken      string    `json:"idToken"`
	RefreshToken string    `json:"refreshToken,omitempty"`
	Expiry       time.Time `json:"expiry"`
}

// refreshBefore: an ID token this close to its expiry is renewed before
// it is sent, so it does not expire in flight.
const refreshBefore = time.Minute

// loginScopes: openid for the ID token, email and profile for the claims
// heddle maps, offline_access for a refresh token. GET /v1/signin names
// the scopes to ask for (these and the issuer's own); these are for a
// server that names none.
var loginScopes = []string{oidc.ScopeOpenID, "email", "profile", oidc.ScopeOfflineAccess}

// refreshTimeout bounds a renewal at the provider's token endpoint: a
// command must not wait minutes on a provider that does not answer while
// the ID token it holds is still valid. A variable for the tests, which
// do not wait that long.
var refreshTimeout = 10 * time.Second

func newLoginCommand(a *app) *cobra.Command {
	var issuer string
	var browser bool
	cmd := &cobra.Command{
		Use:   "login",
		Short: "Sign in with your identity provider and keep the tokens in the config file",
		Long: `Sign in with an identity provider heddle trusts (GET /v1/signin lists them;
an admin adds one with heddle issuers add). By default the CLI uses the
provider's device flow: it prints a URL and a code to enter in any browser.
With --browser it uses the authorization code flow with PKCE instead,
receiving the answer on a loopback address (http://127.0.0.1:<port>/callback;
register that redirect URI with the provider).

The ID token and the refresh token go to the config file (mode 0600); the
CLI renews the ID token with the refresh token when it is about to expire.
A key given with --key or HEDDLE_KEY still wins over the sign-in; heddle
logout forgets it.`,
		Example: `  heddle login
  heddle login --issuer https://idp.example.com/realms/acme --browser`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.login(cmd, issuer, browser)
		},
	}
	cmd.Flags().StringVar(&issuer, "issuer", "", "the issuer URL or label to sign in with, when heddle trusts several")
	cmd.Flags().BoolVar(&browser, "browser", false, "use the authorization code flow with PKCE on a loopback redirect instead of the device flow")
	return cmd
}

func newLogoutCommand(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "logout",
		Short: "Forget the tokens of heddle login",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			path, err := configPath()
			if err != nil {
				return err
			}
			fc, err := readConfig(path)
			if err != nil {
				return err
			}
			if fc.Login == nil {
				fmt.Fprintln(cmd.OutOrStdout(), "not signed in")
				return nil
			}
			fc.Login = nil
			if err := writeConfig(path, fc); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "signed out (removed the tokens from %s)\n", path)
			return nil
		},
	}
}

// oidcContext makes go-oidc and oauth2 use the app's HTTP client, or one
// with a transport of its own: left alone they use http.DefaultClient,
// whose connections anything else in the process may close under a request
// in flight (httptest.Server.Close does, in tests that run the CLI).
func (a *app) oidcContext(ctx context.Context) context.Context {
	if a.httpClient != nil {
		return oidc.ClientContext(ctx, a.httpClient)
	}
	return oidc.ClientContext(ctx, oidcHTTP)
}

var oidcHTTP = &http.Client{Timeout: 5 * time.Minute, Transport: http.DefaultTransport.(*http.Transport).Clone()}

func (a *app) login(cmd *cobra.Command, choice string, browser bool) error {
	s, err := a.resolveSettings(cmd)
	if err != nil {
		return err
	}
	ctx := a.oidcContext(cmd.Context())
	anon := NewClient(s.Endpoint, "")
	if a.httpClient != nil {
		anon.HTTP = a.httpClient
	}
	raw, err := anon.JSON(ctx, http.MethodGet, "/v1/signin", nil, nil)
	if err != nil {
		return err
	}
	options, err := decodeBody[api.SignInOptions](raw)
	if err != nil {
		return err
	}
	opt, err := chooseSignIn(options.Items, choice)
	if err != nil {
		return err
	}
	// The CLI's own client, when the issuer has one (a client per
	// surface): the refresh token it gets is the CLI's alone.
	if opt.CLIClientID != "" {
		opt.ClientID = opt.CLIClientID
	}
	provider, err := oidc.NewProvider(ctx, opt.Issuer)
	if err != nil {
		return fmt.Errorf("reading the discovery document of %s: %w", opt.Issuer, err)
	}
	conf := publicClient(opt.ClientID, provider)
	if len(opt.Scopes) > 0 {
		conf.Scopes = opt.Scopes
	}
	var device struct {
		URL string `json:"device_authorization_endpoint"`
	}
	_ = provider.Claims(&device)
	conf.Endpoint.DeviceAuthURL = device.URL
	var tok *oauth2.Token
	switch {
	case browser:
		tok, err = a.loginBrowser(ctx, cmd.ErrOrStderr(), conf)
	case device.URL == "":
		return fmt.Errorf("%s offers no device flow; sign in with `heddle login --browser`", opt.Issuer)
	default:
		tok, err = loginDevice(ctx, cmd.ErrOrStderr(), conf)
	}
	if err != nil {
		return err
	}
	saved, err := verifiedTokens(ctx, provider, opt, tok, "")
	if err != nil {
		return err
	}
	// Ask heddle who the token names before keeping it, so a sign-in that
	// maps to no tenant says so now, with heddle's reason.
	who := NewClient(s.Endpoint, saved.IDToken)
	if a.httpClient != nil {
		who.HTTP = a.httpClient
	}
	raw, err = who.JSON(ctx, http.MethodGet, "/v1/me", nil, nil)
	if err != nil {
		return err
	}
	me, err := decodeBody[api.Me](raw)
	if err != nil {
		return err
	}
	fc, err := readConfig(s.ConfigPath)
	if err != nil {
		return err
	}
	fc.Login = saved
	if err := writeConfig(s.ConfigPath, fc); err != nil {
		return err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "signed in as %s (%s) in tenant %s with %s; the tokens are in %s\n", me.User, me.Role, me.Tenant, opt.Label, s.ConfigPath)
	for _, n := range me.Notes {
		fmt.Fprintf(cmd.ErrOrStderr(), "note: %s\n", n)
	}
	return nil
}

// publicClient is the OAuth client the CLI is: public (no secret), so it
// names itself with client_id in the form, as RFC 6749 section 2.3 asks of
// public clients, rather than in a Basic header.
func publicClient(clientID string, provider *oidc.Provider) *oauth2.Config {
	ep := provider.Endpoint()
	ep.AuthStyle = oauth2.AuthStyleInParams
	return &oauth2.Config{ClientID: clientID, Endpoint: ep, Scopes: loginScopes}
}

// chooseSignIn picks the provider named by choice (its issuer URL or
// label), or the only one.
func chooseSignIn(options []api.SignInOption, choice string) (api.SignInOption, error) {
	if len(options) == 0 {
		return api.SignInOption{}, errors.New("this heddle trusts no identity provider yet: an admin adds one with `heddle issuers add`; use an API key meanwhile")
	}
	var names []string
	for _, o := range options {
		if choice == "" && len(options) == 1 {
			return o, nil
		}
		if choice != "" && (o.Issuer == choice || strings.EqualFold(o.Label, choice)) {
			return o, nil
		}
		names = append(names, fmt.Sprintf("%s (%s)", o.Issuer, o.Label))
	}
	if choice == "" {
		return api.SignInOption{}, fmt.Errorf("heddle trusts several identity providers; choose one with --issuer: %s", strings.Join(names, ", "))
	}
	return api.SignInOption{}, fmt.Errorf("heddle does not offer sign-in with %q; choose one of: %s", choice, strings.Join(names, ", "))
}

func loginDevice(ctx context.Context, out io.Writer, conf *oauth2.Config) (*oauth2.Token, error) {
	da, err := conf.DeviceAuth(ctx)
	if err != nil {
		return nil, fmt.Errorf("starting the device flow: %w", err)
	}
	if da.VerificationURIComplete != "" {
		fmt.Fprintf(out, "To sign in, open %s\n(or open %s and enter the code %s)\n", da.VerificationURIComplete, da.VerificationURI, da.UserCode)
	} else {
		fmt.Fprintf(out, "To sign in, open %s and enter the code %s\n", da.VerificationURI, da.UserCode)
	}
	fmt.Fprintln(out, "Waiting for you to approve...")
	tok, err := conf.DeviceAccessToken(ctx, da)
	if err != nil {
		return nil, fmt.Errorf("the sign-in did not complete: %w", err)
	}
	return tok, nil
}

// loginBrowser runs the authorization code flow with PKCE, receiving the
// code on a loopback listener of its own (any free port).
func (a *app) loginBrowser(ctx context.Context, out io.Writer, conf *oauth2.Config) (*oauth2.Token, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listening for the sign-in's answer: %w", err)
	}
	defer ln.Close()
	conf.RedirectURL = "http://" + ln.Addr().String() + "/callback"
	verifier, state, nonce := oauth2.GenerateVerifier(), randomString(), randomString()
	type answer struct {
		code string
		err  error
	}
	answers := make(chan answer, 1)
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/callback" {
			http.NotFound(w, r)
			return
		}
		q := r.URL.Query()
		var ans answer
		switch {
		case q.Get("state") != state:
			ans.err = errors.New("the sign-in's answer carries the wrong state; start heddle login again")
		case q.Get("error") != "":
			ans.err = fmt.Errorf("the identity provider refused the sign-in: %s %s", q.Get("error"), q.Get("error_description"))
		default:
			ans.code = q.Get("code")
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		if ans.err != nil {
			fmt.Fprintf(w, "<p>heddle: %s</p>", html.EscapeString(ans.err.Error()))
		} else {
			fmt.Fprint(w, "<p>heddle: signed in; you can close this window.</p>")
		}
		select {
		case answers <- ans:
		default:
		}
	})}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	url := conf.AuthCodeURL(state, oauth2.S256ChallengeOption(verifier), oidc.Nonce(nonce))
	fmt.Fprintf(out, "To sign in, open this URL in a browser on this machine:\n\n  %s\n\nWaiting for the answer on %s...\n", url, conf.RedirectURL)
	var ans answer
	select {
	case ans = <-answers:
	case <-ctx.Done():
		return nil, fmt.Errorf("the sign-in did not complete: %w", ctx.Err())
	}
	if ans.err != nil {
		return nil, ans.err
	}
	tok, err := conf.Exchange(ctx, ans.code, oauth2.VerifierOption(verifier))
	if err != nil {
		return nil, fmt.Errorf("exchanging the sign-in's code: %w", err)
	}
	return withNonce(tok, nonce), nil
}

// withNonce remembers the nonce the ID token must carry.
func withNonce(tok *oauth2.Token, nonce string) *oauth2.Token {
	return tok.WithExtra(map[string]any{"id_token": tok.Extra("id_token"), "heddle_nonce": nonce})
}

func randomString() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// verifiedTokens checks the ID token of tok with go-oidc (issuer,
// audience, signature, expiry, and the nonce of a browser sign-in) and
// returns what the config file keeps. A refresh answer may lack a new
// refresh token: keepRefresh is used then.
func verifiedTokens(ctx context.Context, provider *oidc.Provider, opt api.SignInOption, tok *oauth2.Token, keepRefresh string) (*loginTokens, error) {
	raw, ok := tok.Extra("id_token").(string)
	if !ok || raw == "" {
		return nil, fmt.Errorf("%s answered without an ID token; is the openid scope allowed for client %s?", opt.Issuer, opt.ClientID)
	}
	idt, err := provider.Verifier(&oidc.Config{ClientID: opt.ClientID}).Verify(ctx, raw)
	if err != nil {
		return nil, fmt.Errorf("the ID token from %s does not verify: %w", opt.Issuer, err)
	}
	if nonce, _ := tok.Extra("heddle_nonce").(string); nonce != "" && idt.Nonce != nonce {
		return nil, fmt.Errorf("the ID token from %s carries the wrong nonce; sign in again", opt.Issuer)
	}
	refresh := tok.RefreshToken
	if refresh == "" {
		refresh = keepRefresh
	}
	return &loginTokens{Issuer: opt.Issuer, ClientID: opt.ClientID, IDToken: raw, RefreshToken: refresh, Expiry: idt.Expiry}, nil
}

// freshIDToken returns the signed-in ID token, renewed with the refresh
// token (and written back to the config file) when it is about to expire.
// A renewal that fails (within refreshTimeout) while the ID token is still
// valid uses the token as it is and says so on stderr: the command works,
// and the next one tries again.
func (a *app) freshIDToken(cmd *cobra.Command, s settings) (string, error) {
	l := s.Login
	if time.Until(l.Expiry) > refreshBefore {
		return l.IDToken, nil
	}
	left := time.Until(l.Expiry)
	if l.RefreshToken == "" {
		if left > 0 {
			return l.IDToken, nil
		}
		return "", errors.New("your sign-in has expired; run `heddle login` again")
	}
	fresh, err := a.renew(cmd.Context(), l)
	if err != nil {
		if left > 0 {
			fmt.Fprintf(cmd.ErrOrStderr(), "heddle: %v; using the current sign-in, valid for another %s\n", err, left.Round(time.Second))
			return l.IDToken, nil
		}
		return "", fmt.Errorf("%w; run `heddle login` again", err)
	}
	fc, err := readConfig(s.ConfigPath)
	if err != nil {
		return "", err
	}
	fc.Login = fresh
	if err := writeConfig(s.ConfigPath, fc); err != nil {
		return "", fmt.Errorf("keeping the renewed sign-in: %w", err)
	}
	return fresh.IDToken, nil
}

// renew redeems l's refresh token at the provider, within
// refreshTimeout.
func (a *app) renew(parent context.Context, l *loginTokens) (*loginTokens, error) {
	ctx, cancel := context.WithTimeout(parent, refreshTimeout)
	defer cancel()
	ctx = a.oidcContext(ctx)
	provider, err := oidc.NewProvider(ctx, l.Issuer)
	if err != nil {
		return nil, fmt.Errorf("renewing your sign-in: reading the discovery document of %s: %w", l.Issuer, err)
	}
	conf := publicClient(l.ClientID, provider)
	tok, err := conf.TokenSource(ctx, &oauth2.Token{RefreshToken: l.RefreshToken, Expiry: time.Now().Add(-time.Hour)}).Token()
	if err != nil {
		return nil, fmt.Errorf("renewing your sign-in failed (%w)", err)
	}
	return verifiedTokens(ctx, provider, api.SignInOption{Issuer: l.Issuer, ClientID: l.ClientID}, tok, l.RefreshToken)
}
