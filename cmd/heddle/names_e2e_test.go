package main

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// quickCatalog has one service whose actions return at once.
const quickCatalog = `apiVersion: heddle/v1
providers:
  - {name: local, providerType: local}
hardwareTypes:
  - {name: small, providerMap: {local: {flavor: small}}}
imageTypes:
  - {name: debian, providerMap: {local: {image: host}}}
services:
  - name: quick
    actions:
      install: {type: shell, fields: {script: "echo installed"}}
      start: {type: shell, fields: {script: "echo started"}}
clusterTemplates:
  - name: quick
    compatibility: {services: [quick]}
    defaults: {services: [quick], provider: local, hardwareType: small, imageType: debian}
    constraints: {size: {min: 1, max: 30}}
`

// applyQuick imports quickCatalog into the tenant of key.
func (s *server) applyQuick(key string) {
	s.t.Helper()
	file := filepath.Join(s.t.TempDir(), "quick.yaml")
	require.NoError(s.t, os.WriteFile(file, []byte(quickCatalog), 0o600))
	s.must(key, "apply", "-f", file)
}

// createQuick creates a one-node cluster of quickCatalog named name and
// watches its create job to the end.
func (s *server) createQuick(key, name string) (cluster, job string) {
	s.t.Helper()
	cluster, job = s.createdID(s.must(key, "clusters", "create", name, "--template", "quick", "--size", "1", "-o", "json"))
	require.Contains(s.t, s.must(key, "jobs", "watch", cluster, job), "SUCCEEDED")
	return cluster, job
}

// TestClustersByNameAndLatestJob: every cluster argument takes a name or
// an id; an id wins over another cluster's name spelled the same, and
// stderr says which was used; a second live cluster of one name is refused
// at its create; JOB takes latest; usage by cluster shows names.
func TestClustersByNameAndLatestJob(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	admin := s.tenant("acme")
	s.applyQuick(admin)

	id, job := s.createQuick(admin, "s1")
	shown := s.must(admin, "clusters", "show", "s1")
	require.Regexp(t, `(?m)^id\s+`+id+`$`, shown)
	require.Equal(t, id, s.show(admin, id).ID, "an id still works")
	latest := s.must(admin, "jobs", "show", "s1", "latest")
	require.Regexp(t, `(?m)^job\s+`+job+`$`, latest)
	require.Regexp(t, `(?m)^cluster\s+`+id+` \(s1\)$`, latest, "the name beside the id")
	require.Contains(t, s.must(admin, "jobs", "list", "s1"), job)

	// A cluster named as s1's id: the id wins, and stderr says so.
	other, _ := s.createQuick(admin, id)
	r := s.cli(admin, "clusters", "show", id)
	require.Zero(t, r.code, r.stderr)
	require.Regexp(t, `(?m)^name\s+s1$`, r.stdout)
	require.Contains(t, r.stderr, `is the id of cluster `+id+` (s1) and the name of `+other+`; using the cluster with that id`)

	// Names are unique among live clusters: a second s1 is refused.
	r = s.cli(admin, "clusters", "create", "s1", "--template", "quick", "--size", "1")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "cluster "+id+" is named s1")
	r = s.cli(admin, "clusters", "show", "nothing-here")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, `no cluster has the id or the name "nothing-here"`)

	// Deleting s1 by its id frees the name for another cluster.
	s.must(admin, "clusters", "delete", id, "--wait")
	second, _ := s.createQuick(admin, "s1")
	require.Regexp(t, `(?m)^id\s+`+second+`$`, s.must(admin, "clusters", "show", "s1"))
	require.Empty(t, s.cli(admin, "clusters", "show", "s1").stderr, "no clash, nothing said")

	used := s.must(admin, "usage", "--group-by", "cluster", "--step", "hour", "--from", time.Now().Add(-time.Hour).UTC().Format(time.RFC3339))
	require.Regexp(t, regexp.MustCompile(`(?m)^`+second+`\s+s1\s+\d`), used)
	s.must(admin, "clusters", "delete", "s1", "--wait")
	s.must(admin, "clusters", "delete", other, "--wait")
	// With no live cluster of the name, the newest TERMINATED one.
	gone := s.must(admin, "clusters", "show", "s1")
	require.Regexp(t, `(?m)^id\s+`+second+`$`, gone)
	require.Contains(t, gone, "TERMINATED")
}

// TestDryRunForeseesTheQuota: a dry run beyond the tenant's quota says so
// and exits 0, or 2 with --fail-on-refusal; within it, it says nothing of
// the quota. A real request beyond it is refused with advice that fits the
// limit.
func TestDryRunForeseesTheQuota(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	admin := s.tenant("acme") // 3 clusters, 12 nodes
	s.applyQuick(admin)

	r := s.cli(admin, "clusters", "create", "big", "--template", "quick", "--size", "10", "--dry-run")
	require.Zero(t, r.code, r.stderr)
	require.NotContains(t, r.stdout, "refused")

	r = s.cli(admin, "clusters", "create", "big", "--template", "quick", "--size", "13", "--dry-run")
	require.Zero(t, r.code, r.stderr)
	require.Contains(t, r.stdout, "refused if sent for real (quota_exceeded): the tenant's quota maxNodes allows 12 nodes; 0 are in use and this asks for 13 more")
	require.Contains(t, r.stdout, "--fail-on-refusal")
	r = s.cli(admin, "clusters", "create", "big", "--template", "quick", "--size", "13", "--dry-run", "--fail-on-refusal", "-o", "json")
	require.Equal(t, 2, r.code, r.stderr)
	require.Contains(t, r.stdout, `"limit": "maxNodes"`)

	r = s.cli(admin, "clusters", "create", "big", "--template", "quick", "--size", "13")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "shrink or delete a cluster, or ask an admin to raise the limit (heddle tenants update TENANT --max-nodes N)")

	s.must(s.super, "tenants", "update", "acme", "--max-clusters", "1")
	id, _ := s.createQuick(admin, "one")
	r = s.cli(admin, "clusters", "create", "two", "--template", "quick", "--size", "1", "--dry-run", "--fail-on-refusal")
	require.Equal(t, 2, r.code, r.stdout)
	require.Contains(t, r.stdout, "the tenant's quota maxClusters allows 1 cluster; 1 is in use and this asks for 1 more: delete a cluster, or ask an admin to raise the limit (heddle tenants update TENANT --max-clusters N)")
	r = s.cli(admin, "clusters", "expand", "one", "--count", "20", "--dry-run", "--fail-on-refusal")
	require.Equal(t, 2, r.code, r.stdout)
	require.Contains(t, r.stdout, "maxNodes allows 12 nodes; 1 is in use and this asks for 20 more")
	s.must(admin, "clusters", "delete", id, "--wait")
}
