package main

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestUsersKeysTenantsAndCatalogCommands drives the commands for users,
// keys, tenants and single catalog entities against a real server: an
// admin adds a user, gives them a key (shown once) and a role, revokes the
// key and removes the user; the superadmin lists, shows and deletes
// tenants (asking first); the catalog's entities are read, listed by
// version and deleted; -o yaml and shell completion from the API work.
func TestUsersKeysTenantsAndCatalogCommands(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	ann := s.tenant("acme")

	// Users and keys.
	require.Contains(t, s.must(ann, "users", "create", "bob"), "created user bob (user)")
	require.Regexp(t, `(?m)^bob\s+user\s`, s.must(ann, "users", "list"))
	created := s.must(ann, "keys", "create", "bob")
	require.Contains(t, created, "is shown only now")
	bob := regexp.MustCompile(`hdl_[A-Za-z0-9_-]{43}`).FindString(created)
	require.NotEmpty(t, bob, created)
	keyID := regexp.MustCompile(`key (key_\S+) of bob`).FindStringSubmatch(created)
	require.NotNil(t, keyID, created)
	require.Equal(t, "no clusters\n", s.must(bob, "clusters", "list"), "the new key works")
	listed := s.must(ann, "keys", "list", "bob")
	require.Contains(t, listed, keyID[1])
	require.NotContains(t, listed, bob, "a secret is never shown again")
	r := s.cli(bob, "users", "list")
	require.Equal(t, 1, r.code, "a user is no admin")
	require.Contains(t, s.must(ann, "users", "role", "bob", "admin"), "user bob is now admin")
	require.Contains(t, s.must(bob, "users", "list"), "ann", "the role counts from the next request")
	r = s.cli(bob, "users", "role", "ann", "user")
	require.Zero(t, r.code, r.stderr)
	r = s.cli(ann, "users", "list")
	require.Equal(t, 1, r.code, "ann is a user now")
	require.Contains(t, s.must(bob, "users", "role", "ann", "admin"), "user ann is now admin")
	r = s.cli(ann, "users", "role", "ann", "user")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "cannot change your own role")
	require.Contains(t, s.must(ann, "keys", "revoke", "bob", keyID[1]), "revoked key "+keyID[1]+" of bob")
	r = s.cli(bob, "clusters", "list")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "HEDDLE_KEY", "a revoked key is told how to give another")
	require.Contains(t, s.must(ann, "users", "delete", "bob"), "deleted user bob")
	require.NotContains(t, s.must(ann, "users", "list"), "bob")

	// Tenants.
	s.must(s.super, "tenants", "create", "spare", "--max-clusters", "1", "--max-nodes", "1", "--workers", "1", "--admin", "sam")
	require.Regexp(t, `(?m)^acme\s+0/3\s+0/12\s+4\s`, s.must(s.super, "tenants", "list"))
	require.Contains(t, s.must(s.super, "tenants", "show", "spare", "-o", "yaml"), "id: spare\n")
	r = s.cli(s.super, "tenants", "delete", "spare")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "no terminal to ask on, so nothing was done; add --yes")
	require.Contains(t, s.must(s.super, "tenants", "list"), "spare", "not deleted unasked")
	require.Contains(t, s.must(s.super, "tenants", "delete", "spare", "--yes"), "deleted tenant spare")
	require.NotContains(t, s.must(s.super, "tenants", "list"), "spare")
	r = s.cli(ann, "tenants", "delete", "acme", "--yes")
	require.Equal(t, 1, r.code, "an admin deletes no tenant")

	// Catalog entities.
	s.applyQuick(ann)
	require.Contains(t, s.must(ann, "catalog", "get", "service", "quick"), "name: quick\n")
	require.Contains(t, s.must(ann, "catalog", "get", "services", "quick", "-o", "json"), `"name": "quick"`)
	require.Regexp(t, `(?m)^1\s+quick\s`, s.must(ann, "catalog", "versions", "clustertemplates", "quick"))
	require.Contains(t, s.must(ann, "catalog", "get", "clustertemplates", "quick", "--version", "1"), "version: 1\n")
	r = s.cli(ann, "catalog", "delete", "services", "quick")
	require.Equal(t, 1, r.code, "a template uses it")
	require.Contains(t, r.stderr, "referenced by clustertemplates/quick")
	r = s.cli(ann, "catalog", "get", "widgets", "quick")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, `"widgets" is not a kind of the catalog`)

	// Completion asks the API; -o yaml everywhere.
	completed := s.must(ann, "__complete", "clusters", "create", "x", "--template", "")
	require.Contains(t, completed, "quick")
	id, _ := s.createQuick(ann, "shop")
	require.Contains(t, s.must(ann, "__complete", "clusters", "show", ""), "shop\t"+id)
	require.Contains(t, s.must(ann, "__complete", "jobs", "show", "shop", ""), "latest")
	require.Contains(t, s.must(ann, "clusters", "list", "-o", "yaml"), "name: shop\n")
	s.must(ann, "clusters", "delete", "shop", "--wait")
	require.Contains(t, s.must(ann, "catalog", "delete", "clustertemplates", "quick"), "deleted clustertemplates/quick")
	r = s.cli(ann, "catalog", "get", "clustertemplates", "quick")
	require.Equal(t, 1, r.code)
	require.True(t, strings.Contains(r.stderr, "does not exist"), r.stderr)
}
