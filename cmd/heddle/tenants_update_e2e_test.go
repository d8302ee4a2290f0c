package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// shownTenant is what tenants update -o json prints: the tenant's view.
type shownTenant struct {
	ID          string `json:"id"`
	Description string `json:"description"`
	Workers     int    `json:"workers"`
	MaxClusters int    `json:"maxClusters"`
	MaxNodes    int    `json:"maxNodes"`
	Version     int64  `json:"version"`
	Usage       struct {
		Clusters int `json:"clusters"`
		Nodes    int `json:"nodes"`
	} `json:"usage"`
}

// tenantNow reads a tenant as the superadmin (GET /v1/tenants/{id}).
func (s *server) tenantNow(id string) shownTenant {
	s.t.Helper()
	c := NewClient("http://"+s.addr, s.super)
	v, err := c.GetTenant(s.t.Context(), id)
	require.NoError(s.t, err)
	raw, err := json.Marshal(v)
	require.NoError(s.t, err)
	var out shownTenant
	require.NoError(s.t, json.Unmarshal(raw, &out))
	return out
}

// TestTenantsUpdateAsDocumented runs docs/operations.md's tenants update
// commands exactly as written, with the superadmin's key: each changes what
// its flags name and keeps the rest. Then the refusals the section
// promises: a quota below use, a worker count out of range and a key that
// is not the superadmin's are refused with the field and change nothing.
func TestTenantsUpdateAsDocumented(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	sh := newDocShell(t)
	ann := s.tenant("acme") // 3 clusters, 12 nodes, 4 workers
	lines, comments := docSteps(t, "../../docs/operations.md", "To give acme more room and more workers:")
	require.Len(t, lines, 3)
	require.Contains(t, comments[0], "superadmin")

	before := s.tenantNow("acme")
	out, err := sh.run(s, s.super, lines[0])
	require.NoError(t, err, out)
	require.Contains(t, out, "updated tenant acme")
	got := s.tenantNow("acme")
	require.Equal(t, 10, got.MaxClusters)
	require.Equal(t, 200, got.MaxNodes)
	require.Equal(t, before.Workers, got.Workers, "workers stay as they were")
	require.Greater(t, got.Version, before.Version)

	out, err = sh.run(s, s.super, lines[1])
	require.NoError(t, err, out)
	got = s.tenantNow("acme")
	require.Equal(t, 8, got.Workers)
	require.Equal(t, 10, got.MaxClusters, "the quotas stay as they were")
	require.Equal(t, 200, got.MaxNodes)

	before = got
	out, err = sh.run(s, s.super, lines[2])
	require.NoError(t, err, out)
	got = s.tenantNow("acme")
	require.Equal(t, before.Version+1, got.Version, "written back")
	before.Version = got.Version
	require.Equal(t, before, got, "as it was")

	// -o json prints the API's answer.
	var printed shownTenant
	require.NoError(t, json.Unmarshal([]byte(s.must(s.super, "tenants", "update", "acme", "--description", "the shop", "-o", "json")), &printed))
	require.Equal(t, "the shop", printed.Description)
	require.Equal(t, 8, printed.Workers)

	// A quota below what the tenant uses: the field, the least value, and
	// nothing changes.
	s.must(ann, "apply", "-f", "../../docs/examples/health-catalog.yaml")
	s.must(ann, "clusters", "create", "one", "--template", "health", "--size", "1")
	before = s.tenantNow("acme")
	require.Equal(t, 1, before.Usage.Clusters)
	refused := func(key string, args ...string) string {
		t.Helper()
		r := s.cli(key, append([]string{"tenants", "update", "acme"}, args...)...)
		require.Equal(t, 1, r.code, "%s refused:\n%s", strings.Join(args, " "), r.stdout)
		require.Empty(t, r.stdout)
		require.Equal(t, before, s.tenantNow("acme"), "%s changed nothing", strings.Join(args, " "))
		return r.stderr
	}
	stderr := refused(s.super, "--max-clusters", "0", "--max-nodes", "0")
	require.Contains(t, stderr, "  maxClusters: is 0 but the tenant has 1 clusters; delete clusters first or choose at least 1")
	require.Contains(t, stderr, "  maxNodes: is 0 but the tenant has 1 nodes")
	stderr = refused(s.super, "--workers", "1001")
	require.Contains(t, stderr, "  workers: is 1001; use 0 to 1000")
	stderr = refused(s.super, "--max-nodes", "-1")
	require.Contains(t, stderr, "  maxNodes: cannot be negative")
	stderr = refused(s.super, "--workers", "many")
	require.Contains(t, stderr, `invalid argument "many" for "--workers"`)
	stderr = refused(ann, "--max-nodes", "1000")
	require.Contains(t, stderr, "heddle:", "an admin may not raise their own quota")
	r := s.cli(s.super, "tenants", "update", "globex", "--workers", "2")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "globex")
}
