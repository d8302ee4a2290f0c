package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/desired"
)

// listed is what the tests read of clusters list -o json.
type listed struct {
	Items []struct {
		ID        string `json:"id"`
		Name      string `json:"name"`
		NodeCount int    `json:"nodeCount"`
		ManagedBy string `json:"managedBy"`
		Services  []string
		Config    json.RawMessage `json:"config"`
	} `json:"items"`
}

func (s *server) clusters(key string) listed {
	s.t.Helper()
	var l listed
	require.NoError(s.t, json.Unmarshal([]byte(s.must(key, "clusters", "list", "-o", "json")), &l))
	return l
}

// TestDocsDesiredStateSteps runs docs/desired-state.md's "Try it" commands
// as written: create by apply, idempotence, diff changing nothing, scale
// and reconfigure by editing the document, prune.
func TestDocsDesiredStateSteps(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	admin := s.tenant("acme")
	steps, _ := docSteps(t, "../../docs/desired-state.md", "## Try it")
	require.Len(t, steps, 7)
	for _, line := range steps {
		t.Logf("$ %s", line)
		args, ok := strings.CutPrefix(line, "bin/heddle ")
		require.True(t, ok, line)
		argv := strings.Fields(args)
		for i, a := range argv {
			if strings.HasPrefix(a, "docs/") {
				argv[i] = "../../" + a
			}
		}
		before := s.clusters(admin)
		out := s.must(admin, argv...)
		after := s.clusters(admin)
		switch {
		case argv[0] == "diff":
			require.Equal(t, before, after, "diff changes nothing")
			require.Contains(t, out, "dry run:", "each step is previewed as its dry run")
			if strings.Contains(line, "grown") {
				require.Contains(t, out, "reconfigure shop with config")
				require.Contains(t, out, "expand shop by 1 node")
				require.Contains(t, out, "delete scratch")
				require.Contains(t, out, "plan: 0 to create, 1 to change, 1 to delete, 0 unchanged")
			} else {
				require.Contains(t, out, "plan: 2 to create, 0 to change, 0 to delete, 0 unchanged")
			}
		case strings.Contains(line, "clusters.yaml") && len(before.Items) == 0:
			require.Contains(t, out, "applied: the clusters are as declared")
			require.Len(t, after.Items, 2)
			for _, c := range after.Items {
				require.Equal(t, "apply", c.ManagedBy, "apply marks what it makes")
			}
		case strings.Contains(line, "clusters.yaml"):
			require.Contains(t, out, "plan: 0 to create, 0 to change, 0 to delete, 2 unchanged")
			require.Equal(t, before, after, "applying twice changes nothing")
		case strings.Contains(line, "grown"):
			require.Len(t, after.Items, 1)
			shop := after.Items[0]
			require.Equal(t, "shop", shop.Name)
			require.Equal(t, 4, shop.NodeCount)
			require.JSONEq(t, `{"greeting":"hello again from shop"}`, string(shop.Config))
			again := s.must(admin, "apply", "-f", "../../docs/examples/clusters-grown.yaml", "--prune")
			require.Contains(t, again, "plan: 0 to create, 0 to change, 0 to delete, 1 unchanged")
		case argv[0] == "clusters":
			require.Contains(t, out, "shop")
			require.NotContains(t, out, "scratch")
		}
	}

	// Then: a new version of the template, and shop pinned to it with a
	// node fewer: sync first, then shrink; again, nothing.
	catalog, err := os.ReadFile("../../docs/examples/catalog.yaml")
	require.NoError(t, err)
	dir := t.TempDir()
	v2 := filepath.Join(dir, "catalog-v2.yaml")
	require.NoError(t, os.WriteFile(v2, []byte(strings.Replace(string(catalog),
		"description: A load balancer, web servers and a key-value store.",
		"description: A load balancer, web servers and a key-value store, version 2.", 1)), 0o600))
	require.Contains(t, s.must(admin, "apply", "-f", v2), "1 updated")
	pinned := filepath.Join(dir, "pinned.yaml")
	require.NoError(t, os.WriteFile(pinned, []byte(`apiVersion: heddle/v1
clusters:
  - {name: shop, template: web, templateVersion: 2, size: 3, services: [lb, web, kv], config: {greeting: "hello again from shop"}}
`), 0o600))
	out := s.must(admin, "apply", "-f", pinned)
	sync, shrink := strings.Index(out, "sync shop to template version 2:"), strings.Index(out, "shrink shop by 1 node:")
	require.True(t, sync >= 0 && shrink > sync, "sync runs before shrink:\n%s", out)
	shop := s.clusters(admin).Items[0]
	require.Equal(t, 3, shop.NodeCount)
	require.Contains(t, s.must(admin, "clusters", "list"), "web@2")
	require.Contains(t, s.must(admin, "apply", "-f", pinned), "plan: 0 to create, 0 to change, 0 to delete, 1 unchanged")
}

// TestApplyOwnershipAdoptAndAddService: apply refuses a hand-made cluster
// it is declared over until --adopt, then adds a service (on a new node the
// size makes room for); --prune never deletes what it does not manage, and
// without --yes and a terminal it deletes nothing; a bad document is
// refused by field.
func TestApplyOwnershipAdoptAndAddService(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	admin := s.tenant("acme")
	s.must(admin, "apply", "-f", "../../docs/examples/catalog.yaml")
	s.must(admin, "clusters", "create", "hand", "--template", "web", "--size", "2", "--services", "web,kv", "--wait")
	s.must(admin, "clusters", "create", "other", "--template", "web", "--size", "2", "--wait")
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(text), 0o600))
		return p
	}
	doc := write("hand.yaml", "apiVersion: heddle/v1\nclusters:\n  - {name: hand, template: web, size: 3, services: [lb, web, kv]}\n")

	before := s.clusters(admin)
	r := s.cli(admin, "apply", "-f", doc)
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "clusters[0].name: cluster hand")
	require.Contains(t, r.stderr, "--adopt")
	require.Equal(t, before, s.clusters(admin), "a refused apply changes nothing")

	out := s.must(admin, "diff", "-f", doc, "--adopt")
	require.Contains(t, out, "adopt hand")
	require.Contains(t, out, "add services lb to hand")
	require.Equal(t, before, s.clusters(admin), "diff --adopt changes nothing, not even the mark")

	out = s.must(admin, "apply", "-f", doc, "--adopt")
	require.Contains(t, out, "applied")
	var hand, other = -1, -1
	after := s.clusters(admin)
	for i, c := range after.Items {
		switch c.Name {
		case "hand":
			hand = i
		case "other":
			other = i
		}
	}
	require.Equal(t, "apply", after.Items[hand].ManagedBy)
	require.Equal(t, 3, after.Items[hand].NodeCount)
	require.ElementsMatch(t, []string{"lb", "web", "kv"}, after.Items[hand].Services)
	require.Empty(t, after.Items[other].ManagedBy)
	require.Contains(t, s.must(admin, "apply", "-f", doc), "1 unchanged", "applying twice changes nothing")

	// An empty declaration with --prune: hand (apply's now) would go,
	// other (by hand) never; without --yes and no terminal, nothing goes.
	empty := write("empty.yaml", "apiVersion: heddle/v1\nclusters: []\n")
	out = s.must(admin, "diff", "-f", empty, "--prune")
	require.Contains(t, out, "delete hand")
	require.NotContains(t, out, "delete other")
	var plan struct {
		DryRun bool `json:"dryRun"`
		Steps  []struct {
			Operation string          `json:"operation"`
			Preview   json.RawMessage `json:"preview"`
		} `json:"steps"`
	}
	require.NoError(t, json.Unmarshal([]byte(s.must(admin, "diff", "-f", empty, "--prune", "-o", "json")), &plan))
	require.True(t, plan.DryRun)
	require.Len(t, plan.Steps, 1)
	require.Equal(t, "delete", plan.Steps[0].Operation)
	require.Contains(t, string(plan.Steps[0].Preview), `"dryRun"`)
	r = s.cli(admin, "apply", "-f", empty, "--prune")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "pass --yes")
	require.Len(t, s.clusters(admin).Items, 2)
	out = s.must(admin, "apply", "-f", empty, "--prune", "--yes", "-o", "json")
	var rep struct {
		Steps []struct {
			Operation string `json:"operation"`
			Cluster   string `json:"cluster"`
			Job       *struct {
				Status string `json:"status"`
			} `json:"job"`
		} `json:"steps"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
	require.Len(t, rep.Steps, 1)
	require.Equal(t, "delete", rep.Steps[0].Operation)
	require.Equal(t, "SUCCEEDED", rep.Steps[0].Job.Status)
	left := s.clusters(admin)
	require.Len(t, left.Items, 1)
	require.Equal(t, "other", left.Items[0].Name)

	// The mark by hand: given, other is apply's to prune; cleared, not.
	otherID := left.Items[0].ID
	require.Contains(t, s.must(admin, "clusters", "manage", otherID, "--by", "apply"), "managed by apply")
	require.Regexp(t, `managed by\s+apply`, s.must(admin, "clusters", "show", otherID))
	require.Contains(t, s.must(admin, "diff", "-f", empty, "--prune"), "delete other")
	require.Contains(t, s.must(admin, "clusters", "manage", otherID, "--by", ""), "managed by -")
	require.Contains(t, s.must(admin, "diff", "-f", empty, "--prune"), "plan: 0 to create, 0 to change, 0 to delete, 0 unchanged")
	left = s.clusters(admin)

	// One document of catalog and clusters: the catalog is imported, then
	// the cluster made from it.
	catalog, err := os.ReadFile("../../docs/examples/catalog.yaml")
	require.NoError(t, err)
	both := write("both.yaml", string(catalog)+"clusters:\n  - {name: combo, template: web, size: 2}\n")
	out = s.must(admin, "apply", "-f", both)
	require.Contains(t, out, "catalog: ")
	require.Contains(t, out, "0 created, 0 updated, 8 unchanged")
	require.Contains(t, out, "create combo from template web with 2 nodes: job")
	require.Len(t, s.clusters(admin).Items, 2)
	left = s.clusters(admin)

	// A bad document: every problem by field path, nothing changed.
	bad := write("bad.yaml", "apiVersion: heddle/v1\nclusters:\n  - {name: x, template: web, size: 0, colour: red}\n")
	r = s.cli(admin, "apply", "-f", bad)
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "clusters[0].colour")
	r = s.cli(admin, "diff", "-f", bad)
	require.Equal(t, 1, r.code)
	require.Equal(t, left, s.clusters(admin))
}

// TestDocsDesiredStateExampleParses: the document the page shows first is
// one apply takes, field for field.
func TestDocsDesiredStateExampleParses(t *testing.T) {
	t.Parallel()
	doc, err := desired.Parse([]byte(docBlock(t, "../../docs/desired-state.md", "# Clusters as desired state", "yaml")))
	require.NoError(t, err)
	require.Len(t, doc.Clusters, 1)
	c := doc.Clusters[0]
	require.Equal(t, "shop", c.Name)
	require.Equal(t, 1, c.TemplateVersion)
	require.Equal(t, 3, c.Size)
	require.Equal(t, []string{"lb", "web", "kv"}, c.Services)
	require.Equal(t, 24*time.Hour, time.Duration(c.Lease))
}

// TestTwoAppliesAtOnceMakeOneCluster: two `heddle apply` of one document
// started at once (issue 28) make one cluster: a loser of the race on its
// name is refused with name_taken, and a later apply finds the one cluster
// as declared instead of refusing two of one name.
func TestTwoAppliesAtOnceMakeOneCluster(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	admin := s.tenant("acme")
	s.must(admin, "apply", "-f", "../../docs/examples/catalog.yaml")
	doc := filepath.Join(t.TempDir(), "racer.yaml")
	require.NoError(t, os.WriteFile(doc, []byte("apiVersion: heddle/v1\nclusters:\n  - {name: racer, template: web, size: 2}\n"), 0o600))
	var results [2]result
	var wg sync.WaitGroup
	for i := range results {
		wg.Go(func() { results[i] = s.cli(admin, "apply", "-f", doc) })
	}
	wg.Wait()
	t.Logf("the applies exited %d and %d", results[0].code, results[1].code)
	succeeded := 0
	for _, r := range results {
		if r.code == 0 {
			succeeded++
			continue
		}
		require.Contains(t, r.stderr, "is named racer", "a loser is refused by the name:\n%s", r.stderr)
	}
	require.GreaterOrEqual(t, succeeded, 1, "%+v", results)
	require.Len(t, s.clusters(admin).Items, 1)
	require.Contains(t, s.must(admin, "apply", "-f", doc), "plan: 0 to create, 0 to change, 0 to delete, 1 unchanged")
}
