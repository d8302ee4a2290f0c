package catalog

import (
	"encoding/json"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/store"
)

// refused checks that err holds problems, the first of code at field with
// a sentence that holds each of says, and returns how many.
func refused(t *testing.T, err error, field, code string, says ...string) int {
	t.Helper()
	var ps domain.Problems
	require.ErrorAs(t, err, &ps)
	require.Equal(t, field, ps[0].Field, "%v", ps)
	require.Equal(t, code, ps[0].Code, "%v", ps)
	for _, s := range says {
		require.Contains(t, ps[0].Message, s)
	}
	return len(ps)
}

// unchangedBy runs write, which must be refused, and checks that the
// catalog's revision (bumped by every write) did not move.
func (b *testBundle) unchangedBy(t *testing.T, write func() error) error {
	t.Helper()
	before, err := b.cat.Revision(b.ctx, "acme")
	require.NoError(t, err)
	werr := write()
	require.Error(t, werr)
	after, err := b.cat.Revision(b.ctx, "acme")
	require.NoError(t, err)
	require.Equal(t, before, after, "a refused write changed the catalog")
	return werr
}

func script(name, content string) *domain.Script {
	return &domain.Script{Meta: domain.Meta{Name: name}, Content: content}
}

func runsScript(name, script, version string) *domain.Service {
	fields := map[string]string{domain.FieldScriptResource: script}
	if version != "" {
		fields[domain.FieldScriptVersion] = version
	}
	return &domain.Service{Meta: domain.Meta{Name: name},
		Actions: map[domain.Action]domain.ServiceAction{domain.ActionInstall: {Type: "shell", Fields: fields}}}
}

func TestAPinnedScriptVersionMustExist(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.put(t, "acme", script("setup", "echo 1"))
	b.put(t, "acme", script("setup", "echo 2"))

	err := b.unchangedBy(t, func() error { _, _, err := b.cat.Put(b.ctx, "acme", runsScript("app", "setup", "999"), ""); return err })
	refused(t, err, "actions.install.fields.script_version", domain.CodeUnknownRef, `version 999 of script "setup"`, "versions 1 to 2")
	_, err = b.cat.Get(b.ctx, "acme", domain.KindService, "app", 0)
	require.ErrorIs(t, err, ErrNotFound)

	b.put(t, "acme", runsScript("app", "setup", "2"))
	b.put(t, "acme", runsScript("app", "setup", "1"))

	// In an import, a version the same document gives the script counts.
	d := &Document{APIVersion: DocumentAPIVersion, Scripts: []*domain.Script{script("setup", "echo 3")},
		Services: []*domain.Service{runsScript("app", "setup", "3")}}
	res, err := b.cat.Import(b.ctx, "acme", d)
	require.NoError(t, err)
	require.Len(t, res.Updated, 2)

	d = &Document{APIVersion: DocumentAPIVersion, Scripts: []*domain.Script{script("setup", "echo 4"), script("other", "echo")},
		Services: []*domain.Service{runsScript("db", "other", "1"), runsScript("app", "setup", "5")}}
	err = b.unchangedBy(t, func() error { _, err := b.cat.Import(b.ctx, "acme", d); return err })
	refused(t, err, "services[1].actions.install.fields.script_version", domain.CodeUnknownRef, "versions 1 to 4")
	_, err = b.cat.Get(b.ctx, "acme", domain.KindScript, "other", 0)
	require.ErrorIs(t, err, ErrNotFound, "a refused import writes nothing")
}

func partialTemplate(name string, extends string, includes ...string) *domain.PartialTemplate {
	p := &domain.PartialTemplate{Meta: domain.Meta{Name: name}}
	if extends != "" {
		p.Extends = &domain.TemplateRef{Name: extends}
	}
	for _, i := range includes {
		p.Includes = append(p.Includes, domain.TemplateRef{Name: i})
	}
	return p
}

func TestTemplateCyclesAreRefusedWhenWritten(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.webCatalog(t, "acme")
	b.put(t, "acme", partialTemplate("a", ""))
	b.put(t, "acme", partialTemplate("b", "", "a"))
	b.put(t, "acme", partialTemplate("c", "b"))

	put := func(e domain.Entity) error {
		return b.unchangedBy(t, func() error { _, _, err := b.cat.Put(b.ctx, "acme", e, ""); return err })
	}
	// Itself, two, three: a -> c -> b -> a.
	refused(t, put(partialTemplate("a", "", "a")), "includes[0]", domain.CodeCycle, "partialtemplates/a -> partialtemplates/a")
	refused(t, put(partialTemplate("a", "", "b")), "includes[0]", domain.CodeCycle, "partialtemplates/a -> partialtemplates/b -> partialtemplates/a")
	refused(t, put(partialTemplate("a", "c")), "extends", domain.CodeCycle,
		"partialtemplates/a -> partialtemplates/c -> partialtemplates/b -> partialtemplates/a")
	a, err := b.cat.Get(b.ctx, "acme", domain.KindPartialTemplate, "a", 0)
	require.NoError(t, err)
	require.Equal(t, 1, a.EntityMeta().Version)

	// A partial template extending a cluster template that includes it.
	web, err := b.cat.Get(b.ctx, "acme", domain.KindClusterTemplate, "web", 0)
	require.NoError(t, err)
	withA := web.(*domain.ClusterTemplate)
	withA.Version = 0
	withA.Includes = append(withA.Includes, domain.TemplateRef{Name: "a"})
	b.put(t, "acme", withA)
	refused(t, put(partialTemplate("a", "web")), "extends", domain.CodeCycle, "clustertemplates/web")

	// In one import, of any size, with the field's place in the document.
	small := &Document{APIVersion: DocumentAPIVersion, PartialTemplates: []*domain.PartialTemplate{
		partialTemplate("x", "", "y"), partialTemplate("y", "", "x")}}
	err = b.unchangedBy(t, func() error { _, err := b.cat.Import(b.ctx, "acme", small); return err })
	require.Equal(t, 2, refused(t, err, "partialTemplates[0].includes[0]", domain.CodeCycle, "partialtemplates/x -> partialtemplates/y -> partialtemplates/x"),
		"each template on the cycle is reported")

	large := largeDoc(t, 60, "L")
	large.PartialTemplates = append(large.PartialTemplates, partialTemplate("self", "", "self"))
	i := len(large.PartialTemplates) - 1
	err = b.unchangedBy(t, func() error { _, err := b.cat.Import(b.ctx, "acme", large); return err })
	refused(t, err, "partialTemplates["+strconv.Itoa(i)+"].includes[0]", domain.CodeCycle)
	staged, records := stagedLeft(t, b.db, large)
	require.Zero(t, staged)
	require.Zero(t, records)
}

func TestServiceDependencyCyclesAreRefusedWhenWritten(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.put(t, "acme", service("ca", "cb")) // cb need not exist yet

	put := func(e domain.Entity) error {
		return b.unchangedBy(t, func() error { _, _, err := b.cat.Put(b.ctx, "acme", e, ""); return err })
	}
	refused(t, put(service("cb", "ca")), "dependencies.runtime.requires[0]", domain.CodeCycle, "runtime", "cb -> ca -> cb")
	_, err := b.cat.Get(b.ctx, "acme", domain.KindService, "cb", 0)
	require.ErrorIs(t, err, ErrNotFound)

	// Longer, through uses and a provided name, in the install phase.
	b.put(t, "acme", &domain.Service{Meta: domain.Meta{Name: "db"}, Dependencies: domain.ServiceDependencies{
		Provides: []string{"sql"}, Install: domain.DependencySet{Uses: []string{"web"}}}})
	b.put(t, "acme", &domain.Service{Meta: domain.Meta{Name: "app"}, Dependencies: domain.ServiceDependencies{
		Install: domain.DependencySet{Requires: []string{"kv"}, Uses: []string{"sql"}}}})
	web := &domain.Service{Meta: domain.Meta{Name: "web"}, Dependencies: domain.ServiceDependencies{
		Install: domain.DependencySet{Requires: []string{"app"}}}}
	refused(t, put(web), "dependencies.install.requires[0]", domain.CodeCycle, "install", "web -> app -> db -> web")

	// In an import, of any size, at the place of the first service written.
	d := &Document{APIVersion: DocumentAPIVersion, Services: []*domain.Service{service("p", "q"), service("q", "p")}}
	err = b.unchangedBy(t, func() error { _, err := b.cat.Import(b.ctx, "acme", d); return err })
	refused(t, err, "services[0].dependencies.runtime.requires[0]", domain.CodeCycle, "p -> q -> p")

	large := largeDoc(t, 60, "L")
	large.Services = append(large.Services, service("p", "q"), service("q", "p"))
	err = b.unchangedBy(t, func() error { _, err := b.cat.Import(b.ctx, "acme", large); return err })
	refused(t, err, "services["+strconv.Itoa(len(large.Services)-2)+"].dependencies.runtime.requires[0]", domain.CodeCycle, "p -> q -> p")
	staged, records := stagedLeft(t, b.db, large)
	require.Zero(t, staged)
	require.Zero(t, records)

	// Breaking the loop lets it in.
	b.put(t, "acme", service("cb"))
}

func TestDepGraphFindsEveryCycleThroughAService(t *testing.T) {
	t.Parallel()
	// A chain long enough that a recursive search would go deep, closed
	// into one loop, beside a service outside it.
	var services []*domain.Service
	const n = 5000
	for i := range n {
		services = append(services, service("s"+strconv.Itoa(i), "s"+strconv.Itoa((i+1)%n)))
	}
	services = append(services, service("alone", "s0"))
	g := newDepGraph(services, func(s *domain.Service) domain.DependencySet { return s.Dependencies.Runtime })
	require.Equal(t, n, g.compSize[g.comp[g.index["s0"]]])
	require.Equal(t, 1, g.compSize[g.comp[g.index["alone"]]])
	cycle := g.cycleThrough(g.index["s7"])
	require.Len(t, cycle, n+1)
	require.Equal(t, g.index["s7"], cycle[0])
	require.Equal(t, g.index["s8"], cycle[1])
	require.Equal(t, g.index["s7"], cycle[n])
}

func TestWritingTheSameScriptTextKeepsItsDescriptionAndChangesNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	described := script("greet", "echo hi\n")
	described.Description = "Says hello."
	_, outcome, err := b.cat.Write(b.ctx, "acme", described, "")
	require.NoError(t, err)
	require.Equal(t, OutcomeCreated, outcome)

	got, outcome, err := b.cat.WriteScriptText(b.ctx, "acme", "greet", "echo hi\n", "")
	require.NoError(t, err)
	require.Equal(t, OutcomeUnchanged, outcome)
	require.Equal(t, 1, got.EntityMeta().Version)
	require.Equal(t, "Says hello.", got.EntityMeta().Description)

	got, outcome, err = b.cat.WriteScriptText(b.ctx, "acme", "greet", "echo hello\n", "")
	require.NoError(t, err)
	require.Equal(t, OutcomeUpdated, outcome)
	require.Equal(t, 2, got.EntityMeta().Version)
	require.Equal(t, "Says hello.", got.EntityMeta().Description, "a bare upload keeps the description")

	// Written whole, the script is what was sent: the same document
	// applied twice changes nothing the second time.
	again := script("greet", "echo hello\n")
	again.Description = "Says hello."
	_, outcome, err = b.cat.Write(b.ctx, "acme", again, "")
	require.NoError(t, err)
	require.Equal(t, OutcomeUnchanged, outcome)

	_, outcome, err = b.cat.WriteScriptText(b.ctx, "acme", "fresh", "echo\n", "")
	require.NoError(t, err)
	require.Equal(t, OutcomeCreated, outcome)
}

// storeRaw writes s as version 1 straight into the store, as a release
// without the write-time rules could have.
func (b *testBundle) storeRaw(t *testing.T, tenant string, s *domain.Service) {
	t.Helper()
	s.Version = 1
	data, err := json.Marshal(s)
	require.NoError(t, err)
	require.NoError(t, store.Scoped(b.db, tenant).Transact(b.ctx, []store.Op{
		store.Put(store.Item{Key: headKey(domain.KindService, s.Name), Status: statusLive, Counters: map[string]int64{counterLatest: 1}, Data: data}, store.Condition{}),
		store.Put(store.Item{Key: versionKey(domain.KindService, s.Name, 1), Data: data}, store.Condition{}),
	}))
}

func TestATemplateMayNotCombineServicesOnACycle(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.webCatalog(t, "acme")
	b.storeRaw(t, "acme", service("la", "lb"))
	b.storeRaw(t, "acme", service("lb", "la"))

	template := func(services ...string) *domain.ClusterTemplate {
		return &domain.ClusterTemplate{Meta: domain.Meta{Name: "loop"}, TemplateSections: domain.TemplateSections{
			Compatibility: domain.Compatibility{Services: services},
			Defaults:      domain.Defaults{Services: services[:1], Provider: "local", HardwareType: "small", ImageType: "debian"},
		}}
	}
	err := b.unchangedBy(t, func() error { _, _, err := b.cat.Put(b.ctx, "acme", template("kv", "la", "lb"), ""); return err })
	refused(t, err, "compatibility.services[1]", domain.CodeCycle, "runtime", "la -> lb -> la")

	// Either one alone is no cycle; nor is the stored loop a later write's
	// to refuse when that write does not combine it.
	b.put(t, "acme", template("kv", "la"))
	b.put(t, "acme", service("other", "kv"))
}
