package main

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/bcrypt"
	"golang.org/x/oauth2"
	"sigs.k8s.io/yaml"

	"github.com/heddle-io/heddle/internal/demotest"
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
	dexBin := buildDex(t)
	docYAML, issuerLine := dexDoc(t)
	dex := startDex(t, dexBin, docYAML)

	srv := newServer(t)
	admin := srv.tenant("acme")
	config := isolate(t)
	line := strings.Replace(issuerLine, "http://127.0.0.1:5556/dex", dex.issuer, 1)
	require.NotEqual(t, issuerLine, line, "the doc's issuer URL is the one replaced")
	out := runShell(t, srv, line, admin, config)
	require.Contains(t, out, "trusting dex ("+dex.issuer+") for tenant acme")
	require.Contains(t, out, "scopes      openid email profile offline_access groups")

	// The device flow, as ada.
	lines, done := startLogin(t, srv, "login")
	verify := waitFor(t, lines, regexp.MustCompile(`^To sign in, open (\S+)$`))
	dex.approve(t, verify, "ada@example.com")
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
	page := dex.signIn(t, authURL, "bob@example.com")
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
	otherClient := dex.deviceToken(t, "other-app", "ada@example.com")
	foreign := identitytest.New(t, "heddle-cli")
	foreignClaims := foreign.Claims()
	foreignClaims["iss"], foreignClaims["email"] = dex.issuer, "mallory@example.com"
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

// buildDex returns the pinned Dex, building it with scripts/dex.sh when
// .ci/run has not (the first build on a machine takes minutes).
func buildDex(t *testing.T) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "../../scripts/dex.sh", "build")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	require.NoError(t, cmd.Run(), "building Dex with scripts/dex.sh:\n%s", errOut.String())
	bin := strings.TrimSpace(out.String())
	require.FileExists(t, bin)
	return bin
}

// dexDoc returns docs/sign-in.md's Dex configuration block and its
// `heddle issuers add dex` line.
func dexDoc(t *testing.T) (map[string]any, string) {
	t.Helper()
	data, err := os.ReadFile("../../docs/sign-in.md")
	require.NoError(t, err)
	doc := string(data)
	start := strings.Index(doc, "### Dex")
	require.GreaterOrEqual(t, start, 0, "docs/sign-in.md has a Dex section")
	doc = doc[start:]
	y := strings.Index(doc, "```yaml\n")
	require.GreaterOrEqual(t, y, 0)
	block := doc[y+len("```yaml\n"):]
	block = block[:strings.Index(block, "```")]
	var cfg map[string]any
	require.NoError(t, yaml.Unmarshal([]byte(block), &cfg))
	var line string
	for _, b := range docBlocks(t, "../../docs/sign-in.md") {
		if len(b) == 1 && strings.HasPrefix(b[0], "heddle issuers add dex ") {
			line = b[0]
		}
	}
	require.NotEmpty(t, line, "docs/sign-in.md shows how to trust Dex")
	return cfg, line
}

type dexServer struct {
	issuer string
	client *http.Client // keeps Dex's cookies, follows redirects
}

// startDex runs Dex on a free loopback port with the doc's clients, a
// third client of another app, and two users (password "password").
func startDex(t *testing.T, bin string, doc map[string]any) *dexServer {
	t.Helper()
	hash, err := bcrypt.GenerateFromPassword([]byte("password"), bcrypt.DefaultCost)
	require.NoError(t, err)
	clients := doc["staticClients"].([]any)
	clients = append(clients, map[string]any{"id": "other-app", "name": "another app", "public": true})
	dir := t.TempDir()
	// A port free now may be taken before Dex binds it (other tests and
	// runs share the machine): a few tries.
	for attempt := 0; ; attempt++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		addr := ln.Addr().String()
		require.NoError(t, ln.Close())
		issuer := "http://" + addr + "/dex"
		cfg := map[string]any{
			"issuer":           issuer,
			"storage":          map[string]any{"type": "memory"},
			"web":              map[string]any{"http": addr},
			"logger":           map[string]any{"level": "info"},
			"oauth2":           doc["oauth2"],
			"staticClients":    clients,
			"enablePasswordDB": true,
			"staticPasswords": []map[string]any{
				{"email": "ada@example.com", "hash": string(hash), "username": "ada", "userID": "u-ada", "groups": []string{"heddle-admins", "dev"}},
				{"email": "bob@example.com", "hash": string(hash), "username": "bob", "userID": "u-bob", "groups": []string{"dev"}},
			},
		}
		raw, err := yaml.Marshal(cfg)
		require.NoError(t, err)
		path := filepath.Join(dir, "config.yaml")
		require.NoError(t, os.WriteFile(path, raw, 0o600))
		logPath := filepath.Join(dir, fmt.Sprintf("dex-%d.log", attempt))
		log, err := os.Create(logPath)
		require.NoError(t, err)
		cmd := exec.Command(bin, "serve", path)
		cmd.Stdout, cmd.Stderr = log, log
		// Ends with the test binary, whatever ends it.
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		require.NoError(t, cmd.Start())
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(exited); _ = log.Close() }()
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			<-exited
			if t.Failed() {
				data, _ := os.ReadFile(logPath)
				t.Logf("Dex's log:\n%s", data)
			}
		})
		if waitDiscovery(issuer, exited) {
			jar, _ := cookiejar.New(nil)
			return &dexServer{issuer: issuer, client: &http.Client{Jar: jar, Timeout: 30 * time.Second,
				Transport: http.DefaultTransport.(*http.Transport).Clone()}}
		}
		data, _ := os.ReadFile(logPath)
		require.Less(t, attempt, 2, "Dex did not start:\n%s", data)
	}
}

// waitDiscovery reports whether Dex serves its discovery document before
// it exits or 30 s pass.
func waitDiscovery(issuer string, exited <-chan struct{}) bool {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return false
		default:
		}
		resp, err := testHTTP.Get(issuer + "/.well-known/openid-configuration")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return true
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return false
}

// submit follows Dex's pages from u as a person would: each page with a
// form is filled in (the user code is already there; login and password
// are the person's) and posted, until a page without one. It returns the
// last page.
func (d *dexServer) submit(t *testing.T, u, email string) string {
	t.Helper()
	formRe := regexp.MustCompile(`(?s)<form[^>]*method="post"[^>]*action="([^"]*)"[^>]*>(.*?)</form>`)
	inputRe := regexp.MustCompile(`<input[^>]*>`)
	attr := func(tag, name string) string {
		m := regexp.MustCompile(`\s` + name + `="([^"]*)"`).FindStringSubmatch(tag)
		if m == nil {
			return ""
		}
		return html.UnescapeString(m[1])
	}
	resp, err := d.client.Get(u)
	require.NoError(t, err)
	for range 8 {
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		require.Less(t, resp.StatusCode, 400, "%s answered %s:\n%s", resp.Request.URL, resp.Status, body)
		m := formRe.FindStringSubmatch(string(body))
		if m == nil {
			return string(body)
		}
		form := url.Values{}
		for _, in := range inputRe.FindAllString(m[2], -1) {
			switch name := attr(in, "name"); name {
			case "":
			case "login":
				form.Set(name, email)
			case "password":
				form.Set(name, "password")
			default:
				form.Set(name, attr(in, "value"))
			}
		}
		action, err := resp.Request.URL.Parse(html.UnescapeString(m[1]))
		require.NoError(t, err)
		resp, err = d.client.PostForm(action.String(), form)
		require.NoError(t, err)
	}
	t.Fatalf("Dex's pages did not end within 8 forms, at %s", resp.Request.URL)
	return ""
}

// approve enters the device flow's code and signs in as email.
func (d *dexServer) approve(t *testing.T, verificationURL, email string) {
	t.Helper()
	page := d.submit(t, verificationURL, email)
	require.Contains(t, page, "Login Successful", "Dex's device flow ends on its success page")
}

// signIn opens the CLI's authorization URL and signs in as email; Dex
// sends the browser on to the CLI's loopback callback, whose page it
// returns.
func (d *dexServer) signIn(t *testing.T, authURL, email string) string {
	t.Helper()
	return d.submit(t, authURL, email)
}

// deviceToken signs email in to another client with the device flow and
// returns its ID token.
func (d *dexServer) deviceToken(t *testing.T, clientID, email string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conf := &oauth2.Config{ClientID: clientID, Scopes: []string{"openid", "email"}, Endpoint: oauth2.Endpoint{
		DeviceAuthURL: d.issuer + "/device/code", TokenURL: d.issuer + "/token", AuthStyle: oauth2.AuthStyleInParams}}
	ctx = context.WithValue(ctx, oauth2.HTTPClient, testHTTP)
	da, err := conf.DeviceAuth(ctx)
	require.NoError(t, err)
	d.approve(t, da.VerificationURIComplete, email)
	tok, err := conf.DeviceAccessToken(ctx, da)
	require.NoError(t, err)
	raw, _ := tok.Extra("id_token").(string)
	require.NotEmpty(t, raw)
	return raw
}

// hmacWithPublicKey signs payload with HS256 keyed by the DER of Dex's
// RSA public key: the algorithm confusion a verifier that trusts the
// header's alg would accept.
func hmacWithPublicKey(t *testing.T, d *dexServer, payload string) string {
	t.Helper()
	var set jose.JSONWebKeySet
	require.Equal(t, http.StatusOK, demotest.Call(t, d.issuer, "", http.MethodGet, "/keys", nil, &set))
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
