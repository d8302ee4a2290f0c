// Package dextest runs a real Dex for heddle's end-to-end sign-in tests:
// the release scripts/dex/go.mod pins (built by scripts/dex.sh), set up
// with the clients docs/sign-in.md gives, memory storage, static users in
// groups, and its issuer on a free loopback port. It also drives Dex's
// device, login and approval pages over HTTP, as a person's browser would.
package dextest

import (
	"bytes"
	"context"
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

	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/bcrypt"
	"golang.org/x/oauth2"
	"sigs.k8s.io/yaml"
)

// Password is every static user's password.
const Password = "password"

// DocIssuer is the issuer URL docs/sign-in.md writes; the tests put the
// running Dex's in its place.
const DocIssuer = "http://127.0.0.1:5556/dex"

// root is the repository's top directory, found from the working
// directory (a package's, under go test).
func root(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	require.NoError(t, err)
	for {
		if _, err := os.Stat(filepath.Join(dir, "scripts", "dex.sh")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		require.NotEqual(t, dir, parent, "no scripts/dex.sh above the working directory")
		dir = parent
	}
}

// Binary returns the pinned Dex, building it with scripts/dex.sh when
// .ci/run has not (the first build on a machine takes minutes).
func Binary(t testing.TB) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(root(t), "scripts", "dex.sh"), "build")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	require.NoError(t, cmd.Run(), "building Dex with scripts/dex.sh:\n%s", errOut.String())
	bin := strings.TrimSpace(out.String())
	require.FileExists(t, bin)
	return bin
}

// Doc is what docs/sign-in.md says about Dex: the configuration block
// (oauth2 and staticClients) and the `heddle issuers add dex` line.
type Doc struct {
	Config     map[string]any
	IssuerLine string
}

// ReadDoc reads docs/sign-in.md's Dex section.
func ReadDoc(t testing.TB) Doc {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root(t), "docs", "sign-in.md"))
	require.NoError(t, err)
	doc := string(data)
	start := strings.Index(doc, "### Dex")
	require.GreaterOrEqual(t, start, 0, "docs/sign-in.md has a Dex section")
	doc = doc[start:]
	if end := strings.Index(doc[1:], "\n### "); end >= 0 {
		doc = doc[:end+1]
	}
	block := func(lang string) string {
		i := strings.Index(doc, "```"+lang+"\n")
		require.GreaterOrEqual(t, i, 0, "the Dex section has a %s block", lang)
		b := doc[i+len("```"+lang+"\n"):]
		return b[:strings.Index(b, "```")]
	}
	var d Doc
	require.NoError(t, yaml.Unmarshal([]byte(block("yaml")), &d.Config))
	for _, line := range strings.Split(block("sh"), "\n") {
		if line = strings.TrimSpace(line); strings.HasPrefix(line, "heddle issuers add dex ") {
			d.IssuerLine = line
		}
	}
	require.NotEmpty(t, d.IssuerLine, "docs/sign-in.md shows how to trust Dex")
	return d
}

// User is a static user of Dex.
type User struct {
	Email  string
	Groups []string
}

// Options set up Dex beyond the doc's clients.
type Options struct {
	// DashboardRedirect replaces the doc's dashboard redirect URI
	// (http://127.0.0.1:7070/) with the address of the dashboard under
	// test.
	DashboardRedirect string
	// ExtraClients are added to the doc's (another app's client).
	ExtraClients []map[string]any
	Users        []User
}

// Dex is a running Dex.
type Dex struct {
	Issuer string
	// Client keeps Dex's cookies and follows redirects: a browser's.
	Client *http.Client
}

// Start runs bin with the doc's clients and o on a free loopback port,
// until the test ends.
func Start(t testing.TB, bin string, doc Doc, o Options) *Dex {
	t.Helper()
	hash, err := bcrypt.GenerateFromPassword([]byte(Password), bcrypt.DefaultCost)
	require.NoError(t, err)
	var clients []any
	for _, c := range doc.Config["staticClients"].([]any) {
		c := c.(map[string]any)
		if uris, ok := c["redirectURIs"].([]any); ok && o.DashboardRedirect != "" {
			for i, u := range uris {
				if u == "http://127.0.0.1:7070/" {
					uris[i] = o.DashboardRedirect
				}
			}
		}
		clients = append(clients, c)
	}
	for _, c := range o.ExtraClients {
		clients = append(clients, c)
	}
	var users []map[string]any
	for i, u := range o.Users {
		users = append(users, map[string]any{"email": u.Email, "hash": string(hash), "username": strings.Split(u.Email, "@")[0],
			"userID": fmt.Sprintf("u-%d", i), "groups": u.Groups})
	}
	dir := t.TempDir()
	// A port free now may be taken before Dex binds it (other tests and
	// runs share the machine): a few tries.
	for attempt := 0; ; attempt++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		addr := ln.Addr().String()
		require.NoError(t, ln.Close())
		issuer := "http://" + addr + "/dex"
		raw, err := yaml.Marshal(map[string]any{
			"issuer":           issuer,
			"storage":          map[string]any{"type": "memory"},
			"web":              map[string]any{"http": addr},
			"oauth2":           doc.Config["oauth2"],
			"staticClients":    clients,
			"enablePasswordDB": true,
			"staticPasswords":  users,
		})
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
		go func() { _ = cmd.Wait(); _ = log.Close(); close(exited) }()
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			<-exited
			if t.Failed() {
				data, _ := os.ReadFile(logPath)
				t.Logf("Dex's log:\n%s", data)
			}
		})
		if serving(issuer, exited) {
			jar, _ := cookiejar.New(nil)
			return &Dex{Issuer: issuer, Client: &http.Client{Jar: jar, Timeout: 30 * time.Second,
				Transport: http.DefaultTransport.(*http.Transport).Clone()}}
		}
		data, _ := os.ReadFile(logPath)
		require.Less(t, attempt, 2, "Dex did not start:\n%s", data)
	}
}

// serving reports whether Dex serves its discovery document before it
// exits or 30 s pass.
func serving(issuer string, exited <-chan struct{}) bool {
	client := &http.Client{Timeout: 5 * time.Second, Transport: http.DefaultTransport.(*http.Transport).Clone()}
	defer client.CloseIdleConnections()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return false
		default:
		}
		if resp, err := client.Get(issuer + "/.well-known/openid-configuration"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return true
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return false
}

var (
	formRe  = regexp.MustCompile(`(?s)<form[^>]*method="post"[^>]*action="([^"]*)"[^>]*>(.*?)</form>`)
	inputRe = regexp.MustCompile(`<input[^>]*>`)
)

func attr(tag, name string) string {
	m := regexp.MustCompile(`\s` + name + `="([^"]*)"`).FindStringSubmatch(tag)
	if m == nil {
		return ""
	}
	return html.UnescapeString(m[1])
}

// Submit follows Dex's pages from u as a person would: each page with a
// form is filled in (the user code is already there; login and password
// are email's) and posted, until a page without one, which it returns.
func (d *Dex) Submit(t testing.TB, u, email string) string {
	t.Helper()
	resp, err := d.Client.Get(u)
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
				form.Set(name, Password)
			default:
				form.Set(name, attr(in, "value"))
			}
		}
		action, err := resp.Request.URL.Parse(html.UnescapeString(m[1]))
		require.NoError(t, err)
		resp, err = d.Client.PostForm(action.String(), form)
		require.NoError(t, err)
	}
	t.Fatalf("Dex's pages did not end within 8 forms, at %s", resp.Request.URL)
	return ""
}

// Approve enters a device flow's code (in verificationURL) and signs in
// as email; Dex ends on its success page.
func (d *Dex) Approve(t testing.TB, verificationURL, email string) {
	t.Helper()
	page := d.Submit(t, verificationURL, email)
	require.Contains(t, page, "Login Successful", "Dex's device flow ends on its success page")
}

// DeviceToken signs email in to clientID with the device flow and
// returns the ID token.
func (d *Dex) DeviceToken(t testing.TB, clientID, email string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conf := &oauth2.Config{ClientID: clientID, Scopes: []string{"openid", "email"}, Endpoint: oauth2.Endpoint{
		DeviceAuthURL: d.Issuer + "/device/code", TokenURL: d.Issuer + "/token", AuthStyle: oauth2.AuthStyleInParams}}
	ctx = context.WithValue(ctx, oauth2.HTTPClient, d.Client)
	da, err := conf.DeviceAuth(ctx)
	require.NoError(t, err)
	d.Approve(t, da.VerificationURIComplete, email)
	tok, err := conf.DeviceAccessToken(ctx, da)
	require.NoError(t, err)
	raw, _ := tok.Extra("id_token").(string)
	require.NotEmpty(t, raw)
	return raw
}
