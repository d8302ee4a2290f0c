package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/store/boltstore"
)

// FuzzCatalogPut PUTs arbitrary bytes to /v1/services/{name} as an admin, as
// JSON or YAML and with an arbitrary If-Match. Whatever arrives, the answer is
// never a 5xx, an error carries the envelope, and a refused request leaves
// the tenant's catalog exactly as it was. Values over the size limits need
// seeds of 64 KiB to 400 KB, which make the fuzzer crawl (it minimizes every
// new input), so TestBadInputChangesNothing covers those instead.
func FuzzCatalogPut(f *testing.F) {
	seeds := []struct {
		name, body string
		yaml       bool
		ifMatch    string
	}{
		{"kv", `{"description":"v2"}`, false, ""},
		{"kv", `{"description":"v2"}`, false, `"1"`},
		{"kv", `{"description":"stale"}`, false, `"99"`},
		{"kv", `{"name":"kv","version":1,"label":"KV"}`, false, ""},
		{"new", `{"dependencies":{"runtime":{"requires":["kv"],"uses":["web"]}},"actions":{"start":{"type":"shell","fields":{"script":"true"},"timeout":"30s","retries":2}}}`, false, ""},
		{"new", `{"dependencies":{"runtime":{"requires":["ghost"]}}}`, false, ""},
		{"new", `{"dependencies":{"install":{"requires":["new"]}}}`, false, ""},
		{"ghost", `{}`, false, `"1"`},
		{"kv", `{"actions":{"dance":{"type":"shell"}}}`, false, ""},
		{"kv", `{"actions":{"start":{"type":"shell","timeout":"13h","retries":-1}}}`, false, ""},
		{"kv", `{"links":[{"label":"ui","url":"javascript:alert(1)"}]}`, false, ""},
		{"kv", `{"name":"web"}`, false, ""},
		{"kv", `{"colour":"red"}`, false, ""},
		{"kv", `{"name":`, false, ""},
		{"kv", `{} {}`, false, ""},
		{"kv", `[]`, false, ""},
		{"kv", `null`, false, ""},
		{"kv", ``, false, ""},
		{"kv", "name: kv\nlabel: KV\n", true, ""},
		{"kv", "actions:\n  start: {type: shell, retries: many}\n", true, ""},
		{"kv", "a: [", true, ""},
		{"kv", "&a [*a]", true, ""},
		{"no spaces", `{}`, false, ""},
		{"..", `{}`, false, ""},
		{"", `{}`, false, ""},
		{strings.Repeat("n", 64), `{}`, false, ""},
	}
	for _, s := range seeds {
		f.Add(s.name, []byte(s.body), s.yaml, s.ifMatch)
	}

	// Every input starts from the same state, a tenant holding just the
	// example catalog, so that it does the same thing whatever ran before it
	// (a crasher reproduces, and coverage is stable enough to minimize).
	b := setupWith(f, boltstore.Options{NoSync: true})
	example, err := os.ReadFile("../../docs/examples/catalog.yaml")
	require.NoError(f, err)
	serve := func(key, method, target string, body []byte, headers ...string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, "http://heddle.test/", bytes.NewReader(body))
		req.URL.Path = target
		req.Header.Set("Authorization", "Bearer "+key)
		for i := 0; i+1 < len(headers); i += 2 {
			req.Header.Set(headers[i], headers[i+1])
		}
		rec := httptest.NewRecorder()
		b.api.ServeHTTP(rec, req)
		return rec
	}
	// current is the tenant inputs run against, replaced after any input
	// that succeeds: a refused one has been checked to change nothing.
	var current struct{ id, key string }
	var tenants atomic.Int64
	freshTenant := func(t *testing.T) (id, key string) {
		id = fmt.Sprintf("fuzz%d", tenants.Add(1))
		rec := serve(b.rootKey, http.MethodPost, "/v1/tenants", []byte(`{"id":"`+id+`","admin":"admin"}`), "Content-Type", "application/json")
		require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
		var created CreateTenantResponse
		require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &created))
		key = created.AdminKey.Secret
		rec = serve(key, http.MethodPost, "/v1/catalog", example, "Content-Type", "application/yaml")
		require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
		return id, key
	}
	export := func(t *testing.T, key string) string {
		rec := serve(key, http.MethodGet, "/v1/catalog", nil)
		require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
		return rec.Body.String()
	}

	f.Fuzz(func(t *testing.T, name string, body []byte, asYAML bool, ifMatch string) {
		if _, err := url.Parse("http://heddle.test/v1/services/" + url.PathEscape(name)); err != nil {
			t.Skip()
		}
		contentType := "application/json"
		if asYAML {
			contentType = "application/yaml"
		}
		headers := []string{"Content-Type", contentType}
		if ifMatch != "" && !strings.ContainsAny(ifMatch, "\r\n\x00") {
			headers = append(headers, "If-Match", ifMatch)
		}
		if current.key == "" {
			current.id, current.key = freshTenant(t)
		}
		key := current.key
		before := export(t, key)
		rec := serve(key, http.MethodPut, "/v1/services/"+url.PathEscape(name), body, headers...)
		require.Less(t, rec.Code, 500, "PUT %q %q answered %d: %s", name, body, rec.Code, rec.Body.String())
		if rec.Code < 400 {
			// The tenant may have changed: the next input gets a fresh one.
			rec := serve(b.rootKey, http.MethodDelete, "/v1/tenants/"+current.id, nil)
			require.Equal(t, http.StatusNoContent, rec.Code, rec.Body.String())
			current.id, current.key = "", ""
			return
		}
		raw, err := io.ReadAll(rec.Body)
		require.NoError(t, err)
		var env ErrorBody
		require.NoError(t, json.Unmarshal(raw, &env), "an error is the JSON envelope: %s", raw)
		require.Equal(t, rec.Code, env.Error.Status)
		require.NotEmpty(t, env.Error.Code)
		require.NotEmpty(t, env.Error.Message)
		require.Equal(t, before, export(t, key), "a refused PUT (%d %s) changed the catalog", rec.Code, env.Error.Code)
	})
}
