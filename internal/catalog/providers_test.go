package catalog

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/provider"
	"github.com/heddle-io/heddle/internal/provider/ec2"
	"github.com/heddle-io/heddle/internal/secrets"
	"github.com/heddle-io/heddle/internal/store"
	"github.com/heddle-io/heddle/internal/store/boltstore"
)

// plainSecret is the secret access key the tests store; it must never be
// found in a stored item or a read.
const plainSecret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"

type nopProvider struct{}

func (nopProvider) Create(context.Context, provider.Request) (provider.Node, error) {
	return provider.Node{}, nil
}
func (nopProvider) Confirm(context.Context, provider.Request) (provider.Progress, error) {
	return provider.Done(provider.Node{}), nil
}
func (nopProvider) Delete(context.Context, provider.Request) (provider.Progress, error) {
	return provider.Done(provider.Node{}), nil
}

type providerBundle struct {
	*testBundle
	reg *provider.Registry
	kr  *secrets.Keyring
}

// setupProviders is setup with a registry holding the ec2 type.
func setupProviders(t *testing.T) *providerBundle {
	t.Helper()
	db, err := boltstore.Open(filepath.Join(t.TempDir(), "heddle.db"), boltstore.Options{NoSync: true})
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	key, err := secrets.LoadOrCreateKeyFile(filepath.Join(t.TempDir(), "master.key"))
	require.NoError(t, err)
	reg := provider.NewRegistry()
	require.NoError(t, reg.Register(ec2.Type(), nopProvider{}))
	kr := secrets.NewKeyring(key)
	b := &testBundle{ctx: context.Background(), db: db}
	b.cat = New(db, nil, WithProviders(reg, kr))
	return &providerBundle{testBundle: b, reg: reg, kr: kr}
}

func ec2Provider(fields map[string]string) *domain.Provider {
	return &domain.Provider{Meta: domain.Meta{Name: "aws"}, ProviderType: ec2.TypeName, Fields: fields}
}

func withSecret() map[string]string {
	return map[string]string{ec2.FieldRegion: "eu-west-1", ec2.FieldAccessKeyID: "AKIAIOSFODNN7EXAMPLE", ec2.FieldSecretAccessKey: plainSecret}
}

// rawItems returns the stored bytes of the provider's head and versions.
func (b *providerBundle) rawItems(t *testing.T, name string) string {
	t.Helper()
	s := store.Scoped(b.db, "acme")
	head, err := s.Get(b.ctx, headKey(domain.KindProvider, name))
	require.NoError(t, err)
	out := string(head.Data)
	page, err := s.Query(b.ctx, versionKey(domain.KindProvider, name, 0).PK, store.Query{})
	require.NoError(t, err)
	for _, it := range page.Items {
		out += "\n" + string(it.Data)
	}
	return out
}

func problemFields(t *testing.T, err error) map[string]string {
	t.Helper()
	var ps domain.Problems
	require.ErrorAs(t, err, &ps)
	out := map[string]string{}
	for _, p := range ps {
		require.NotEmpty(t, p.Message)
		out[p.Field] = p.Code
	}
	return out
}

func TestProvidersAreValidatedAgainstTheirType(t *testing.T) {
	t.Parallel()
	b := setupProviders(t)
	tests := []struct {
		name string
		p    *domain.Provider
		want map[string]string
	}{
		{"unknown type", &domain.Provider{Meta: domain.Meta{Name: "aws"}, ProviderType: "openstack"},
			map[string]string{"providerType": domain.CodeUnknownRef}},
		{"missing required field", ec2Provider(map[string]string{ec2.FieldSubnetID: "subnet-0123abcd"}),
			map[string]string{"fields.region": domain.CodeRequired}},
		{"undeclared field", ec2Provider(map[string]string{ec2.FieldRegion: "eu-west-1", "colour": "blue"}),
			map[string]string{"fields.colour": domain.CodeUnknownField}},
		{"type's own check", ec2Provider(map[string]string{ec2.FieldRegion: "eu-west-1", ec2.FieldAccessKeyID: "AKIAIOSFODNN7EXAMPLE"}),
			map[string]string{"fields.secret_access_key": domain.CodeRequired}},
		{"placeholder with nothing stored", ec2Provider(map[string]string{ec2.FieldRegion: "eu-west-1", ec2.FieldAccessKeyID: "AKIAIOSFODNN7EXAMPLE", ec2.FieldSecretAccessKey: secrets.Redacted}),
			map[string]string{"fields.secret_access_key": domain.CodeRequired}},
		{"foreign sealed value", ec2Provider(map[string]string{ec2.FieldRegion: "eu-west-1", ec2.FieldAccessKeyID: "AKIAIOSFODNN7EXAMPLE", ec2.FieldSecretAccessKey: secrets.SealedPrefix + "v1:x"}),
			map[string]string{"fields.secret_access_key": domain.CodeInvalid}},
	}
	for _, tt := range tests {
		_, _, err := b.cat.Put(b.ctx, "acme", tt.p, "")
		require.Equal(t, tt.want, problemFields(t, err), tt.name)
		_, err = b.cat.Get(b.ctx, "acme", domain.KindProvider, "aws", 0)
		require.ErrorIs(t, err, ErrNotFound, "%s: nothing is written", tt.name)
	}

	// Import reports the same problems with their document paths, and
	// writes nothing.
	d := &Document{APIVersion: DocumentAPIVersion, Providers: []*domain.Provider{
		ec2Provider(withSecret()),
		{Meta: domain.Meta{Name: "os"}, ProviderType: "openstack"},
		{Meta: domain.Meta{Name: "bare"}, ProviderType: ec2.TypeName},
	}}
	_, err := b.cat.Import(b.ctx, "acme", d)
	require.Equal(t, map[string]string{"providers[1].providerType": domain.CodeUnknownRef, "providers[2].fields.region": domain.CodeRequired},
		problemFields(t, err))
	rev, err := b.cat.Revision(b.ctx, "acme")
	require.NoError(t, err)
	require.Zero(t, rev)

	// Without a registry the catalog stores any type, as before.
	plain := setup(t)
	plain.put(t, "acme", &domain.Provider{Meta: domain.Meta{Name: "aws"}, ProviderType: "openstack", Fields: map[string]string{"anything": "goes"}})
}

func TestSensitiveProviderFieldsAreSealed(t *testing.T) {
	t.Parallel()
	b := setupProviders(t)
	sent := ec2Provider(withSecret())
	stored, created, err := b.cat.Put(b.ctx, "acme", sent, "")
	require.NoError(t, err)
	require.True(t, created)
	require.Equal(t, plainSecret, sent.Fields[ec2.FieldSecretAccessKey], "the caller's entity is left alone")
	require.True(t, secrets.IsSealed(stored.(*domain.Provider).Fields[ec2.FieldSecretAccessKey]))

	raw := b.rawItems(t, "aws")
	require.NotContains(t, raw, plainSecret)
	require.NotContains(t, raw, "bPxRfiCY")
	require.Contains(t, raw, secrets.SealedPrefix)
	require.Contains(t, raw, "AKIAIOSFODNN7EXAMPLE", "fields that are not sensitive stay readable")

	// A worker opens it with the binding provision uses.
	got, err := b.cat.Get(b.ctx, "acme", domain.KindProvider, "aws", 0)
	require.NoError(t, err)
	opened, err := b.reg.OpenFields(b.ctx, b.kr, "acme", "c1", *got.(*domain.Provider), nil)
	require.NoError(t, err)
	require.Equal(t, plainSecret, opened.Fields[ec2.FieldSecretAccessKey])
	// ... and no other tenant's binding does.
	_, err = b.reg.OpenFields(b.ctx, b.kr, "globex", "c1", *got.(*domain.Provider), nil)
	require.Error(t, err)

	// Reads meant for clients are redacted, and so is the export.
	red := b.cat.Redacted(got).(*domain.Provider)
	require.Equal(t, secrets.Redacted, red.Fields[ec2.FieldSecretAccessKey])
	require.Equal(t, "eu-west-1", red.Fields[ec2.FieldRegion])
	require.True(t, secrets.IsSealed(got.(*domain.Provider).Fields[ec2.FieldSecretAccessKey]), "Redacted copies")
	doc, err := b.cat.Export(b.ctx, "acme")
	require.NoError(t, err)
	js, err := MarshalDocument(b.cat.RedactedDocument(doc), false)
	require.NoError(t, err)
	require.NotContains(t, string(js), plainSecret)
	require.NotContains(t, string(js), secrets.SealedPrefix)
	require.Contains(t, string(js), secrets.Redacted)
	require.True(t, secrets.IsSealed(doc.Providers[0].Fields[ec2.FieldSecretAccessKey]), "RedactedDocument copies")

	// Without a registry, a sealed value (however it got there) is still
	// never shown.
	plain := New(b.db, nil)
	require.Equal(t, secrets.Redacted, plain.Redacted(got).(*domain.Provider).Fields[ec2.FieldSecretAccessKey])
}

func TestWritingTheSameProviderAgainChangesNothing(t *testing.T) {
	t.Parallel()
	b := setupProviders(t)
	version := func() int {
		t.Helper()
		e, err := b.cat.Get(b.ctx, "acme", domain.KindProvider, "aws", 0)
		require.NoError(t, err)
		return e.EntityMeta().Version
	}
	revision := func() int64 {
		t.Helper()
		rev, err := b.cat.Revision(b.ctx, "acme")
		require.NoError(t, err)
		return rev
	}
	b.put(t, "acme", ec2Provider(withSecret()))
	rev := revision()

	// The same plaintext again (sealing it again would give other bytes).
	for range 2 {
		e, created, err := b.cat.Put(b.ctx, "acme", ec2Provider(withSecret()), "")
		require.NoError(t, err)
		require.False(t, created)
		require.Equal(t, 1, e.EntityMeta().Version)
	}
	// The placeholder a read shows, sent back.
	back := withSecret()
	back[ec2.FieldSecretAccessKey] = secrets.Redacted
	b.put(t, "acme", ec2Provider(back))
	require.Equal(t, 1, version())
	require.Equal(t, rev, revision(), "no write at all")

	// A whole document applied twice, and its redacted export applied back.
	d := func() *Document {
		return &Document{APIVersion: DocumentAPIVersion, Providers: []*domain.Provider{ec2Provider(withSecret())},
			Services: []*domain.Service{service("kv")}}
	}
	_, err := b.cat.Import(b.ctx, "acme", d())
	require.NoError(t, err)
	rev = revision()
	_, err = b.cat.Import(b.ctx, "acme", d())
	require.NoError(t, err)
	exported, err := b.cat.Export(b.ctx, "acme")
	require.NoError(t, err)
	js, err := MarshalDocument(b.cat.RedactedDocument(exported), true)
	require.NoError(t, err)
	again, err := DecodeDocument(js)
	require.NoError(t, err)
	_, err = b.cat.Import(b.ctx, "acme", again)
	require.NoError(t, err)
	require.Equal(t, rev, revision(), "applying twice changes nothing")
	require.Equal(t, 1, version())

	// A new secret is a new version, sealed, that opens to the new value.
	changed := withSecret()
	changed[ec2.FieldSecretAccessKey] = strings.ToLower(plainSecret)
	b.put(t, "acme", ec2Provider(changed))
	require.Equal(t, 2, version())
	got, err := b.cat.Get(b.ctx, "acme", domain.KindProvider, "aws", 0)
	require.NoError(t, err)
	opened, err := b.reg.OpenFields(b.ctx, b.kr, "acme", "c1", *got.(*domain.Provider), nil)
	require.NoError(t, err)
	require.Equal(t, strings.ToLower(plainSecret), opened.Fields[ec2.FieldSecretAccessKey])
	require.NotContains(t, b.rawItems(t, "aws"), strings.ToLower(plainSecret))

	// Dropping the secret (and the key id with it) is a change too.
	b.put(t, "acme", ec2Provider(map[string]string{ec2.FieldRegion: "eu-west-1"}))
	require.Equal(t, 3, version())
}
