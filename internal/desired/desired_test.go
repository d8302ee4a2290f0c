package desired

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/cluster"
	"github.com/heddle-io/heddle/internal/domain"
)

func live(name string, size int, services ...string) domain.Cluster {
	return domain.Cluster{ID: "c-" + name, Name: name, ManagedBy: Manager, Status: domain.ClusterActive,
		Template: domain.TemplateRef{Name: "web", Version: 1}, NodeCount: size, Services: services, Config: json.RawMessage(`{"a":1}`)}
}

func TestParseSplitsClustersFromTheCatalog(t *testing.T) {
	t.Parallel()
	doc, err := Parse([]byte("apiVersion: heddle/v1\nproviders: [{name: p, providerType: local}]\nclusters:\n  - {name: a, template: web, size: 2, config: {x: 1}, lease: 24h}\n"))
	require.NoError(t, err)
	require.True(t, doc.Declared)
	require.Len(t, doc.Clusters, 1)
	require.Equal(t, 2, doc.Clusters[0].Size)
	require.JSONEq(t, `{"x":1}`, string(doc.Clusters[0].Config))
	require.JSONEq(t, `{"apiVersion":"heddle/v1","providers":[{"name":"p","providerType":"local"}]}`, string(doc.Catalog))

	doc, err = Parse([]byte("apiVersion: heddle/v1\nclusters: []\n"))
	require.NoError(t, err)
	require.True(t, doc.Declared)
	require.Nil(t, doc.Catalog, "a document of clusters only imports no catalog")

	doc, err = Parse([]byte(`{"apiVersion":"heddle/v1","services":[]}`))
	require.NoError(t, err)
	require.False(t, doc.Declared)
	require.NotNil(t, doc.Catalog)

	doc, err = Parse([]byte("[1, 2"))
	require.NoError(t, err, "a malformed document is the catalog import's to report")
	require.False(t, doc.Declared)
}

func TestParseReportsProblemsByField(t *testing.T) {
	t.Parallel()
	for doc, field := range map[string]string{
		"clusters: [{name: a, template: web, size: 0}]":                                  "clusters[0].size",
		"clusters: [{name: a, template: web, size: 1}, {name: a, template: w, size: 1}]": "clusters[1].name",
		"clusters: [{name: a, size: 1}]":                                                 "clusters[0].template",
		"clusters: [{name: a, template: web, size: 1, sise: 2}]":                         "clusters[0].sise",
		"clusters: [{name: a, template: web, size: 1, services: [x, x]}]":                "clusters[0].services[1]",
		"clusters: [{name: a, template: web, size: 1, config: [1]}]":                     "clusters[0].config",
		"clusters: [{name: a, template: web, size: two}]":                                "clusters[0].size",
		"clusters: {name: a}": "clusters",
	} {
		_, err := Parse([]byte(doc))
		var ps domain.Problems
		require.ErrorAs(t, err, &ps, doc)
		fields := make([]string, len(ps))
		for i, p := range ps {
			fields[i] = p.Field
		}
		require.Contains(t, fields, field, doc)
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte("clusters: [{name: a, template: web, size: 2}]"))
	f.Add([]byte(`{"apiVersion":"heddle/v1","clusters":null}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		doc, err := Parse(data)
		if err != nil {
			return
		}
		// What parses is valid: every cluster can be planned.
		for i, c := range doc.Clusters {
			steps, ps := ForCluster(i, c, nil, false)
			require.Empty(t, ps)
			require.Len(t, steps, 1)
		}
	})
}

func TestComputeConverges(t *testing.T) {
	t.Parallel()
	declared := []Cluster{
		{Name: "new", Template: "web", Size: 3},
		{Name: "same", Template: "web", Size: 2, Services: []string{"web", "kv"}, Config: json.RawMessage(`{ "a" : 1 }`)},
		{Name: "grow", Template: "web", TemplateVersion: 2, Size: 5, Services: []string{"web", "lb"}, Config: json.RawMessage(`{"a":2}`)},
		{Name: "small", Template: "web", Size: 1},
	}
	current := []domain.Cluster{
		live("same", 2, "kv", "web"), live("grow", 2, "web", "kv"), live("small", 3, "web"),
		live("orphan", 1, "web"), {ID: "c-hand", Name: "hand", Status: domain.ClusterActive},
		{ID: "c-gone", Name: "gone", ManagedBy: Manager, Status: domain.ClusterTerminated},
	}
	p := Compute(declared, current, Options{Prune: true})
	require.Empty(t, p.Problems)
	require.Equal(t, []string{"same"}, p.Unchanged)
	var got []string
	for _, s := range p.Steps {
		got = append(got, s.String())
	}
	require.Equal(t, []string{
		"create new from template web with 3 nodes",
		"sync grow to template version 2",
		"remove services kv from grow",
		`reconfigure grow with config {"a":2}`,
		"add services lb to grow, on up to 3 nodes added for them",
		"expand grow by 3 nodes",
		"shrink small by 2 nodes",
		"delete orphan (c-orphan)",
	}, got, "the hand-made cluster is never pruned, nor a TERMINATED one")
	require.Equal(t, Manager, p.Steps[0].Request.(cluster.CreateRequest).ManagedBy)

	// Without --prune nothing is deleted.
	require.NotContains(t, Compute(declared, current, Options{}).Steps, Step{Kind: Delete, Name: "orphan", ClusterID: "c-orphan"})
}

func TestComputeRespectsOwnership(t *testing.T) {
	t.Parallel()
	declared := []Cluster{{Name: "hand", Template: "web", Size: 2}}
	current := []domain.Cluster{{ID: "c-hand", Name: "hand", Status: domain.ClusterActive, NodeCount: 1, Template: domain.TemplateRef{Name: "web", Version: 1}}}
	p := Compute(declared, current, Options{})
	require.Empty(t, p.Steps)
	require.Len(t, p.Problems, 1)
	require.Equal(t, "clusters[0].name", p.Problems[0].Field)
	require.Contains(t, p.Problems[0].Message, "--adopt")

	p = Compute(declared, current, Options{Adopt: true})
	require.Empty(t, p.Problems)
	require.Equal(t, []Kind{Adopt, Expand}, []Kind{p.Steps[0].Kind, p.Steps[1].Kind})

	// Another template is refused; two clusters of one name too.
	p = Compute([]Cluster{{Name: "hand", Template: "db", Size: 1}}, current, Options{Adopt: true})
	require.Equal(t, domain.CodeImmutable, p.Problems[0].Code)
	p = Compute(declared, append(current, current[0]), Options{Adopt: true})
	require.Equal(t, domain.CodeConflict, p.Problems[0].Code)
}
