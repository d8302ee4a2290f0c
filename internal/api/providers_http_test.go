package api

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/access"
	"github.com/heddle-io/heddle/internal/catalog"
	"github.com/heddle-io/heddle/internal/provider"
	"github.com/heddle-io/heddle/internal/provider/ec2"
	"github.com/heddle-io/heddle/internal/secrets"
	"github.com/heddle-io/heddle/internal/store"
	"github.com/heddle-io/heddle/internal/store/boltstore"
)

// awsSecret must never appear in a response or a stored item.
const awsSecret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"

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

// setupProviders is a catalog-only API whose catalog checks providers
// against a registry holding the ec2 type and seals their secrets.
func setupProviders(t testing.TB) (*testBundle, store.Store) {
	t.Helper()
	b, db, _ := providersBundle(t, nil)
	b.acmeKey = b.createTenant(t, "acme")
	return b, db
}

// providersBundle serves a catalog-only API over a new store whose
// registry holds the ec2 type and whatever more register adds (given the
// store and the keyring); it has no tenants yet.
func providersBundle(t testing.TB, register func(*provider.Registry, store.Store, *secrets.Keyring)) (*testBundle, store.Store, *secrets.Keyring) {
	t.Helper()
	db, err := boltstore.Open(filepath.Join(t.TempDir(), "heddle.db"), boltstore.Options{NoSync: true})
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	key, err := secrets.LoadOrCreateKeyFile(filepath.Join(t.TempDir(), "master.key"))
	require.NoError(t, err)
	kr := secrets.NewKeyring(key)
	reg := provider.NewRegistry()
	require.NoError(t, reg.Register(ec2.Type(), nopProvider{}))
	if register != nil {
		register(reg, db, kr)
	}
	acc := access.New(db)
	root, err := acc.Bootstrap(context.Background(), "")
	require.NoError(t, err)
	cat := catalog.New(db, nil, catalog.WithProviders(reg, kr))
	s := New(Config{Catalog: cat, Access: acc, Providers: reg, Backend: "bolt", Version: "test"})
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return &testBundle{srv: srv, api: s, rootKey: root}, db, kr
}

func (b *testBundle) body(t testing.TB, key, path string) string {
	t.Helper()
	resp := b.raw(t, key, http.MethodGet, path, nil)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)
	return string(raw)
}

func problemPaths(t testing.TB, body map[string]any) []string {
	t.Helper()
	code, e := errorOf(t, body)
	require.Equal(t, CodeValidationFailed, code)
	var out []string
	for _, d := range e["details"].([]any) {
		out = append(out, d.(map[string]any)["field"].(string))
	}
	return out
}

func TestProviderTypesAreListed(t *testing.T) {
	t.Parallel()
	b, _ := setupProviders(t)
	status, body := b.do(t, b.acmeKey, http.MethodGet, "/v1/providertypes", nil)
	require.Equal(t, http.StatusOK, status, "%v", body)
	items := body["items"].([]any)
	require.Len(t, items, 1)
	typ := items[0].(map[string]any)
	require.Equal(t, ec2.TypeName, typ["name"])
	admin := typ["parameters"].(map[string]any)["admin"].(map[string]any)
	require.Equal(t, []any{[]any{ec2.FieldRegion}}, admin["required"])
	secret := admin["fields"].(map[string]any)[ec2.FieldSecretAccessKey].(map[string]any)
	require.Equal(t, true, secret["sensitive"])
	require.Equal(t, "password", secret["type"])
	require.Contains(t, typ["parameters"].(map[string]any), "user")

	status, body = b.do(t, "", http.MethodGet, "/v1/providertypes", nil)
	require.Equal(t, http.StatusUnauthorized, status)
	code, _ := errorOf(t, body)
	require.Equal(t, CodeUnauthorized, code)

	// A deployment with no provider plugins says so.
	plain := setup(t)
	status, body = plain.do(t, plain.acmeKey, http.MethodGet, "/v1/providertypes", nil)
	require.Equal(t, http.StatusServiceUnavailable, status)
	code, _ = errorOf(t, body)
	require.Equal(t, CodeUnavailable, code)
}

func TestProviderFieldsAreValidatedOverHTTP(t *testing.T) {
	t.Parallel()
	b, _ := setupProviders(t)
	status, body := b.do(t, b.acmeKey, http.MethodPut, "/v1/providers/os", map[string]any{"providerType": "openstack"})
	require.Equal(t, http.StatusUnprocessableEntity, status, "%v", body)
	require.Equal(t, []string{"providerType"}, problemPaths(t, body))

	status, body = b.do(t, b.acmeKey, http.MethodPut, "/v1/providers/aws", map[string]any{"providerType": "ec2",
		"fields": map[string]string{ec2.FieldAccessKeyID: "AKIAIOSFODNN7EXAMPLE"}})
	require.Equal(t, http.StatusUnprocessableEntity, status, "%v", body)
	require.Equal(t, []string{"fields.region", "fields.secret_access_key"}, problemPaths(t, body))

	doc := "apiVersion: heddle/v1\nproviders:\n  - {name: aws, providerType: ec2, fields: {region: eu-west-1, secret_access_key: x}}\n  - {name: os, providerType: openstack}\n"
	status, body = b.do(t, b.acmeKey, http.MethodPost, "/v1/catalog", doc, "Content-Type", "application/yaml")
	require.Equal(t, http.StatusUnprocessableEntity, status, "%v", body)
	require.Equal(t, []string{"providers[0].fields.access_key_id", "providers[1].providerType"}, problemPaths(t, body))

	status, body = b.do(t, b.acmeKey, http.MethodGet, "/v1/providers", nil)
	require.Equal(t, http.StatusOK, status)
	require.Empty(t, body["items"], "bad input changes nothing")
}

func TestProviderSecretsAreSealedAndRedactedOverHTTP(t *testing.T) {
	t.Parallel()
	b, db := setupProviders(t)
	fields := map[string]string{ec2.FieldRegion: "eu-west-1", ec2.FieldAccessKeyID: "AKIAIOSFODNN7EXAMPLE", ec2.FieldSecretAccessKey: awsSecret}
	status, body := b.do(t, b.acmeKey, http.MethodPut, "/v1/providers/aws", map[string]any{"providerType": "ec2", "fields": fields})
	require.Equal(t, http.StatusCreated, status, "%v", body)
	require.Equal(t, secrets.Redacted, body["fields"].(map[string]any)[ec2.FieldSecretAccessKey])

	// At rest: sealed, in the head and in the version item.
	s := store.Scoped(db, "acme")
	for _, k := range []store.Key{{PK: "CAT#providers", SK: "aws"}, {PK: "CAT#providers#aws", SK: "0000000001"}} {
		it, err := s.Get(context.Background(), k)
		require.NoError(t, err)
		require.NotContains(t, string(it.Data), awsSecret)
		require.Contains(t, string(it.Data), secrets.SealedPrefix)
	}

	// Every read: redacted, neither the plaintext nor the sealed blob.
	for _, path := range []string{"/v1/providers/aws", "/v1/providers", "/v1/providers/aws/versions", "/v1/providers/aws/versions/1",
		"/v1/catalog", "/v1/catalog?format=yaml"} {
		got := b.body(t, b.acmeKey, path)
		require.NotContains(t, got, awsSecret, path)
		require.NotContains(t, got, secrets.SealedPrefix, path)
		require.Contains(t, got, secrets.Redacted, path)
		require.Contains(t, got, "AKIAIOSFODNN7EXAMPLE", path)
	}

	// The same provider again, as plaintext or as the redacted form a GET
	// shows, is a no-op.
	for _, secret := range []string{awsSecret, secrets.Redacted} {
		again := map[string]string{ec2.FieldRegion: "eu-west-1", ec2.FieldAccessKeyID: "AKIAIOSFODNN7EXAMPLE", ec2.FieldSecretAccessKey: secret}
		resp := b.raw(t, b.acmeKey, http.MethodPut, "/v1/providers/aws", map[string]any{"providerType": "ec2", "fields": again})
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.Equal(t, `"1"`, resp.Header.Get("ETag"))
	}
}

func TestApplyingACatalogWithSecretsTwiceChangesNothing(t *testing.T) {
	t.Parallel()
	b, _ := setupProviders(t)
	doc := "apiVersion: heddle/v1\nproviders:\n  - name: aws\n    providerType: ec2\n    fields: {region: eu-west-1, access_key_id: AKIAIOSFODNN7EXAMPLE, secret_access_key: " + awsSecret + "}\n" +
		"services:\n  - name: kv\n"
	apply := func(body string) {
		t.Helper()
		status, res := b.do(t, b.acmeKey, http.MethodPost, "/v1/catalog", body, "Content-Type", "application/yaml")
		require.Equal(t, http.StatusOK, status, "%v", res)
	}
	apply(doc)
	first := b.body(t, b.acmeKey, "/v1/catalog")
	apply(doc)
	// The export (secrets redacted) applied back changes nothing either.
	apply(b.body(t, b.acmeKey, "/v1/catalog?format=yaml"))
	require.Equal(t, first, b.body(t, b.acmeKey, "/v1/catalog"))
	versions := b.body(t, b.acmeKey, "/v1/providers/aws/versions")
	require.Equal(t, 1, strings.Count(versions, `"name": "aws"`), "one version: %s", versions)
}
