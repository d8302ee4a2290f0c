package main

import (
	"bufio"
	"context"
	"io"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/heddle-io/heddle/internal/identity/identitytest"
)

// signInEnv is a heddle server whose tenant acme trusts a test identity
// provider (added through heddle issuers add), with the CLI's config file
// isolated.
type signInEnv struct {
	srv    *server
	idp    *identitytest.Issuer
	admin  string // acme's admin key
	config string // the config file
}

func newSignInEnv(t *testing.T) *signInEnv {
	srv := newServer(t)
	e := &signInEnv{srv: srv, idp: identitytest.New(t, "heddle-cli"), admin: srv.tenant("acme")}
	e.config = isolate(t)
	out := srv.must(e.admin, "issuers", "add", "corp", "--url", e.idp.URL, "--audience", "heddle-cli", "--display-name", "Corp SSO",
		"--rule", "groups=heddle-admins,role=admin", "--rule", "emailDomain=example.com,role=user")
	require.Contains(t, out, "trusting corp ("+e.idp.URL+") for tenant acme")
	e.idp.SetUser(map[string]any{"sub": "1", "email": "ada@example.com", "email_verified": true, "groups": []string{"heddle-admins"}})
	return e
}

// heddle runs the CLI with the endpoint only: the key comes from the
// config file, that is from heddle login.
func (e *signInEnv) heddle(t *testing.T, args ...string) result {
	t.Helper()
	return runCLI(t, "", append([]string{"--endpoint", "http://" + e.srv.addr}, args...)...)
}

func (e *signInEnv) saved(t *testing.T) fileConfig {
	t.Helper()
	info, err := os.Stat(e.config)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), info.Mode().Perm(), "the config file holds tokens")
	fc, err := readConfig(e.config)
	require.NoError(t, err)
	return fc
}

func TestLoginDeviceFlowAndRefresh(t *testing.T) {
	e := newSignInEnv(t)
	r := e.heddle(t, "login")
	require.Zero(t, r.code, "stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	require.Contains(t, r.stderr, "enter the code WDJB-MJHT")
	require.Contains(t, r.stdout, "signed in as ada_at_example.com (admin) in tenant acme with Corp SSO")
	fc := e.saved(t)
	require.NotNil(t, fc.Login)
	require.Equal(t, e.idp.URL, fc.Login.Issuer)
	require.NotEmpty(t, fc.Login.RefreshToken)

	// The token works as the CLI's credentials: an admin's command.
	r = e.heddle(t, "issuers", "list")
	require.Zero(t, r.code, r.stderr)
	require.Contains(t, r.stdout, "corp")

	// An ID token about to expire is renewed with the refresh token, and
	// the renewed one kept.
	fc.Login.Expiry = time.Now().Add(10 * time.Second)
	first := fc.Login.IDToken
	require.NoError(t, writeConfig(e.config, fc))
	r = e.heddle(t, "issuers", "show", "corp")
	require.Zero(t, r.code, r.stderr)
	require.Contains(t, r.stdout, "groups=heddle-admins,role=admin")
	renewed := e.saved(t)
	require.NotEqual(t, first, renewed.Login.IDToken)
	require.True(t, renewed.Login.Expiry.After(time.Now().Add(5*time.Minute)))

	// A refresh token the provider no longer honours says what to do.
	renewed.Login.Expiry, renewed.Login.RefreshToken = time.Now(), "revoked"
	require.NoError(t, writeConfig(e.config, renewed))
	r = e.heddle(t, "issuers", "list")
	require.NotZero(t, r.code)
	require.Contains(t, r.stderr, "run `heddle login` again")

	r = e.heddle(t, "logout")
	require.Zero(t, r.code, r.stderr)
	require.Nil(t, e.saved(t).Login)
	r = e.heddle(t, "issuers", "list")
	require.NotZero(t, r.code)
	require.Contains(t, r.stderr, "heddle login")
}

// lineWriter hands each line written to it to lines.
type lineWriter struct {
	w     *io.PipeWriter
	lines chan string
}

func newLineWriter() *lineWriter {
	pr, pw := io.Pipe()
	lw := &lineWriter{w: pw, lines: make(chan string, 100)}
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			lw.lines <- sc.Text()
		}
		close(lw.lines)
	}()
	return lw
}

func (l *lineWriter) Write(p []byte) (int, error) { return l.w.Write(p) }

func TestLoginBrowserFlow(t *testing.T) {
	e := newSignInEnv(t)
	e.idp.SetUser(map[string]any{"sub": "2", "email": "bea@example.com"})
	stderr := newLineWriter()
	var stdout strings.Builder
	done := make(chan int, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	go func() {
		done <- run(ctx, newRootCommand(), []string{"--endpoint", "http://" + e.srv.addr, "login", "--browser"}, strings.NewReader(""), &stdout, stderr)
		_ = stderr.w.Close()
	}()
	// The person opens the printed URL: the provider approves and sends the
	// browser to the CLI's loopback callback.
	urlPattern := regexp.MustCompile(`^\s+(http://\S+/authorize\?\S+)$`)
	var authURL string
	for line := range stderr.lines {
		if m := urlPattern.FindStringSubmatch(line); m != nil {
			authURL = m[1]
			break
		}
	}
	require.NotEmpty(t, authURL)
	require.Contains(t, authURL, "code_challenge_method=S256")
	require.Contains(t, authURL, "redirect_uri=http%3A%2F%2F127.0.0.1%3A")
	resp, err := testHTTP.Get(authURL)
	require.NoError(t, err)
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Contains(t, string(page), "signed in; you can close this window")
	var rest strings.Builder
	for line := range stderr.lines { // until the command ends
		rest.WriteString(line + "\n")
	}
	require.Zero(t, <-done, "stdout:\n%s\nstderr:\n%s", stdout.String(), rest.String())
	require.Contains(t, stdout.String(), "signed in as bea_at_example.com (user) in tenant acme")
	require.NotNil(t, e.saved(t).Login)
}

func TestLoginRefusedSavesNothing(t *testing.T) {
	e := newSignInEnv(t)
	e.idp.SetUser(map[string]any{"sub": "3", "email": "eve@elsewhere.org"})
	r := e.heddle(t, "login")
	require.NotZero(t, r.code)
	require.Contains(t, r.stderr, "no rule maps you to a heddle tenant")
	_, err := os.Stat(e.config)
	require.True(t, os.IsNotExist(err), "no tokens are kept for a refused sign-in")

	r = e.heddle(t, "login", "--issuer", "https://nope.example.com")
	require.NotZero(t, r.code)
	require.Contains(t, r.stderr, "does not offer sign-in with")

	// The issuer's removal ends sign-in at once.
	e.srv.must(e.admin, "issuers", "remove", "corp")
	r = e.heddle(t, "login")
	require.NotZero(t, r.code)
	require.Contains(t, r.stderr, "trusts no identity provider yet")
}

func TestIssuersAddFromFileAndRules(t *testing.T) {
	srv := newServer(t)
	admin := srv.tenant("acme")
	isolate(t)
	dir := t.TempDir()
	doc := map[string]any{"name": "dex", "url": "http://127.0.0.1:5556/dex", "audience": "heddle", "userClaim": "preferred_username",
		"rules": []map[string]any{{"claim": "groups", "value": "ops", "role": "admin"}}}
	raw, err := yaml.Marshal(doc)
	require.NoError(t, err)
	writeFile(t, dir+"/issuer.yaml", string(raw))
	out := srv.must(admin, "issuers", "add", "-f", dir+"/issuer.yaml")
	require.Contains(t, out, "user claim  preferred_username")
	out = srv.must(admin, "issuers", "add", "dex", "--url", "http://127.0.0.1:5556/dex", "--audience", "heddle", "--rule", "role=user", "--replace")
	require.Contains(t, out, "updated dex")
	out = srv.must(admin, "issuers", "list")
	require.Regexp(t, `dex\s+http://127.0.0.1:5556/dex\s+heddle\s+email\s+1`, out)

	r := srv.cli(admin, "issuers", "add", "x", "--url", "https://idp", "--audience", "a", "--rule", "groups=a,team=b,role=user")
	require.NotZero(t, r.code)
	require.Contains(t, r.stderr, "tests two claims")
	r = srv.cli(admin, "issuers", "add", "x", "--url", "https://idp", "--audience", "a", "--rule", "tenant=other,role=admin")
	require.NotZero(t, r.code)
	require.Contains(t, r.stderr, "rules[0].tenant")
	r = srv.cli(admin, "issuers", "remove", "nope")
	require.NotZero(t, r.code)
	require.Contains(t, r.stderr, "does not exist")
}
