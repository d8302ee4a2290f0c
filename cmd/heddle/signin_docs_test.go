package main

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/demotest"
	"github.com/heddle-io/heddle/internal/identity/identitytest"
)

// docBlocks returns the command lines of every sh block of a docs page.
func docBlocks(t *testing.T, path string) [][]string {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var blocks [][]string
	rest := string(data)
	for {
		start := strings.Index(rest, "```sh\n")
		if start < 0 {
			return blocks
		}
		rest = rest[start+len("```sh\n"):]
		end := strings.Index(rest, "```")
		var lines []string
		for _, line := range strings.Split(rest[:end], "\n") {
			if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
				lines = append(lines, line)
			}
		}
		blocks = append(blocks, lines)
		rest = rest[end+3:]
	}
}

// TestSignInDocCommands runs every command docs/sign-in.md shows, exactly
// as written, with the heddle under test on PATH: an admin trusts a
// provider, lists and shows it, removes it; then (the tenant trusting a
// test provider whose device flow approves at once) a person signs in and
// out.
func TestSignInDocCommands(t *testing.T) {
	blocks := docBlocks(t, "../../docs/sign-in.md")
	require.Len(t, blocks, 4, "docs/sign-in.md: trust, remove, sign in, trust Dex (TestDexSignIn runs that one)")

	srv := newServer(t)
	admin := srv.tenant("acme")
	config := isolate(t)
	bin := filepath.Join(t.TempDir(), "bin")
	require.NoError(t, os.MkdirAll(bin, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(bin, "heddle"),
		[]byte("#!/bin/sh\n"+runMainEnv+"=1 exec "+os.Args[0]+` "$@"`+"\n"), 0o755))
	sh := func(line, key string) string {
		t.Helper()
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

	var out strings.Builder
	for _, line := range blocks[0] {
		out.WriteString(sh(line, admin))
	}
	require.Contains(t, out.String(), "trusting corp (https://idp.example.com/realms/acme) for tenant acme")
	require.Contains(t, out.String(), "1. groups=heddle-admins,role=admin")
	for _, line := range blocks[1] {
		require.Contains(t, sh(line, admin), "removed issuer corp")
	}

	idp := identitytest.New(t, "heddle")
	idp.SetUser(map[string]any{"sub": "1", "email": "ada@example.com", "email_verified": true})
	require.Equal(t, http.StatusCreated, demotest.Call(t, "http://"+srv.addr, admin, "POST", "/v1/issuers", map[string]any{
		"name": "corp", "url": idp.URL, "audience": "heddle", "rules": []map[string]any{{"emailDomain": "example.com", "role": "user"}}}, nil))
	out.Reset()
	for _, line := range blocks[2] {
		out.WriteString(sh(line, ""))
	}
	require.Contains(t, out.String(), "signed in as ada_at_example.com (user) in tenant acme")
	require.Contains(t, out.String(), "signed out")
}
