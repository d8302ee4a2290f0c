package catalog

import (
	"context"
	"encoding/json"
	"fmt"

	"sigs.k8s.io/yaml"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/store"
)

// prefetchAbove is the number of entities of one kind above which an import
// reads all the heads of that kind page by page (a query reads up to 1 MB of
// them at once) instead of one Get per entity.
const prefetchAbove = 20

// prefetchHeads fills tx.heads for the kinds of which es holds many entities.
func (tx *writeTx) prefetchHeads(es []domain.Entity) error {
	names := map[domain.Kind]map[string]bool{}
	for _, e := range es {
		k := e.EntityKind()
		if names[k] == nil {
			names[k] = map[string]bool{}
		}
		names[k][e.EntityMeta().Name] = true
	}
	for k, want := range names {
		if len(want) <= prefetchAbove {
			continue
		}
		cursor := ""
		for {
			page, err := tx.s.Query(tx.ctx, "CAT#"+string(k), store.Query{Cursor: cursor, Limit: store.MaxPageSize})
			if err != nil {
				return err
			}
			for i := range page.Items {
				if it := page.Items[i]; want[it.SK] {
					tx.heads[Ref{Kind: k, Name: it.SK}] = &it
				}
			}
			if page.Next == "" {
				break
			}
			cursor = page.Next
		}
		for name := range want {
			if _, ok := tx.heads[Ref{Kind: k, Name: name}]; !ok {
				tx.heads[Ref{Kind: k, Name: name}] = nil
			}
		}
	}
	return nil
}

// DocumentAPIVersion marks an exported catalog document.
const DocumentAPIVersion = "heddle/v1"

// Document is a whole tenant catalog, as exported and imported. The same shape
// is what `heddle apply -f` reads.
type Document struct {
	APIVersion       string                    `json:"apiVersion"`
	Providers        []*domain.Provider        `json:"providers,omitempty"`
	HardwareTypes    []*domain.HardwareType    `json:"hardwareTypes,omitempty"`
	ImageTypes       []*domain.ImageType       `json:"imageTypes,omitempty"`
	Scripts          []*domain.Script          `json:"scripts,omitempty"`
	Services         []*domain.Service         `json:"services,omitempty"`
	PartialTemplates []*domain.PartialTemplate `json:"partialTemplates,omitempty"`
	ClusterTemplates []*domain.ClusterTemplate `json:"clusterTemplates,omitempty"`
	// NextCursor, on a page of an export (ExportPage), asks for the next
	// page; an import ignores it.
	NextCursor string `json:"nextCursor,omitempty"`
}

// entities returns the document's entities in write order, each with the JSON
// path prefix of its place in the document.
func (d *Document) entities() ([]domain.Entity, []string) {
	var es []domain.Entity
	var paths []string
	add := func(field string, n int, get func(int) domain.Entity) {
		for i := range n {
			es = append(es, get(i))
			paths = append(paths, fmt.Sprintf("%s[%d]", field, i))
		}
	}
	add("providers", len(d.Providers), func(i int) domain.Entity { return d.Providers[i] })
	add("hardwareTypes", len(d.HardwareTypes), func(i int) domain.Entity { return d.HardwareTypes[i] })
	add("imageTypes", len(d.ImageTypes), func(i int) domain.Entity { return d.ImageTypes[i] })
	add("scripts", len(d.Scripts), func(i int) domain.Entity { return d.Scripts[i] })
	add("services", len(d.Services), func(i int) domain.Entity { return d.Services[i] })
	add("partialTemplates", len(d.PartialTemplates), func(i int) domain.Entity { return d.PartialTemplates[i] })
	add("clusterTemplates", len(d.ClusterTemplates), func(i int) domain.Entity { return d.ClusterTemplates[i] })
	return es, paths
}

// DecodeDocument reads a catalog document in JSON or YAML (YAML is converted
// to JSON first, so both get the same strict checks and field paths).
func DecodeDocument(data []byte) (*Document, error) {
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, domain.Problems{{Code: domain.CodeMalformed, Message: "the document is neither valid JSON nor valid YAML: " + err.Error()}}
	}
	var d Document
	if err := domain.DecodeStrict(js, &d); err != nil {
		return nil, err
	}
	if d.APIVersion != DocumentAPIVersion {
		return nil, domain.Problems{{Field: "apiVersion", Code: domain.CodeInvalid,
			Message: fmt.Sprintf("is %q; this server reads %q documents", d.APIVersion, DocumentAPIVersion)}}
	}
	for i, e := range mustEntities(&d) {
		if e == nil {
			return nil, domain.Problems{{Field: fmt.Sprintf("entity %d", i), Code: domain.CodeInvalid, Message: "is null"}}
		}
	}
	return &d, nil
}

func mustEntities(d *Document) []domain.Entity { es, _ := d.entities(); return es }

// ImportResult says what an import wrote.
type ImportResult struct {
	Created   []Ref `json:"created"`
	Updated   []Ref `json:"updated"`
	Unchanged []Ref `json:"unchanged"` // the same content as their latest version: nothing written
}

// Import writes every entity of d as its next version, all or nothing: up to
// 49 entities in one transaction, more staged and then published with one
// conditional write (see "Staged imports" in doc.go). Readers see either the
// catalog before or the catalog after, never a part of the import. Every problem in the document is
// reported at once, with its path in the document.
func (c *Catalog) Import(ctx context.Context, tenant string, d *Document) (*ImportResult, error) {
	es, paths := d.entities()
	var ps domain.Problems
	seen := map[Ref]string{}
	for i, e := range es {
		for _, p := range validate(e) {
			p.Field = joinField(paths[i], p.Field)
			ps = append(ps, p)
		}
		ref := Ref{Kind: e.EntityKind(), Name: e.EntityMeta().Name}
		if prev, dup := seen[ref]; dup {
			ps = append(ps, domain.Problem{Field: paths[i] + ".name", Code: domain.CodeDuplicate,
				Message: fmt.Sprintf("%s %q is already defined at %s", singular(ref.Kind), ref.Name, prev)})
		}
		seen[ref] = paths[i]
	}
	if len(ps) > 0 {
		return nil, ps
	}
	var res ImportResult
	err := c.write(ctx, tenant, func(tx *writeTx) error {
		res = ImportResult{Created: []Ref{}, Updated: []Ref{}, Unchanged: []Ref{}}
		// Stage everything first so templates may refer to entities that come
		// later in the document.
		for i, e := range es {
			ref := Ref{Kind: e.EntityKind(), Name: e.EntityMeta().Name}
			tx.pending[ref] = e
			tx.paths[ref] = paths[i]
		}
		if err := tx.prefetchHeads(es); err != nil {
			return err
		}
		var ps domain.Problems
		for i, e := range es {
			_, outcome, err := tx.put(e, "")
			if problems, ok := err.(domain.Problems); ok {
				for _, p := range problems {
					p.Field = joinField(paths[i], p.Field)
					ps = append(ps, p)
				}
				continue
			}
			if err != nil {
				return err
			}
			ref := Ref{Kind: e.EntityKind(), Name: e.EntityMeta().Name}
			switch outcome {
			case OutcomeCreated:
				res.Created = append(res.Created, ref)
			case OutcomeUpdated:
				res.Updated = append(res.Updated, ref)
			default:
				res.Unchanged = append(res.Unchanged, ref)
			}
		}
		return ps.Err()
	})
	if err != nil {
		return nil, err
	}
	return &res, nil
}

func joinField(prefix, field string) string {
	if field == "" {
		return prefix
	}
	return prefix + "." + field
}

// Export returns the tenant's whole catalog (latest live versions) as a
// document that Import accepts. Versions are left out: an import writes new
// ones.
func (c *Catalog) Export(ctx context.Context, tenant string) (*Document, error) {
	return c.ExportKinds(ctx, tenant, domain.Kinds...)
}

// ExportKinds is Export of the given kinds only (the cluster service reads
// every kind but scripts, whose content it does not need).
//
// The document is one snapshot: all of it is read at one revision of the
// catalog, and read again when a write committed meanwhile, so it never
// mixes two imports.
func (c *Catalog) ExportKinds(ctx context.Context, tenant string, kinds ...domain.Kind) (*Document, error) {
	s := c.scoped(tenant)
	var d *Document
	err := c.snapshot(ctx, s, func() error {
		var err error
		d, err = exportKinds(ctx, s, kinds)
		return err
	})
	return d, err
}

func exportKinds(ctx context.Context, s store.Store, kinds []domain.Kind) (*Document, error) {
	d := &Document{APIVersion: DocumentAPIVersion}
	for _, k := range kinds {
		cursor := ""
		for {
			es, next, err := listPage(ctx, s, k, store.MaxPageSize, cursor)
			if err != nil {
				return nil, err
			}
			for _, e := range es {
				e.EntityMeta().Version = 0
				d.add(e)
			}
			if next == "" {
				break
			}
			cursor = next
		}
	}
	return d, nil
}

// MarshalDocument renders d as JSON, or YAML when asYAML is set.
func MarshalDocument(d *Document, asYAML bool) ([]byte, error) {
	js, err := json.MarshalIndent(d, "", "  ")
	if err != nil || !asYAML {
		return js, err
	}
	return yaml.JSONToYAML(js)
}
