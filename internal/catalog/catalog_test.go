package catalog

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/store"
	"github.com/heddle-io/heddle/internal/store/boltstore"
)

type testBundle struct {
	ctx      context.Context
	cat      *Catalog
	db       store.Store
	clusters []domain.Cluster
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	db, err := boltstore.Open(filepath.Join(t.TempDir(), "heddle.db"), boltstore.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	b := &testBundle{ctx: context.Background(), db: db}
	b.cat = New(db, func(context.Context, string) ([]domain.Cluster, error) { return b.clusters, nil })
	return b
}

func service(name string, requires ...string) *domain.Service {
	return &domain.Service{Meta: domain.Meta{Name: name}, Dependencies: domain.ServiceDependencies{Runtime: domain.DependencySet{Requires: requires}}}
}

func (b *testBundle) put(t *testing.T, tenant string, e domain.Entity) domain.Entity {
	t.Helper()
	got, _, err := b.cat.Put(b.ctx, tenant, e, "")
	require.NoError(t, err)
	return got
}

// webCatalog writes the example catalog's essentials into tenant.
func (b *testBundle) webCatalog(t *testing.T, tenant string) {
	t.Helper()
	data, err := os.ReadFile("../../docs/examples/catalog.yaml")
	require.NoError(t, err)
	d, err := DecodeDocument(data)
	require.NoError(t, err)
	_, err = b.cat.Import(b.ctx, tenant, d)
	require.NoError(t, err)
}

func TestPutWritesVersions(t *testing.T) {
	t.Parallel()
	b := setup(t)

	first, created, err := b.cat.Put(b.ctx, "acme", service("kv"), "")
	require.NoError(t, err)
	require.True(t, created)
	require.Equal(t, 1, first.EntityMeta().Version)

	changed := service("kv")
	changed.Description = "now with a description"
	second, created, err := b.cat.Put(b.ctx, "acme", changed, "")
	require.NoError(t, err)
	require.False(t, created)
	require.Equal(t, 2, second.EntityMeta().Version)

	latest, err := b.cat.Get(b.ctx, "acme", domain.KindService, "kv", 0)
	require.NoError(t, err)
	require.Equal(t, "now with a description", latest.(*domain.Service).Description)
	v1, err := b.cat.Get(b.ctx, "acme", domain.KindService, "kv", 1)
	require.NoError(t, err)
	require.Empty(t, v1.(*domain.Service).Description)
	_, err = b.cat.Get(b.ctx, "acme", domain.KindService, "kv", 3)
	require.ErrorIs(t, err, ErrNotFound)

	versions, next, err := b.cat.Versions(b.ctx, "acme", domain.KindService, "kv", 10, "")
	require.NoError(t, err)
	require.Empty(t, next)
	require.Len(t, versions, 2)
	require.Equal(t, 2, versions[0].EntityMeta().Version, "newest first")
}

func TestPutSameContentIsANoOp(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.put(t, "acme", service("kv"))
	again, created, err := b.cat.Put(b.ctx, "acme", service("kv"), "")
	require.NoError(t, err)
	require.False(t, created)
	require.Equal(t, 1, again.EntityMeta().Version)
	rev, err := b.cat.Revision(b.ctx, "acme")
	require.NoError(t, err)
	require.Equal(t, int64(1), rev, "a no-op put must not bump the catalog revision")
}

func TestPutIfMatch(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, _, err := b.cat.Put(b.ctx, "acme", service("kv"), `"1"`)
	require.ErrorIs(t, err, ErrNotFound, "If-Match on a missing entity")
	b.put(t, "acme", service("kv"))
	changed := service("kv")
	changed.Label = "KV"
	_, _, err = b.cat.Put(b.ctx, "acme", changed, `"7"`)
	require.ErrorIs(t, err, ErrPrecondition)
	_, _, err = b.cat.Put(b.ctx, "acme", changed, ETag(1))
	require.NoError(t, err)
	require.ErrorIs(t, b.cat.Delete(b.ctx, "acme", domain.KindService, "kv", ETag(1)), ErrPrecondition)
}

func TestPutRejectsInvalidAndUnknownReferences(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, _, err := b.cat.Put(b.ctx, "acme", &domain.Service{}, "")
	var ps domain.Problems
	require.ErrorAs(t, err, &ps)
	require.Equal(t, "name", ps[0].Field)

	tmpl := &domain.ClusterTemplate{Meta: domain.Meta{Name: "t"}, TemplateSections: domain.TemplateSections{
		Compatibility: domain.Compatibility{Services: []string{"kv", "ghost"}},
		Defaults:      domain.Defaults{Services: []string{"kv"}, Provider: "nowhere"},
	}}
	b.put(t, "acme", service("kv"))
	_, _, err = b.cat.Put(b.ctx, "acme", tmpl, "")
	require.ErrorAs(t, err, &ps)
	require.Equal(t, []string{"compatibility.services[1]", "defaults.provider"}, []string{ps[0].Field, ps[1].Field})
	require.Equal(t, domain.CodeUnknownRef, ps[0].Code)
	_, err = b.cat.Get(b.ctx, "acme", domain.KindClusterTemplate, "t", 0)
	require.ErrorIs(t, err, ErrNotFound, "a rejected write changes nothing")
}

func TestDeleteRefusedWhileReferenced(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.webCatalog(t, "acme")

	err := b.cat.Delete(b.ctx, "acme", domain.KindService, "kv", "")
	var ref *ReferencedError
	require.ErrorAs(t, err, &ref)
	require.Equal(t, []Ref{{Kind: domain.KindClusterTemplate, Name: "web"}}, ref.Referrers)

	err = b.cat.Delete(b.ctx, "acme", domain.KindPartialTemplate, "local-base", "")
	require.ErrorAs(t, err, &ref, "extends counts as a reference")

	b.clusters = []domain.Cluster{{ID: "c-1", Template: domain.TemplateRef{Name: "web"}, Provider: "local", Services: []string{"kv"}, Status: domain.ClusterActive}}
	err = b.cat.Delete(b.ctx, "acme", domain.KindClusterTemplate, "web", "")
	require.ErrorAs(t, err, &ref)
	require.Equal(t, []Ref{{Kind: KindCluster, Name: "c-1"}}, ref.Referrers)

	b.clusters = nil
	require.NoError(t, b.cat.Delete(b.ctx, "acme", domain.KindClusterTemplate, "web", ""))
	require.NoError(t, b.cat.Delete(b.ctx, "acme", domain.KindService, "kv", ""))
	_, err = b.cat.Get(b.ctx, "acme", domain.KindService, "kv", 0)
	require.ErrorIs(t, err, ErrNotFound)
	_, err = b.cat.Get(b.ctx, "acme", domain.KindService, "kv", 1)
	require.ErrorIs(t, err, ErrNotFound, "old versions of a deleted entity are gone too")
	require.ErrorIs(t, b.cat.Delete(b.ctx, "acme", domain.KindService, "kv", ""), ErrNotFound)

	again := b.put(t, "acme", service("kv"))
	require.Equal(t, 2, again.EntityMeta().Version, "numbering continues after a delete, so old ETags never match")
}

func TestDeleteRefusedWhileALiveClusterUsesHardwareOrImage(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.webCatalog(t, "acme")
	resolved, err := b.cat.Resolve(b.ctx, "acme", "web", 0)
	require.NoError(t, err)
	require.Equal(t, "small", resolved.Defaults.HardwareType, "the example template's nodes use the small hardware type")
	require.Equal(t, "debian", resolved.Defaults.ImageType)

	// With the template and its base gone, only the cluster still uses them.
	require.NoError(t, b.cat.Delete(b.ctx, "acme", domain.KindClusterTemplate, "web", ""))
	require.NoError(t, b.cat.Delete(b.ctx, "acme", domain.KindPartialTemplate, "local-base", ""))
	b.clusters = []domain.Cluster{{
		ID: "c-1", Template: domain.TemplateRef{Name: "web", Version: resolved.Version}, Resolved: resolved,
		Provider: "local", Services: []string{"kv", "lb", "web"}, Status: domain.ClusterActive,
	}}

	var ref *ReferencedError
	err = b.cat.Delete(b.ctx, "acme", domain.KindHardwareType, "small", "")
	require.ErrorAs(t, err, &ref)
	require.Equal(t, []Ref{{Kind: KindCluster, Name: "c-1"}}, ref.Referrers)
	err = b.cat.Delete(b.ctx, "acme", domain.KindImageType, "debian", "")
	require.ErrorAs(t, err, &ref)
	require.Equal(t, []Ref{{Kind: KindCluster, Name: "c-1"}}, ref.Referrers)
	_, err = b.cat.Get(b.ctx, "acme", domain.KindHardwareType, "small", 0)
	require.NoError(t, err, "a refused delete changes nothing")

	// Types the resolved template allows but does not default to count too.
	b.put(t, "acme", &domain.HardwareType{Meta: domain.Meta{Name: "large"}, ProviderMap: map[string]domain.HardwareFlavor{"local": {Flavor: "large"}}})
	b.put(t, "acme", &domain.ImageType{Meta: domain.Meta{Name: "alpine"}, ProviderMap: map[string]domain.ImageRef{"local": {Image: "host"}}})
	allowing := *resolved
	allowing.Compatibility.HardwareTypes = []string{"small", "large"}
	allowing.Constraints.Services = map[string]domain.ServiceConstraint{"kv": {ImageTypes: []string{"alpine"}}}
	b.clusters = []domain.Cluster{{ID: "c-2", Template: domain.TemplateRef{Name: "web"}, Resolved: &allowing, Provider: "local", Status: domain.ClusterActive}}
	err = b.cat.Delete(b.ctx, "acme", domain.KindHardwareType, "large", "")
	require.ErrorAs(t, err, &ref)
	require.Equal(t, []Ref{{Kind: KindCluster, Name: "c-2"}}, ref.Referrers)
	err = b.cat.Delete(b.ctx, "acme", domain.KindImageType, "alpine", "")
	require.ErrorAs(t, err, &ref)
	require.Equal(t, []Ref{{Kind: KindCluster, Name: "c-2"}}, ref.Referrers)

	// Once no live cluster uses them, they go.
	b.clusters = nil
	require.NoError(t, b.cat.Delete(b.ctx, "acme", domain.KindHardwareType, "small", ""))
	require.NoError(t, b.cat.Delete(b.ctx, "acme", domain.KindImageType, "debian", ""))
}

func TestClusterRefs(t *testing.T) {
	t.Parallel()
	c := domain.Cluster{Template: domain.TemplateRef{Name: "web"}, Provider: "local", Services: []string{"kv"}}
	base := []Ref{{Kind: domain.KindClusterTemplate, Name: "web"}, {Kind: domain.KindProvider, Name: "local"}, {Kind: domain.KindService, Name: "kv"}}
	require.Equal(t, base, clusterRefs(c), "a cluster listed without its resolved template")

	c.Resolved = &domain.ClusterTemplate{TemplateSections: domain.TemplateSections{
		Compatibility: domain.Compatibility{HardwareTypes: []string{"small", "large"}, ImageTypes: []string{"debian"}},
		Defaults:      domain.Defaults{HardwareType: "small", ImageType: "debian"},
		Constraints: domain.Constraints{Services: map[string]domain.ServiceConstraint{
			"kv": {HardwareTypes: []string{"huge", "large"}, ImageTypes: []string{"alpine"}}}},
	}}
	require.Equal(t, append(base,
		Ref{Kind: domain.KindHardwareType, Name: "small"},
		Ref{Kind: domain.KindHardwareType, Name: "large"},
		Ref{Kind: domain.KindImageType, Name: "debian"},
		Ref{Kind: domain.KindHardwareType, Name: "huge"},
		Ref{Kind: domain.KindImageType, Name: "alpine"},
	), clusterRefs(c), "each hardware and image type once")
}

func TestTenantsAreIsolated(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.webCatalog(t, "acme")
	_, err := b.cat.Get(b.ctx, "globex", domain.KindService, "kv", 0)
	require.ErrorIs(t, err, ErrNotFound)
	items, _, err := b.cat.List(b.ctx, "globex", domain.KindService, 100, "")
	require.NoError(t, err)
	require.Empty(t, items)
	require.ErrorIs(t, b.cat.Delete(b.ctx, "globex", domain.KindService, "kv", ""), ErrNotFound)
	// globex's own service of the same name is another entity.
	require.Equal(t, 1, b.put(t, "globex", service("kv")).EntityMeta().Version)
}

func TestListPages(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for i := range 7 {
		b.put(t, "acme", service(fmt.Sprintf("svc%02d", i)))
	}
	var names []string
	cursor := ""
	for {
		items, next, err := b.cat.List(b.ctx, "acme", domain.KindService, 3, cursor)
		require.NoError(t, err)
		for _, e := range items {
			names = append(names, e.EntityMeta().Name)
		}
		if next == "" {
			break
		}
		cursor = next
	}
	require.Equal(t, []string{"svc00", "svc01", "svc02", "svc03", "svc04", "svc05", "svc06"}, names)
}

func TestImportIsAllOrNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	bad := []byte(`
apiVersion: heddle/v1
services:
  - name: kv
  - name: web
    actions: {start: {type: ""}}
clusterTemplates:
  - name: t
    compatibility: {services: [kv, missing]}
    defaults: {services: [kv], provider: p}
`)
	d, err := DecodeDocument(bad)
	require.NoError(t, err)
	_, err = b.cat.Import(b.ctx, "acme", d)
	var ps domain.Problems
	require.ErrorAs(t, err, &ps)
	require.Equal(t, "services[1].actions.start.type", ps[0].Field)
	_, err = b.cat.Get(b.ctx, "acme", domain.KindService, "kv", 0)
	require.ErrorIs(t, err, ErrNotFound, "nothing of a rejected import is written")

	// Validation passes but references do not resolve: still nothing written.
	d.Services[1].Actions = nil
	_, err = b.cat.Import(b.ctx, "acme", d)
	require.ErrorAs(t, err, &ps)
	require.Contains(t, fieldsOf(ps), "clusterTemplates[0].compatibility.services[1]")
	require.Contains(t, fieldsOf(ps), "clusterTemplates[0].defaults.provider")
	_, err = b.cat.Get(b.ctx, "acme", domain.KindService, "kv", 0)
	require.ErrorIs(t, err, ErrNotFound)

	big := &Document{APIVersion: DocumentAPIVersion}
	for i := range 50 {
		big.Services = append(big.Services, service(fmt.Sprintf("s%d", i)))
	}
	// Fifty services do not fit in one transaction any more: the import is
	// staged, and a problem in it still writes nothing.
	big.Services[49].Actions = map[domain.Action]domain.ServiceAction{"start": {}}
	_, err = b.cat.Import(b.ctx, "acme", big)
	require.ErrorAs(t, err, &ps)
	require.Equal(t, "services[49].actions.start.type", ps[0].Field)
	items, _, err := b.cat.List(b.ctx, "acme", domain.KindService, 100, "")
	require.NoError(t, err)
	require.Empty(t, items)
	big.Services[49].Actions = nil
	_, err = b.cat.Import(b.ctx, "acme", big)
	require.NoError(t, err)
	items, _, err = b.cat.List(b.ctx, "acme", domain.KindService, 100, "")
	require.NoError(t, err)
	require.Len(t, items, 50)
}

func fieldsOf(ps domain.Problems) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.Field
	}
	return out
}

func TestExportImportRoundTrip(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.webCatalog(t, "acme")
	exported, err := b.cat.Export(b.ctx, "acme")
	require.NoError(t, err)
	require.Len(t, exported.Services, 3)

	for _, asYAML := range []bool{false, true} {
		tenant := fmt.Sprintf("copy-%t", asYAML)
		raw, err := MarshalDocument(exported, asYAML)
		require.NoError(t, err)
		d, err := DecodeDocument(raw)
		require.NoError(t, err)
		res, err := b.cat.Import(b.ctx, tenant, d)
		require.NoError(t, err)
		require.Len(t, res.Created, 8)
		again, err := b.cat.Export(b.ctx, tenant)
		require.NoError(t, err)
		require.Equal(t, exported, again)

		// Importing the same document again changes nothing.
		rev, err := b.cat.Revision(b.ctx, tenant)
		require.NoError(t, err)
		res, err = b.cat.Import(b.ctx, tenant, d)
		require.NoError(t, err)
		require.Empty(t, res.Created)
		require.Empty(t, res.Updated, "an entity written again with the same content is not updated")
		require.Len(t, res.Unchanged, 8)
		rev2, err := b.cat.Revision(b.ctx, tenant)
		require.NoError(t, err)
		require.Equal(t, rev, rev2)
	}
}

func TestConcurrentPutsLoseNoVersion(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const writers = 8
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := service("kv")
			s.Description = fmt.Sprintf("writer %d", i)
			_, _, err := b.cat.Put(b.ctx, "acme", s, "")
			if err != nil && !errors.Is(err, ErrBusy) {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	versions, _, err := b.cat.Versions(b.ctx, "acme", domain.KindService, "kv", 100, "")
	require.NoError(t, err)
	seen := map[string]bool{}
	for i, v := range versions {
		require.Equal(t, len(versions)-i, v.EntityMeta().Version, "versions are dense")
		require.False(t, seen[v.(*domain.Service).Description])
		seen[v.(*domain.Service).Description] = true
	}
	require.GreaterOrEqual(t, len(versions), 1)
}

func TestResolveThroughTheStore(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.webCatalog(t, "acme")
	tmpl, err := b.cat.Resolve(b.ctx, "acme", "web", 0)
	require.NoError(t, err)
	require.Equal(t, "local", tmpl.Defaults.Provider, "from the immutable partial it extends")
	require.Equal(t, domain.Duration(24*3600e9), tmpl.Administration.Lease.Initial)
	require.Nil(t, tmpl.Extends)

	override := *tmpl
	override.Defaults.Provider = "ec2"
	override.Extends = &domain.TemplateRef{Name: "local-base"}
	b.put(t, "acme", &domain.Provider{Meta: domain.Meta{Name: "ec2"}, ProviderType: "ec2"})
	_, _, err = b.cat.Put(b.ctx, "acme", &domain.ClusterTemplate{Meta: domain.Meta{Name: "web2"}, TemplateSections: override.TemplateSections}, "")
	var ps domain.Problems
	require.ErrorAs(t, err, &ps)
	require.Equal(t, "defaults.provider", ps[0].Field)
	require.Equal(t, domain.CodeImmutable, ps[0].Code)
}

func TestDropTenant(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.webCatalog(t, "acme")
	b.webCatalog(t, "globex")
	require.NoError(t, b.cat.DropTenant(b.ctx, "acme"))
	for _, k := range domain.Kinds {
		items, _, err := b.cat.List(b.ctx, "acme", k, 100, "")
		require.NoError(t, err)
		require.Empty(t, items, k)
	}
	_, err := b.cat.Get(b.ctx, "globex", domain.KindService, "kv", 0)
	require.NoError(t, err, "other tenants keep their catalog")
	b.webCatalog(t, "acme")
}
