package main

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestUsersAndKeysAsDocumented runs docs/operations.md's users, keys,
// tenants and catalog commands as written: the first block with an
// admin's key, the second with the superadmin's.
func TestUsersAndKeysAsDocumented(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	ann := s.tenant("acme")
	s.must(ann, "apply", "-f", "../../docs/examples/catalog.yaml")
	s.must(s.super, "tenants", "create", "spare", "--max-clusters", "1", "--max-nodes", "1", "--workers", "1", "--admin", "sam")

	argv := func(line, key string) []string {
		args, ok := strings.CutPrefix(line, "bin/heddle ")
		require.True(t, ok, line)
		return strings.Fields(strings.ReplaceAll(args, `"$ADMIN_KEY"`, key))
	}
	lines, comments := docSteps(t, "../../docs/operations.md", "As an admin of acme:")
	require.Len(t, lines, 6)
	require.Contains(t, comments[0], "an admin's key")
	var bobKey, keyID string
	for _, line := range lines {
		line = strings.ReplaceAll(line, "KEY_ID", keyID)
		out := s.must(ann, argv(line, ann)...)
		switch {
		case strings.Contains(line, "keys create"):
			bobKey = regexp.MustCompile(`hdl_[A-Za-z0-9_-]{43}`).FindString(out)
			m := regexp.MustCompile(`key (key_\S+) of bob`).FindStringSubmatch(out)
			require.NotNil(t, m, out)
			keyID = m[1]
		case strings.Contains(line, "users role"):
			require.Contains(t, s.must(bobKey, "users", "list"), "bob", "bob is an admin now")
		case strings.Contains(line, "keys list"):
			require.Contains(t, out, keyID)
			require.NotContains(t, out, bobKey)
		case strings.Contains(line, "keys revoke"):
			require.Equal(t, 1, s.cli(bobKey, "clusters", "list").code, "a revoked key")
		case strings.Contains(line, "users delete"):
			require.NotContains(t, s.must(ann, "users", "list"), "bob")
		}
	}

	lines, comments = docSteps(t, "../../docs/operations.md", "JSON), with its versions:")
	require.Len(t, lines, 5)
	require.Contains(t, comments[0], "the superadmin's key")
	for _, line := range lines {
		out := s.must(s.super, argv(line, ann)...)
		switch {
		case strings.Contains(line, "tenants list"):
			require.Regexp(t, `(?m)^acme\s+0/3\s+0/12\s`, out)
			require.Contains(t, out, "spare")
		case strings.Contains(line, "tenants show"):
			require.Contains(t, out, "id: acme\n")
		case strings.Contains(line, "tenants delete"):
			require.NotContains(t, s.must(s.super, "tenants", "list"), "spare")
		case strings.Contains(line, "catalog get"):
			require.Contains(t, out, "name: web\n")
		case strings.Contains(line, "catalog versions"):
			require.Regexp(t, `(?m)^1\s+web\s`, out)
		}
	}
}
