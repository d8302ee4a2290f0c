package api

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// put sends a catalog PUT and returns its status, Heddle-Outcome and body.
func (b *testBundle) put(t *testing.T, path string, body any, headers ...string) (int, string, map[string]any) {
	t.Helper()
	resp := b.raw(t, b.acmeKey, http.MethodPut, path, body, headers...)
	defer resp.Body.Close()
	var out map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	return resp.StatusCode, resp.Header.Get(OutcomeHeader), out
}

// refusedAt checks a 422 validation_failed answer whose first detail is
// code at field, and returns its sentence.
func refusedAt(t *testing.T, status int, body map[string]any, field, code string) string {
	t.Helper()
	require.Equal(t, http.StatusUnprocessableEntity, status, "%v", body)
	got, e := errorOf(t, body)
	require.Equal(t, CodeValidationFailed, got)
	d := e["details"].([]any)[0].(map[string]any)
	require.Equal(t, field, d["field"], "%v", e)
	require.Equal(t, code, d["code"], "%v", e)
	return d["message"].(string)
}

// TestCatalogPutSaysWhatItDid: Heddle-Outcome is created, updated or
// unchanged, and a script's bare text keeps the description a whole write
// gave it, so pushing the same file again writes nothing.
func TestCatalogPutSaysWhatItDid(t *testing.T) {
	t.Parallel()
	b := setup(t)
	status, outcome, body := b.put(t, "/v1/scripts/greet", map[string]any{"description": "Says hello.", "content": "echo hi\n"})
	require.Equal(t, http.StatusCreated, status, "%v", body)
	require.Equal(t, "created", outcome)

	status, outcome, body = b.put(t, "/v1/scripts/greet", "echo hi\n", "Content-Type", "text/plain")
	require.Equal(t, http.StatusOK, status, "%v", body)
	require.Equal(t, "unchanged", outcome)
	require.EqualValues(t, 1, body["version"])
	require.Equal(t, "Says hello.", body["description"])

	status, outcome, body = b.put(t, "/v1/scripts/greet", "echo hello\n", "Content-Type", "text/plain")
	require.Equal(t, http.StatusOK, status, "%v", body)
	require.Equal(t, "updated", outcome)
	require.EqualValues(t, 2, body["version"])
	require.Equal(t, "Says hello.", body["description"], "a bare upload keeps the description")

	status, outcome, _ = b.put(t, "/v1/scripts/greet", map[string]any{"description": "Says hello.", "content": "echo hello\n"})
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "unchanged", outcome)
}

// TestCatalogRefusesAtWriteWhatCreateWouldRefuse: a pinned script version
// that does not exist, a runtime requires loop between services and
// templates including each other are refused with 422 at the field, by PUT
// and by POST /v1/catalog alike, and the refusal writes nothing.
func TestCatalogRefusesAtWriteWhatCreateWouldRefuse(t *testing.T) {
	t.Parallel()
	b := setup(t)
	status, _, body := b.put(t, "/v1/scripts/setup", "echo setup\n", "Content-Type", "text/plain")
	require.Equal(t, http.StatusCreated, status, "%v", body)

	pinned := map[string]any{"actions": map[string]any{"install": map[string]any{"type": "shell",
		"fields": map[string]any{"script_resource": "setup", "script_version": "999"}}}}
	status, _, body = b.put(t, "/v1/services/app", pinned)
	msg := refusedAt(t, status, body, "actions.install.fields.script_version", "unknown_reference")
	require.Contains(t, msg, `pins version 999 of script "setup", which has versions 1 to 1`)
	status, _ = b.do(t, b.acmeKey, http.MethodGet, "/v1/services/app", nil)
	require.Equal(t, http.StatusNotFound, status)

	requires := func(name string) map[string]any {
		return map[string]any{"dependencies": map[string]any{"runtime": map[string]any{"requires": []string{name}}}}
	}
	status, _, body = b.put(t, "/v1/services/ca", requires("cb"))
	require.Equal(t, http.StatusCreated, status, "%v", body)
	status, _, body = b.put(t, "/v1/services/cb", requires("ca"))
	msg = refusedAt(t, status, body, "dependencies.runtime.requires[0]", "cycle")
	require.Contains(t, msg, "cb -> ca -> cb")
	status, _ = b.do(t, b.acmeKey, http.MethodGet, "/v1/services/cb", nil)
	require.Equal(t, http.StatusNotFound, status)

	doc := "apiVersion: heddle/v1\npartialTemplates:\n  - {name: solo, includes: [{name: base}]}\n  - {name: base, includes: [{name: base}]}\n"
	status, body = b.do(t, b.acmeKey, http.MethodPost, "/v1/catalog", doc, "Content-Type", "application/yaml")
	msg = refusedAt(t, status, body, "partialTemplates[0].includes[0]", "cycle")
	require.Contains(t, msg, "partialtemplates/base -> partialtemplates/base")
	status, body = b.do(t, b.acmeKey, http.MethodGet, "/v1/partialtemplates", nil)
	require.Equal(t, http.StatusOK, status)
	require.Empty(t, body["items"], "a refused import writes nothing")
}
