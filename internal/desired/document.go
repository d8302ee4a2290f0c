package desired

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"

	"sigs.k8s.io/yaml"

	"github.com/heddle-io/heddle/internal/domain"
)

// Cluster is one cluster a document declares. A field left out is not
// managed: apply leaves that part of an existing cluster as it is.
type Cluster struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Template    string `json:"template"`
	// TemplateVersion pins the template's version: a cluster on another
	// version is synced to it. 0 builds from the latest and never syncs.
	TemplateVersion int `json:"templateVersion,omitempty"`
	Size            int `json:"size"`
	// Services are the services the cluster runs (the template's defaults
	// at create when left out); the whole set, dependencies included.
	Services []string `json:"services,omitempty"`
	// Config is the cluster config (the template's default at create when
	// left out); a cluster whose config differs is reconfigured.
	Config json.RawMessage `json:"config,omitempty"`
	// Lease is the first lease at create, as `clusters create --lease`;
	// later applies leave the lease alone (extend it with `clusters extend`).
	Lease domain.Duration `json:"lease,omitempty"`
}

// Document is what apply reads: a catalog document that may also declare
// clusters.
type Document struct {
	// Clusters are the declared clusters, in the document's order.
	Clusters []Cluster
	// Declared tells whether the document has a clusters key at all (an
	// empty list with --prune deletes every cluster apply owns).
	Declared bool
	// Catalog is the document without its clusters key, as JSON; nil when
	// it declares nothing but clusters (apiVersion aside).
	Catalog []byte
}

// Parse splits a YAML or JSON document into its clusters and its catalog
// part. Problems carry the field path (clusters[1].size). A document that
// is not an object declares no clusters; its Catalog is data as it came.
func Parse(data []byte) (*Document, error) {
	js, err := yaml.YAMLToJSON(data)
	var top map[string]json.RawMessage
	if err != nil || json.Unmarshal(js, &top) != nil || top == nil {
		// Not a document of clusters: the catalog import says what is
		// wrong with it.
		return &Document{Catalog: data}, nil
	}
	doc := &Document{}
	raw, ok := top["clusters"]
	if ok {
		doc.Declared = true
		delete(top, "clusters")
		if !bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
			var wrapper struct {
				Clusters []Cluster `json:"clusters"`
			}
			if err := domain.DecodeStrict(append(append([]byte(`{"clusters":`), raw...), '}'), &wrapper); err != nil {
				return nil, err
			}
			doc.Clusters = wrapper.Clusters
		}
		if ps := validate(doc.Clusters); len(ps) > 0 {
			return nil, ps
		}
	}
	for k := range top {
		if k != "apiVersion" {
			if doc.Catalog, err = json.Marshal(top); err != nil {
				return nil, fmt.Errorf("encoding the catalog part of the document: %w", err)
			}
			break
		}
	}
	return doc, nil
}

func validate(cs []Cluster) domain.Problems {
	var ps domain.Problems
	add := func(i int, field, code, msg string) {
		ps = append(ps, domain.Problem{Field: fmt.Sprintf("clusters[%d].%s", i, field), Code: code, Message: msg})
	}
	seen := map[string]int{}
	for i, c := range cs {
		switch {
		case c.Name == "":
			add(i, "name", domain.CodeRequired, "give the cluster a name: apply finds the cluster by it")
		case len(c.Name) > 64:
			add(i, "name", domain.CodeOutOfRange, "is longer than 64 characters")
		default:
			if j, dup := seen[c.Name]; dup {
				add(i, "name", domain.CodeDuplicate, fmt.Sprintf("clusters[%d] has this name already; each declared cluster needs its own", j))
			}
			seen[c.Name] = i
		}
		if c.Template == "" {
			add(i, "template", domain.CodeRequired, "name the cluster template to build from")
		}
		if c.TemplateVersion < 0 {
			add(i, "templateVersion", domain.CodeOutOfRange, "versions are whole numbers from 1 (or 0 for the latest)")
		}
		if c.Size < 1 || c.Size > domain.MaxClusterSize {
			add(i, "size", domain.CodeOutOfRange, fmt.Sprintf("must be between 1 and %d nodes", domain.MaxClusterSize))
		}
		for j, s := range c.Services {
			if slices.Index(c.Services, s) != j {
				add(i, fmt.Sprintf("services[%d]", j), domain.CodeDuplicate, fmt.Sprintf("%s is listed twice", s))
			}
		}
		if len(c.Config) > 0 {
			var obj map[string]any
			if json.Unmarshal(c.Config, &obj) != nil || obj == nil {
				add(i, "config", domain.CodeWrongType, "must be an object")
			}
		}
		if c.Lease < 0 {
			add(i, "lease", domain.CodeOutOfRange, "a lease cannot be negative")
		}
	}
	return ps
}
