package api

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/access"
	"github.com/heddle-io/heddle/internal/audit"
	"github.com/heddle-io/heddle/internal/buildinfo"
	"github.com/heddle-io/heddle/internal/catalog"
	"github.com/heddle-io/heddle/internal/cluster"
	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/idempotency"
	"github.com/heddle-io/heddle/internal/identity"
	"github.com/heddle-io/heddle/internal/onboard"
	"github.com/heddle-io/heddle/internal/secrets"
	"github.com/heddle-io/heddle/internal/store"
	"github.com/heddle-io/heddle/internal/store/boltstore"
	"github.com/heddle-io/heddle/internal/usage"
	"github.com/heddle-io/heddle/internal/webhooks"
)

type testBundle struct {
	srv      *httptest.Server
	api      *Server
	rootKey  string
	acmeKey  string     // admin of tenant acme
	otherKey string     // admin of tenant globex
	clock    *testClock // the idempotency keys' clock
}

func setup(t testing.TB) *testBundle {
	t.Helper()
	return setupWith(t, boltstore.Options{})
}

// setupWith is setup on a store opened with opts (NoSync for fuzzing, where
// thousands of writes would otherwise each wait for the disk).
func setupWith(t testing.TB, opts boltstore.Options) *testBundle {
	t.Helper()
	b := newBundle(t, opts, nil)
	b.acmeKey = b.createTenant(t, "acme")
	b.otherKey = b.createTenant(t, "globex")
	return b
}

// newBundle serves the API, with its cluster service, on a new store opened
// with opts; o is its onboarder (nil for none). It has no tenants yet.
func newBundle(t testing.TB, opts boltstore.Options, o onboard.Onboarder) *testBundle {
	t.Helper()
	db, err := boltstore.Open(filepath.Join(t.TempDir(), "heddle.db"), opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	return serveBundle(t, db, o)
}

// serveBundle serves the API, with its cluster service, over db.
func serveBundle(t testing.TB, db store.Store, o onboard.Onboarder) *testBundle {
	t.Helper()
	acc := access.New(db)
	root, err := acc.Bootstrap(context.Background(), "")
	require.NoError(t, err)
	var clusters *cluster.Service
	cat := catalog.New(db, func(ctx context.Context, tenant string) ([]domain.Cluster, error) { return clusters.Live(ctx, tenant) })
	clusters = newClusterService(t, db, acc, cat)
	key, err := secrets.NewLocalKey(make([]byte, 32))
	require.NoError(t, err)
	hooks := webhooks.NewRegistry(db, secrets.NewKeyring(key), webhooks.Policy{Local: true})
	clock := &testClock{now: time.Now()}
	s := New(Config{Catalog: cat, Access: acc, Clusters: clusters, Onboarder: o, Backend: "bolt", Version: "test", Logger: testLogger(t), Audit: audit.New(db), Usage: usage.NewReader(db),
		Idempotency: idempotency.New(db, idempotency.Options{Sweep: true, Now: clock.Now}),
		Identity:    identity.New(db, acc, identity.Config{}),
		Webhooks:    hooks, Deliveries: webhooks.NewDeliverer(db, hooks, func(context.Context, string, string, string, int) error { return nil }, webhooks.Config{})})
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return &testBundle{srv: srv, api: s, rootKey: root, clock: clock}
}

func (b *testBundle) createTenant(t testing.TB, id string) string {
	t.Helper()
	status, body := b.do(t, b.rootKey, http.MethodPost, "/v1/tenants", map[string]any{"id": id, "workers": 2, "maxClusters": 5, "maxNodes": 50, "admin": id + "-admin"})
	require.Equal(t, http.StatusCreated, status, "%v", body)
	return body["adminKey"].(map[string]any)["secret"].(string)
}

// do sends a request; body is JSON-encoded unless it is a string or []byte,
// which are sent as they are.
func (b *testBundle) do(t testing.TB, key, method, path string, body any, headers ...string) (int, map[string]any) {
	t.Helper()
	resp := b.raw(t, key, method, path, body, headers...)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var out map[string]any
	if len(raw) > 0 && strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		require.NoError(t, json.Unmarshal(raw, &out), "%s", raw)
	}
	return resp.StatusCode, out
}

func (b *testBundle) raw(t testing.TB, key, method, path string, body any, headers ...string) *http.Response {
	t.Helper()
	var r io.Reader
	switch v := body.(type) {
	case nil:
	case string:
		r = strings.NewReader(v)
	case []byte:
		r = bytes.NewReader(v)
	default:
		js, err := json.Marshal(v)
		require.NoError(t, err)
		r = bytes.NewReader(js)
	}
	req, err := http.NewRequest(method, b.srv.URL+path, r)
	require.NoError(t, err)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := testHTTP.Do(req)
	require.NoError(t, err)
	return resp
}

func (b *testBundle) importExample(t testing.TB, key string) {
	t.Helper()
	doc, err := os.ReadFile("../../docs/examples/catalog.yaml")
	require.NoError(t, err)
	status, body := b.do(t, key, http.MethodPost, "/v1/catalog", doc, "Content-Type", "application/yaml")
	require.Equal(t, http.StatusOK, status, "%v", body)
}

// testLogger logs through t, so a 500's cause shows when its test fails.
func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelError}))
}

type tWriter struct{ t testing.TB }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// errorOf checks the envelope and returns its code.
func errorOf(t testing.TB, body map[string]any) (string, map[string]any) {
	t.Helper()
	e, ok := body["error"].(map[string]any)
	require.True(t, ok, "an error response carries the envelope: %v", body)
	require.NotEmpty(t, e["message"])
	require.NotEmpty(t, e["requestId"])
	return e["code"].(string), e
}

func TestStatusAndAuthentication(t *testing.T) {
	t.Parallel()
	b := setup(t)
	status, body := b.do(t, "", http.MethodGet, "/v1/status", nil)
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "ok", body["status"])
	require.Equal(t, "bolt", body["backend"])
	require.Equal(t, "test", body["version"], "the configured version wins over the module's")
	require.Equal(t, buildinfo.Read().Modified, body["modified"], "the rest is the running binary's build")

	for _, key := range []string{"", "nonsense", access.NewKeySecret()} {
		resp := b.raw(t, key, http.MethodGet, "/v1/me", nil)
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode, key)
		require.Equal(t, `Bearer realm="heddle"`, resp.Header.Get("WWW-Authenticate"))
		resp.Body.Close()
	}
	status, body = b.do(t, b.acmeKey, http.MethodGet, "/v1/me", nil)
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, map[string]any{"tenant": "acme", "user": "acme-admin", "role": "admin", "keyId": body["keyId"]}, body)
}

func TestCatalogOverHTTP(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.importExample(t, b.acmeKey)

	resp := b.raw(t, b.acmeKey, http.MethodGet, "/v1/services/kv", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, `"1"`, resp.Header.Get("ETag"))
	var v1 domain.Service
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&v1))
	resp.Body.Close()
	require.NotEmpty(t, v1.Description)

	status, body := b.do(t, b.acmeKey, http.MethodGet, "/v1/clustertemplates/web/resolved", nil)
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "local", body["defaults"].(map[string]any)["provider"])

	// A new version, then a stale write against version 1.
	status, body = b.do(t, b.acmeKey, http.MethodPut, "/v1/services/kv", map[string]any{"description": "v2"}, "If-Match", `"1"`)
	require.Equal(t, http.StatusOK, status, "%v", body)
	require.EqualValues(t, 2, body["version"])
	status, body = b.do(t, b.acmeKey, http.MethodPut, "/v1/services/kv", map[string]any{"description": "v3", "version": 1})
	require.Equal(t, http.StatusPreconditionFailed, status)
	code, _ := errorOf(t, body)
	require.Equal(t, CodePreconditionFailed, code)

	status, body = b.do(t, b.acmeKey, http.MethodGet, "/v1/services/kv/versions", nil)
	require.Equal(t, http.StatusOK, status)
	require.Len(t, body["items"], 2)
	status, body = b.do(t, b.acmeKey, http.MethodGet, "/v1/services/kv/versions/1", nil)
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, v1.Description, body["description"], "version 1 is still the example's kv")

	status, body = b.do(t, b.acmeKey, http.MethodDelete, "/v1/services/kv", nil)
	require.Equal(t, http.StatusConflict, status)
	code, e := errorOf(t, body)
	require.Equal(t, CodeReferenced, code)
	require.Equal(t, []any{map[string]any{"kind": "clustertemplates", "name": "web"}}, e["referrers"])

	status, _ = b.do(t, b.acmeKey, http.MethodPut, "/v1/providers/ec2", "name: ec2\nproviderType: ec2\n", "Content-Type", "application/yaml")
	require.Equal(t, http.StatusCreated, status)
	status, _ = b.do(t, b.acmeKey, http.MethodDelete, "/v1/providers/ec2", nil)
	require.Equal(t, http.StatusNoContent, status)

	resp = b.raw(t, b.acmeKey, http.MethodGet, "/v1/catalog?format=yaml", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "application/yaml", resp.Header.Get("Content-Type"))
	exported, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	resp.Body.Close()
	status, body = b.do(t, b.otherKey, http.MethodPost, "/v1/catalog", exported, "Content-Type", "application/yaml")
	require.Equal(t, http.StatusOK, status, "%v", body)
	require.Len(t, body["created"], 8)
}

// TestBadInputChangesNothing sends every kind of bad input and checks that the
// answer is a structured 4xx and that the tenant's catalog did not change.
func TestBadInputChangesNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.importExample(t, b.acmeKey)
	before := exportOf(t, b, b.acmeKey)

	big := `{"name":"kv","description":"` + strings.Repeat("x", MaxBodyBytes) + `"}`
	// Under 1 MiB, but too large for one store item (400 KB): a 600 KB script,
	// two 300 KB provider fields, and seven actions of 64 KiB each (every
	// field within its own limit, the whole too large to store).
	longScript := `{"actions":{"start":{"type":"shell","fields":{"script":"` + strings.Repeat("x", 600<<10) + `"}}}}`
	longFields := `{"providerType":"ec2","fields":{"a":"` + strings.Repeat("a", 300<<10) + `","b":"` + strings.Repeat("b", 300<<10) + `"}}`
	var actions []string
	for _, a := range domain.ServiceActions {
		actions = append(actions, `"`+string(a)+`":{"type":"shell","fields":{"script":"`+strings.Repeat("x", domain.MaxFieldBytes)+`"}}`)
	}
	manyScripts := `{"actions":{` + strings.Join(actions, ",") + `}}`
	require.Less(t, len(manyScripts), MaxBodyBytes)
	tests := []struct {
		name    string
		method  string
		path    string
		body    any
		headers []string
		status  int
		code    string
		field   string
	}{
		{"malformed json", http.MethodPut, "/v1/services/kv", `{"name":`, nil, 400, CodeInvalidBody, ""},
		{"two documents", http.MethodPut, "/v1/services/kv", `{} {}`, nil, 400, CodeInvalidBody, ""},
		{"unknown field", http.MethodPut, "/v1/services/kv", `{"colour":"red"}`, nil, 400, CodeInvalidBody, "colour"},
		{"wrong type", http.MethodPut, "/v1/services/kv", `{"dependencies":{"provides":"kv2"}}`, nil, 400, CodeInvalidBody, "dependencies.provides"},
		{"out of range", http.MethodPut, "/v1/services/kv", `{"actions":{"start":{"type":"shell","retries":50}}}`, nil, 422, CodeValidationFailed, "actions.start.retries"},
		{"name disagrees with URL", http.MethodPut, "/v1/services/kv", `{"name":"web"}`, nil, 422, CodeValidationFailed, "name"},
		{"invalid name in URL", http.MethodPut, "/v1/services/no%20spaces", `{}`, nil, 400, CodeInvalidParameter, "name"},
		{"oversize body", http.MethodPut, "/v1/services/kv", big, nil, 413, CodeBodyTooLarge, ""},
		{"action field too long", http.MethodPut, "/v1/services/kv", longScript, nil, 422, CodeValidationFailed, "actions.start.fields.script"},
		{"provider fields too long", http.MethodPut, "/v1/providers/ec2", longFields, nil, 422, CodeValidationFailed, "fields.a"},
		{"entity too large to store", http.MethodPut, "/v1/services/kv", manyScripts, nil, 413, CodeBodyTooLarge, ""},
		{"new entity too large to store", http.MethodPut, "/v1/services/big", manyScripts, nil, 413, CodeBodyTooLarge, ""},
		{"import of an entity too large to store", http.MethodPost, "/v1/catalog", `{"apiVersion":"heddle/v1","services":[{"name":"small"},` + strings.Replace(manyScripts, `{`, `{"name":"big",`, 1) + `]}`, nil, 413, CodeBodyTooLarge, ""},
		{"unknown macro in a script", http.MethodPut, "/v1/services/kv", `{"actions":{"start":{"type":"shell","fields":{"script":"date +%s%N"}}}}`, nil, 422, CodeValidationFailed, "actions.start.fields.script"},
		{"unknown macro in an import", http.MethodPost, "/v1/catalog", `{"apiVersion":"heddle/v1","services":[{"name":"clock","actions":{"start":{"type":"shell","fields":{"script":"date +%s%N"}}}}]}`, nil, 422, CodeValidationFailed, "services[0].actions.start.fields.script"},
		{"unknown macro in a template's config", http.MethodPut, "/v1/clustertemplates/web", `{"defaults":{"config":{"greeting":"100%sure%"}}}`, nil, 422, CodeValidationFailed, "defaults.config"},
		{"unsupported media type", http.MethodPut, "/v1/services/kv", `x`, []string{"Content-Type", "text/plain"}, 415, CodeUnsupportedMedia, ""},
		{"bad yaml", http.MethodPost, "/v1/catalog", "a: [", []string{"Content-Type", "application/yaml"}, 400, CodeInvalidBody, ""},
		{"import with wrong apiVersion", http.MethodPost, "/v1/catalog", `{"apiVersion":"v0"}`, nil, 422, CodeValidationFailed, "apiVersion"},
		{"import referencing nothing", http.MethodPost, "/v1/catalog", `{"apiVersion":"heddle/v1","clusterTemplates":[{"name":"web","compatibility":{"services":["ghost"]},"defaults":{"services":["ghost"],"provider":"local"}}]}`, nil, 422, CodeValidationFailed, "clusterTemplates[0].compatibility.services[0]"},
		{"bad limit", http.MethodGet, "/v1/services?limit=0", nil, nil, 400, CodeInvalidParameter, "query.limit"},
		{"bad cursor", http.MethodGet, "/v1/services?cursor=%21%21", nil, nil, 400, CodeInvalidParameter, "query.cursor"},
		{"bad version", http.MethodGet, "/v1/services/kv/versions/zero", nil, nil, 400, CodeInvalidParameter, "version"},
		{"bad export format", http.MethodGet, "/v1/catalog?format=xml", nil, nil, 400, CodeInvalidParameter, "query.format"},
		{"unknown collection", http.MethodGet, "/v1/widgets", nil, nil, 404, CodeNotFound, ""},
		{"no such route", http.MethodGet, "/v2/services", nil, nil, 404, CodeNotFound, ""},
		{"method not allowed", http.MethodPatch, "/v1/services/kv", `{}`, nil, 405, CodeMethodNotAllowed, ""},
		{"wrong role", http.MethodPost, "/v1/tenants", `{"id":"x"}`, nil, 403, CodeForbidden, ""},
		{"admin changing own tenant", http.MethodPut, "/v1/tenants/acme", `{"maxClusters":-1}`, nil, 403, CodeForbidden, ""},
		{"admin naming another tenant", http.MethodPut, "/v1/tenants/globex", `{"maxClusters":-1}`, nil, 404, CodeNotFound, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key := b.acmeKey
			status, body := b.do(t, key, tt.method, tt.path, tt.body, tt.headers...)
			require.Equal(t, tt.status, status, "%v", body)
			code, e := errorOf(t, body)
			require.Equal(t, tt.code, code)
			if tt.field != "" {
				details, _ := e["details"].([]any)
				require.NotEmpty(t, details)
				require.Equal(t, tt.field, details[0].(map[string]any)["field"])
			}
		})
	}
	// The size refusals say what to do instead.
	_, body := b.do(t, b.acmeKey, http.MethodPut, "/v1/services/kv", longScript)
	_, e := errorOf(t, body)
	require.Contains(t, e["details"].([]any)[0].(map[string]any)["message"], "versioned script resource")
	_, body = b.do(t, b.acmeKey, http.MethodPut, "/v1/services/kv", manyScripts)
	_, e = errorOf(t, body)
	require.Contains(t, e["message"], `service "kv"`)
	require.Contains(t, e["message"], "versioned script resource")

	// A '%' meant literally is refused with how to write it.
	_, body = b.do(t, b.acmeKey, http.MethodPut, "/v1/services/kv", `{"actions":{"start":{"type":"shell","fields":{"script":"date +%s%N"}}}}`)
	_, e = errorOf(t, body)
	require.Contains(t, e["details"].([]any)[0].(map[string]any)["message"], "write %% for a literal percent sign")

	require.Equal(t, before, exportOf(t, b, b.acmeKey), "no bad request changed the catalog")

	// Bad tenant input from the superadmin.
	status, body := b.do(t, b.rootKey, http.MethodPut, "/v1/tenants/acme", `{"maxClusters":-1,"workers":5000}`)
	require.Equal(t, http.StatusUnprocessableEntity, status)
	_, e = errorOf(t, body)
	require.Len(t, e["details"], 2)
}

func exportOf(t testing.TB, b *testBundle, key string) string {
	t.Helper()
	resp := b.raw(t, key, http.MethodGet, "/v1/catalog", nil)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(raw)
}

func TestRoles(t *testing.T) {
	t.Parallel()
	b := setup(t)
	status, body := b.do(t, b.acmeKey, http.MethodPost, "/v1/users", map[string]any{"name": "bob", "role": "user"})
	require.Equal(t, http.StatusCreated, status, "%v", body)
	status, body = b.do(t, b.acmeKey, http.MethodPost, "/v1/users/bob/keys", nil)
	require.Equal(t, http.StatusCreated, status)
	bobKey := body["secret"].(string)
	require.Equal(t, "no-store", b.raw(t, b.acmeKey, http.MethodPost, "/v1/users/bob/keys", nil).Header.Get("Cache-Control"))

	forbidden := []struct{ method, path string }{
		{http.MethodPut, "/v1/services/kv"},
		{http.MethodGet, "/v1/users"},
		{http.MethodPost, "/v1/users"},
		{http.MethodGet, "/v1/catalog"},
		{http.MethodGet, "/v1/tenants"},
		{http.MethodPut, "/v1/tenants/acme"},
	}
	for _, f := range forbidden {
		status, body := b.do(t, bobKey, f.method, f.path, "{}")
		require.Equal(t, http.StatusForbidden, status, "%s %s: %v", f.method, f.path, body)
	}
	// A user sees their own record and keys, and nobody else's.
	status, _ = b.do(t, bobKey, http.MethodGet, "/v1/users/bob", nil)
	require.Equal(t, http.StatusOK, status)
	status, body = b.do(t, bobKey, http.MethodGet, "/v1/users/bob/keys", nil)
	require.Equal(t, http.StatusOK, status)
	require.Len(t, body["items"], 2)
	for _, k := range body["items"].([]any) {
		require.NotContains(t, k, "secret", "listed keys never carry secrets")
		require.NotContains(t, k, "hash")
	}
	status, _ = b.do(t, bobKey, http.MethodGet, "/v1/users/acme-admin", nil)
	require.Equal(t, http.StatusNotFound, status)
	// An admin cannot make a superadmin; the superadmin manages tenants.
	status, _ = b.do(t, b.acmeKey, http.MethodPost, "/v1/users", map[string]any{"name": "eve", "role": "superadmin"})
	require.Equal(t, http.StatusUnprocessableEntity, status)
	status, body = b.do(t, b.rootKey, http.MethodGet, "/v1/tenants", nil)
	require.Equal(t, http.StatusOK, status)
	require.Len(t, body["items"], 3)

	// Revoking a key stops it at once.
	status, body = b.do(t, bobKey, http.MethodGet, "/v1/me", nil)
	require.Equal(t, http.StatusOK, status)
	status, _ = b.do(t, bobKey, http.MethodDelete, "/v1/users/bob/keys/"+body["keyId"].(string), nil)
	require.Equal(t, http.StatusNoContent, status)
	status, _ = b.do(t, bobKey, http.MethodGet, "/v1/me", nil)
	require.Equal(t, http.StatusUnauthorized, status)
}

// TestAnotherTenantsIDsAnswer404 walks every route that names something with
// globex's admin key and acme's ids: each must answer 404, and acme's data
// must be unchanged afterwards.
func TestAnotherTenantsIDsAnswer404(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.importExample(t, b.acmeKey)
	status, _ := b.do(t, b.acmeKey, http.MethodPost, "/v1/users", map[string]any{"name": "alice", "role": "user"})
	require.Equal(t, http.StatusCreated, status)
	status, body := b.do(t, b.acmeKey, http.MethodPost, "/v1/users/alice/keys", nil)
	require.Equal(t, http.StatusCreated, status)
	aliceKeyID := body["id"].(string)
	status, body = b.do(t, b.acmeKey, http.MethodPost, "/v1/issuers", map[string]any{"name": "corp", "url": "https://idp.example.com",
		"audience": "heddle", "rules": []map[string]any{{"role": "user"}}})
	require.Equal(t, http.StatusCreated, status, "%v", body)
	before := exportOf(t, b, b.acmeKey)

	status, body = b.do(t, b.acmeKey, http.MethodPost, "/v1/clusters", map[string]any{"name": "shop", "template": "web", "size": 3})
	require.Equal(t, http.StatusAccepted, status, "%v", body)
	clusterID := body["cluster"].(map[string]any)["id"].(string)
	jobID := body["job"].(map[string]any)["id"].(string)
	clusterBefore := b.clusterOf(t, b.acmeKey, clusterID)

	status, body = b.do(t, b.acmeKey, http.MethodPost, "/v1/webhooks", map[string]any{"url": "https://hooks.example.com/heddle"})
	require.Equal(t, http.StatusCreated, status, "%v", body)
	webhookID := body["id"].(string)

	acmeIDs := strings.NewReplacer("{webhook}", webhookID, "{kind}", "services", "{name}", "kv", "{version}", "1", "{tenant}", "acme", "{user}", "alice", "{key}", aliceKeyID,
		"{cluster}", clusterID, "{job}", jobID, "{provider}", "local", "{host}", "h0", "{issuer}", "corp")
	walked := 0
	for _, rt := range b.api.routes() {
		if !strings.Contains(strings.ReplaceAll(rt.Path, "{kind}", ""), "{") {
			continue // a collection of the caller's own tenant names no id
		}
		path := acmeIDs.Replace(rt.Path)
		if strings.HasPrefix(rt.Path, "/v1/clustertemplates/{name}") {
			path = strings.Replace(rt.Path, "{name}", "web", 1)
		}
		var body any
		var headers []string
		if rt.Method == http.MethodPut {
			// A PUT naming an entity globex lacks would create globex's own;
			// with If-Match it must find acme's, and may not.
			body, headers = map[string]any{}, []string{"If-Match", `"1"`}
		}
		status, resp := b.do(t, b.otherKey, rt.Method, path, body, headers...)
		require.Equal(t, http.StatusNotFound, status, "%s %s answered %v", rt.Method, path, resp)
		code, _ := errorOf(t, resp)
		require.Equal(t, CodeNotFound, code)
		walked++
	}
	require.GreaterOrEqual(t, walked, 28)
	require.Equal(t, before, exportOf(t, b, b.acmeKey))
	require.Equal(t, clusterBefore, b.clusterOf(t, b.acmeKey, clusterID), "nothing of acme's cluster changed")
	status, _ = b.do(t, b.acmeKey, http.MethodGet, "/v1/users/alice", nil)
	require.Equal(t, http.StatusOK, status)
	status, _ = b.do(t, b.acmeKey, http.MethodGet, "/v1/issuers/corp", nil)
	require.Equal(t, http.StatusOK, status, "globex's attempts left acme's issuer alone")
}

func TestTenantLifecycle(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.importExample(t, b.acmeKey)
	status, body := b.do(t, b.rootKey, http.MethodPut, "/v1/tenants/acme", map[string]any{"workers": 4, "maxClusters": 1, "maxNodes": 3})
	require.Equal(t, http.StatusOK, status, "%v", body)
	require.EqualValues(t, 4, body["workers"])
	require.Equal(t, map[string]any{"clusters": float64(0), "nodes": float64(0)}, body["usage"])

	status, _ = b.do(t, b.rootKey, http.MethodPost, "/v1/tenants", map[string]any{"id": "acme"})
	require.Equal(t, http.StatusConflict, status)

	status, _ = b.do(t, b.rootKey, http.MethodDelete, "/v1/tenants/acme", nil)
	require.Equal(t, http.StatusNoContent, status)
	status, _ = b.do(t, b.acmeKey, http.MethodGet, "/v1/me", nil)
	require.Equal(t, http.StatusUnauthorized, status, "a deleted tenant's keys stop working")
	status, _ = b.do(t, b.rootKey, http.MethodDelete, "/v1/tenants/system", nil)
	require.Equal(t, http.StatusConflict, status)

	// A tenant of the same name starts empty.
	key := b.createTenant(t, "acme")
	status, body = b.do(t, key, http.MethodGet, "/v1/services", nil)
	require.Equal(t, http.StatusOK, status)
	require.Empty(t, body["items"])
}

func TestYAMLEntityAndRequestID(t *testing.T) {
	t.Parallel()
	b := setup(t)
	resp := b.raw(t, b.acmeKey, http.MethodPut, "/v1/services/kv", "name: kv\nlabel: KV\n", "Content-Type", "application/yaml", "X-Request-Id", "trace-123")
	defer resp.Body.Close()
	require.Equal(t, http.StatusCreated, resp.StatusCode)
	require.Equal(t, "trace-123", resp.Header.Get("X-Request-Id"))
	require.Equal(t, "/v1/services/kv", resp.Header.Get("Location"))
	var svc domain.Service
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&svc))
	require.Equal(t, "KV", svc.Label)
}

// TestNonObjectBodiesAreRefusedForEveryKind: a PUT of an entity whose body is
// not an object (null included, which would otherwise decode to an empty
// entity) is a 400 for every kind, and a POST /v1/catalog of null too; none
// changes the catalog.
func TestNonObjectBodiesAreRefusedForEveryKind(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.importExample(t, b.acmeKey)
	before := exportOf(t, b, b.acmeKey)
	for _, k := range domain.Kinds {
		for _, body := range []string{`null`, `[]`, `"x"`, `3`} {
			for _, name := range []string{"kv", "fresh"} {
				status, resp := b.do(t, b.acmeKey, http.MethodPut, "/v1/"+string(k)+"/"+name, body)
				require.Equal(t, http.StatusBadRequest, status, "PUT /v1/%s/%s %s: %v", k, name, body, resp)
				code, e := errorOf(t, resp)
				require.Equal(t, CodeInvalidBody, code)
				require.Contains(t, e["message"], "must be an object")
			}
		}
	}
	status, resp := b.do(t, b.acmeKey, http.MethodPost, "/v1/catalog", `null`)
	require.Equal(t, http.StatusBadRequest, status, "%v", resp)
	require.Equal(t, before, exportOf(t, b, b.acmeKey))
}
