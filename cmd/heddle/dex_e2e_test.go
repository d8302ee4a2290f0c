package main

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/demotest"
	"github.com/heddle-io/heddle/internal/identity/dextest"
	"github.com/heddle-io/heddle/internal/identity/identitytest"
)

// TestDexSignIn signs people in to heddle through a real Dex (the release
// scripts/dex.sh pins), set up exactly as docs/sign-in.md says: its
// oauth2 and staticClients sections are the doc's YAML block, and the
// issuer is trusted with the doc's `heddle issuers add` line (only the
// issuer URL differs: Dex runs on a free loopback port). Dex keeps memory
// storage and two static users: ada in heddle-admins, bob in dev. The test
// then:
//   - signs ada in with `heddle login` (the device flow), driving Dex's
//     device and login pages with an HTTP client: the groups scope makes
//     her an admin;
//   - renews her expired sign-in with the refresh token;
//   - signs bob in with `heddle login --browser` (a loopback port Dex
//     accepts because the CLI's client lists no redirect URI): a user;
//   - sends Dex-issued tokens heddle must refuse (tampered, unknown key id,
//     alg none, HS256 keyed with Dex's public key, another client's, a
//     foreign issuer's) and checks each is a 401 that creates nothing.
func TestDexSignIn(t *testing.T) {
	doc := dextest.ReadDoc(t)
	dex := dextest.Start(t, dextest.Binary(t), doc, dextest.Options{
		ExtraClients: []map[string]any{{"id": "other-app", "name": "another app", "public": true}},
		Users: []dextest.User{
			{Email: "ada@example.com", Groups: []string{"heddle-admins", "dev"}},
			{Email: "bob@example.com", Groups: []string{"dev"}},
		},
	})

	srv := newServer(t)
	admin := srv.tenant("acme")
	config := isolate(t)
	line := strings.Replace(doc.IssuerLine, dextest.DocIssuer, dex.Issuer, 1)
	require.NotEqual(t, doc.IssuerLine, line, "the doc's issuer URL is the one replaced")
	out := runShell(t, srv, line, admin, config)
	require.Contains(t, out, "trusting dex ("+dex.Issuer+") for tenant acme")
	require.Contains(t, out, "scopes      openid email profile offline_access groups")

	// The device flow, as ada.
	lines, done := startLogin(t, srv, "login")
	verify := waitFor(t, lines, regexp.MustCompile(`^To sign in, open (\S+)$`))
	dex.Approve(t, verify, "ada@example.com")
	stdout, stderr, code := finish(lines, done)
	require.Zero(t, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	require.Contains(t, stdout, "signed in as ada_at_example.com (admin) in tenant acme with")
	require.NotContains(t, stderr, "note:", "the groups scope brings the claim the rule reads")
	fc, err := readConfig(config)
	require.NoError(t, err)
	require.Equal(t, "heddle-cli", fc.Login.ClientID, "the CLI's own client")
	require.NotEmpty(t, fc.Login.RefreshToken)
	adasToken := fc.Login.IDToken

	r := runCLI(t, "", "--endpoint", "http://"+srv.addr, "issuers", "show", "dex")
	require.Zero(t, r.code, r.stderr)
	require.Contains(t, r.stdout, "1. groups=heddle-admins,role=admin", "an admin's command")

	// Renewal after expiry: the CLI redeems Dex's refresh token.
	fc.Login.Expiry = time.Now().Add(-time.Second)
	require.NoError(t, writeConfig(config, fc))
	r = runCLI(t, "", "--endpoint", "http://"+srv.addr, "issuers", "list")
	require.Zero(t, r.code, r.stderr)
	require.NotContains(t, r.stderr, "renewing your sign-in failed")
	renewed, err := readConfig(config)
	require.NoError(t, err)
	require.NotEqual(t, adasToken, renewed.Login.IDToken)
	require.True(t, renewed.Login.Expiry.After(time.Now()))

	// The authorization code flow on a loopback port, as bob.
	lines, done = startLogin(t, srv, "login", "--browser")
	authURL := waitFor(t, lines, regexp.MustCompile(`^\s+(http://\S+/auth\?\S+)$`))
	require.Contains(t, authURL, "client_id=heddle-cli")
	page := dex.Submit(t, authURL, "bob@example.com")
	require.Contains(t, page, "signed in; you can close this window")
	stdout, stderr, code = finish(lines, done)
	require.Zero(t, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	require.Contains(t, stdout, "signed in as bob_at_example.com (user) in tenant acme")
	require.NotContains(t, stderr, "note:", "bob is in dev: the claim is there, without heddle-admins")

	// Tokens heddle must refuse, made from a real Dex token.
	parts := strings.Split(renewed.Login.IDToken, ".")
	header, payload := decodeSegment(t, parts[0]), decodeSegment(t, parts[1])
	payload["email"] = "mallory@example.com"
	tampered := strings.Join([]string{parts[0], encodeSegment(t, payload), parts[2]}, ".")
	header["kid"] = "not-a-dex-key"
	unknownKid := strings.Join([]string{encodeSegment(t, header), parts[1], parts[2]}, ".")
	none := encodeSegment(t, map[string]any{"alg": "none", "typ": "JWT"}) + "." + parts[1] + "."
	hs256 := hmacWithPublicKey(t, dex, parts[1])
	otherClient := dex.DeviceToken(t, "other-app", "ada@example.com")
	foreign := identitytest.New(t, "heddle-cli")
	foreignClaims := foreign.Claims()
	foreignClaims["iss"], foreignClaims["email"] = dex.Issuer, "mallory@example.com"
	forged := foreign.Token(foreignClaims)
	const untrusted, malformed = "not from an identity provider heddle trusts", "neither an API key"
	for _, c := range []struct{ name, token, reason string }{
		{"tampered", tampered, untrusted},
		{"unknown kid", unknownKid, untrusted},
		{"alg none", none, malformed},
		{"HS256 with the public key", hs256, malformed},
		{"another client's", otherClient, "not issued for heddle"},
		{"signed by another key", forged, untrusted},
	} {
		var body map[string]map[string]any
		status := demotest.Call(t, "http://"+srv.addr, c.token, http.MethodGet, "/v1/me", nil, &body)
		require.Equal(t, http.StatusUnauthorized, status, "%s: %v", c.name, body)
		require.Contains(t, body["error"]["message"], c.reason, c.name)
	}
	var users struct {
		Items []struct {
			Name string `json:"name"`
			Role string `json:"role"`
		} `json:"items"`
	}
	require.Equal(t, http.StatusOK, demotest.Call(t, "http://"+srv.addr, admin, http.MethodGet, "/v1/users", nil, &users))
	got := map[string]string{}
	for _, u := range users.Items {
		got[u.Name] = u.Role
	}
	require.Equal(t, map[string]string{"ann": "admin", "ada_at_example.com": "admin", "bob_at_example.com": "user"}, got,
		"the sign-ins added ada and bob with their roles, and no refused token added anyone")
	audit := srv.must(admin, "audit", "-o", "json")
	require.Equal(t, 2, strings.Count(audit, `"route": "(sign-in)"`), "both users' creation is audited:\n%s", audit)
}

// hmacWithPublicKey signs payload with HS256 keyed by the DER of Dex's
// RSA public key: the algorithm confusion a verifier that trusts the
// header's alg would accept.
func hmacWithPublicKey(t *testing.T, d *dextest.Dex, payload string) string {
	t.Helper()
	var set jose.JSONWebKeySet
	require.Equal(t, http.StatusOK, demotest.Call(t, d.Issuer, "", http.MethodGet, "/keys", nil, &set))
	require.NotEmpty(t, set.Keys)
	der, err := x509.MarshalPKIXPublicKey(set.Keys[0].Key)
	require.NoError(t, err)
	head := encodeSegment(t, map[string]any{"alg": "HS256", "typ": "JWT", "kid": set.Keys[0].KeyID})
	mac := hmac.New(sha256.New, der)
	mac.Write([]byte(head + "." + payload))
	return head + "." + payload + "." + base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

func decodeSegment(t *testing.T, s string) map[string]any {
	t.Helper()
	raw, err := base64.RawURLEncoding.DecodeString(s)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(raw, &m))
	return m
}

func encodeSegment(t *testing.T, m map[string]any) string {
	t.Helper()
	raw, err := json.Marshal(m)
	require.NoError(t, err)
	return base64.RawURLEncoding.EncodeToString(raw)
}

// runShell runs one command line of the docs with the heddle under test on
// PATH, as TestSignInDocCommands does.
func runShell(t *testing.T, srv *server, line, key, config string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "bin")
	require.NoError(t, os.MkdirAll(bin, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(bin, "heddle"),
		[]byte("#!/bin/sh\n"+runMainEnv+"=1 exec "+os.Args[0]+` "$@"`+"\n"), 0o755))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", line)
	cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), "HEDDLE_ENDPOINT=http://"+srv.addr,
		"HEDDLE_KEY="+key, "HEDDLE_CONFIG="+config)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	require.NoError(t, cmd.Run(), "%s\nstdout:\n%s\nstderr:\n%s", line, out.String(), errOut.String())
	return out.String()
}

type loginRun struct {
	code   int
	stdout string
}

// startLogin runs heddle with args in the background; its stderr comes
// line by line.
func startLogin(t *testing.T, srv *server, args ...string) (*lineWriter, <-chan loginRun) {
	t.Helper()
	stderr := newLineWriter()
	done := make(chan loginRun, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	go func() {
		var stdout bytes.Buffer
		code := run(ctx, newRootCommand(), append([]string{"--endpoint", "http://" + srv.addr}, args...), strings.NewReader(""), &stdout, stderr)
		_ = stderr.w.Close()
		done <- loginRun{code, stdout.String()}
	}()
	return stderr, done
}

// waitFor returns the first group of the first stderr line matching re.
func waitFor(t *testing.T, lines *lineWriter, re *regexp.Regexp) string {
	t.Helper()
	var seen []string
	for line := range lines.lines {
		if m := re.FindStringSubmatch(line); m != nil {
			return m[1]
		}
		seen = append(seen, line)
	}
	t.Fatalf("no line matches %s in:\n%s", re, strings.Join(seen, "\n"))
	return ""
}

// finish reads the rest of stderr and waits for the command.
func finish(lines *lineWriter, done <-chan loginRun) (stdout, stderr string, code int) {
	var rest strings.Builder
	for line := range lines.lines {
		rest.WriteString(line + "\n")
	}
	r := <-done
	return r.stdout, rest.String(), r.code
}
