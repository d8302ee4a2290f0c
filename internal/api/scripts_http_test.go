package api

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestScriptResourcesOverHTTP: a script is uploaded as bare text or JSON,
// the same content changes nothing, listings leave the content out, one
// version gives it, users read and only admins write, a service naming a
// missing script is refused, and a script a service runs cannot be deleted.
func TestScriptResourcesOverHTTP(t *testing.T) {
	t.Parallel()
	b := setup(t)
	userKey := b.userKey(t, b.acmeKey, "bob")

	status, body := b.do(t, b.acmeKey, http.MethodPut, "/v1/scripts/greet", "echo one > /tmp/x && true\n", "Content-Type", "text/plain")
	require.Equal(t, http.StatusCreated, status, "%v", body)
	require.EqualValues(t, 1, body["version"])
	require.EqualValues(t, 26, body["size"])
	require.Len(t, body["sha256"], 64)
	status, body = b.do(t, b.acmeKey, http.MethodPut, "/v1/scripts/greet", "echo one > /tmp/x && true\n", "Content-Type", "text/x-shellscript")
	require.Equal(t, http.StatusOK, status, "%v", body)
	require.EqualValues(t, 1, body["version"], "the same content is no new version")
	status, body = b.do(t, b.acmeKey, http.MethodPut, "/v1/scripts/greet", map[string]any{"content": "echo two\n", "sha256": "ignored"})
	require.Equal(t, http.StatusOK, status, "%v", body)
	require.EqualValues(t, 2, body["version"])
	require.NotEqual(t, "ignored", body["sha256"])

	for _, path := range []string{"/v1/scripts", "/v1/scripts/greet/versions"} {
		status, body = b.do(t, userKey, http.MethodGet, path, nil)
		require.Equal(t, http.StatusOK, status, "%v", body)
		for _, it := range body["items"].([]any) {
			require.NotContains(t, it, "content", "%s leaves the content out", path)
			require.Contains(t, it, "sha256")
		}
	}
	status, body = b.do(t, userKey, http.MethodGet, "/v1/scripts/greet/versions/1", nil)
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "echo one > /tmp/x && true\n", body["content"])
	status, body = b.do(t, userKey, http.MethodGet, "/v1/scripts/greet", nil)
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "echo two\n", body["content"])
	status, _ = b.do(t, userKey, http.MethodPut, "/v1/scripts/greet", "echo three", "Content-Type", "text/plain")
	require.Equal(t, http.StatusForbidden, status, "users read scripts, admins write them")
	status, _ = b.do(t, userKey, http.MethodDelete, "/v1/scripts/greet", nil)
	require.Equal(t, http.StatusForbidden, status)

	runs := func(script string) map[string]any {
		return map[string]any{"actions": map[string]any{"start": map[string]any{"type": "shell", "fields": map[string]any{"script_resource": script}}}}
	}
	status, body = b.do(t, b.acmeKey, http.MethodPut, "/v1/services/app", runs("ghost"))
	require.Equal(t, http.StatusUnprocessableEntity, status)
	_, e := errorOf(t, body)
	require.Equal(t, "actions.start.fields.script_resource", e["details"].([]any)[0].(map[string]any)["field"])
	status, body = b.do(t, b.acmeKey, http.MethodPut, "/v1/services/app", runs("greet"))
	require.Equal(t, http.StatusCreated, status, "%v", body)

	status, body = b.do(t, b.acmeKey, http.MethodDelete, "/v1/scripts/greet", nil)
	require.Equal(t, http.StatusConflict, status)
	code, e := errorOf(t, body)
	require.Equal(t, CodeReferenced, code)
	require.Equal(t, []any{map[string]any{"kind": "services", "name": "app"}}, e["referrers"])

	status, _ = b.do(t, b.acmeKey, http.MethodDelete, "/v1/services/app", nil)
	require.Equal(t, http.StatusNoContent, status)
	status, _ = b.do(t, b.acmeKey, http.MethodDelete, "/v1/scripts/greet", nil)
	require.Equal(t, http.StatusNoContent, status)
	status, _ = b.do(t, b.acmeKey, http.MethodGet, "/v1/scripts/greet", nil)
	require.Equal(t, http.StatusNotFound, status)
	status, body = b.do(t, b.acmeKey, http.MethodPut, "/v1/scripts/greet", "echo again", "Content-Type", "text/plain")
	require.Equal(t, http.StatusCreated, status)
	require.EqualValues(t, 3, body["version"], "a version number never names two texts")
}

// TestScriptLimits: a script is at most 256 KiB of UTF-8 text (422 at
// content), its stored form at most one store item (413), and the body at
// most 1 MiB (413); none changes anything.
func TestScriptLimits(t *testing.T) {
	t.Parallel()
	b := setup(t)
	before := exportOf(t, b, b.acmeKey)
	for _, tt := range []struct {
		name        string
		body        any
		contentType string
		status      int
		code, field string
	}{
		{"over 256 KiB", strings.Repeat("x", 256<<10+1), "text/plain", 422, CodeValidationFailed, "content"},
		{"empty", "", "text/plain", 422, CodeValidationFailed, "content"},
		{"not UTF-8", "echo \xff\xfe", "text/plain", 422, CodeValidationFailed, "content"},
		{"NUL byte", map[string]any{"content": "echo \x00"}, "", 422, CodeValidationFailed, "content"},
		{"stored form over 399 KiB", strings.Repeat("<", 200<<10), "text/plain", 413, CodeBodyTooLarge, ""},
		{"body over 1 MiB", strings.Repeat("x", MaxBodyBytes+1), "text/plain", 413, CodeBodyTooLarge, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var headers []string
			if tt.contentType != "" {
				headers = []string{"Content-Type", tt.contentType}
			}
			status, body := b.do(t, b.acmeKey, http.MethodPut, "/v1/scripts/big", tt.body, headers...)
			require.Equal(t, tt.status, status, "%v", body)
			code, e := errorOf(t, body)
			require.Equal(t, tt.code, code)
			if tt.field != "" {
				require.Equal(t, tt.field, e["details"].([]any)[0].(map[string]any)["field"])
			}
		})
	}
	_, body := b.do(t, b.acmeKey, http.MethodPut, "/v1/scripts/big", strings.Repeat("x", 256<<10+1), "Content-Type", "text/plain")
	_, e := errorOf(t, body)
	require.Contains(t, e["message"], "at most 262144 (256 KiB)")
	require.Equal(t, before, exportOf(t, b, b.acmeKey))
	status, _ := b.do(t, b.acmeKey, http.MethodPut, "/v1/scripts/big", strings.Repeat("x", 256<<10), "Content-Type", "text/plain")
	require.Equal(t, http.StatusCreated, status, "256 KiB exactly is accepted")
}

// TestClustersPinTheScriptVersionTheyWerePlannedWith: a service that runs a
// script by name gets, in a new cluster's spec, the version that was the
// latest at create; a version pushed later changes nothing for that cluster
// and is what the next cluster gets.
func TestClustersPinTheScriptVersionTheyWerePlannedWith(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.importExample(t, b.acmeKey)
	status, _ := b.do(t, b.acmeKey, http.MethodPut, "/v1/scripts/start-kv", "echo v1", "Content-Type", "text/plain")
	require.Equal(t, http.StatusCreated, status)
	_, kv := b.do(t, b.acmeKey, http.MethodGet, "/v1/services/kv", nil)
	kv["actions"].(map[string]any)["start"].(map[string]any)["fields"] = map[string]any{"script_resource": "start-kv"}
	status, body := b.do(t, b.acmeKey, http.MethodPut, "/v1/services/kv", kv)
	require.Equal(t, http.StatusOK, status, "%v", body)

	pinned := func(clusterID string) string {
		sp, err := b.api.clusters.Spec(context.Background(), "acme", clusterID, false)
		require.NoError(t, err)
		return sp.Services["kv"].Actions["start"].Fields["script_version"]
	}
	create := func(name string) string {
		status, body := b.do(t, b.acmeKey, http.MethodPost, "/v1/clusters", map[string]any{"name": name, "template": "web", "size": 3})
		require.Equal(t, http.StatusAccepted, status, "%v", body)
		return body["cluster"].(map[string]any)["id"].(string)
	}
	first := create("first")
	require.Equal(t, "1", pinned(first))
	status, _ = b.do(t, b.acmeKey, http.MethodPut, "/v1/scripts/start-kv", "echo v2", "Content-Type", "text/plain")
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "1", pinned(first), "a running cluster keeps the version it was planned with")
	require.Equal(t, "2", pinned(create("second")))
	_, kv = b.do(t, b.acmeKey, http.MethodGet, "/v1/services/kv", nil)
	require.NotContains(t, kv["actions"].(map[string]any)["start"].(map[string]any)["fields"], "script_version", "the catalog's service is unchanged")
}

// userKey creates a user of the admin's tenant and returns their key.
func (b *testBundle) userKey(t testing.TB, adminKey, name string) string {
	t.Helper()
	status, body := b.do(t, adminKey, http.MethodPost, "/v1/users", map[string]any{"name": name, "role": "user"})
	require.Equal(t, http.StatusCreated, status, "%v", body)
	status, body = b.do(t, adminKey, http.MethodPost, "/v1/users/"+name+"/keys", nil)
	require.Equal(t, http.StatusCreated, status, "%v", body)
	return body["secret"].(string)
}
