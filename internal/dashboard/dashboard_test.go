package dashboard

import (
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/web"
)

func get(t *testing.T, h http.Handler, method, path string) *http.Response {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, path, nil))
	return rec.Result()
}

func body(t *testing.T, resp *http.Response) string {
	t.Helper()
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(data)
}

func TestHandlerServesFilesWithTheirTypes(t *testing.T) {
	h := Handler()
	for path, want := range map[string]string{
		"/":           "text/html; charset=utf-8",
		"/index.html": "text/html; charset=utf-8",
		"/app.js":     "text/javascript; charset=utf-8",
		"/api.js":     "text/javascript; charset=utf-8",
		"/style.css":  "text/css; charset=utf-8",
	} {
		resp := get(t, h, http.MethodGet, path)
		assert.Equal(t, http.StatusOK, resp.StatusCode, path)
		assert.Equal(t, want, resp.Header.Get("Content-Type"), path)
		assert.Equal(t, ContentSecurityPolicy, resp.Header.Get("Content-Security-Policy"), path)
		assert.Equal(t, "nosniff", resp.Header.Get("X-Content-Type-Options"), path)
		assert.NotEmpty(t, body(t, resp), path)
	}
	assert.Contains(t, ContentSecurityPolicy, "default-src 'self'")
	assert.NotContains(t, ContentSecurityPolicy, "unsafe-inline")
	assert.NotContains(t, ContentSecurityPolicy, "unsafe-eval")
}

func TestHandlerFallsBackToIndexForPagePaths(t *testing.T) {
	h := Handler()
	index := body(t, get(t, h, http.MethodGet, "/"))
	require.Contains(t, index, `<script type="module" src="app.js"></script>`)
	for _, path := range []string{"/clusters", "/clusters/c123/jobs/j456", "/catalog/services/kv"} {
		resp := get(t, h, http.MethodGet, path)
		assert.Equal(t, http.StatusOK, resp.StatusCode, path)
		assert.Equal(t, "text/html; charset=utf-8", resp.Header.Get("Content-Type"), path)
		assert.Equal(t, index, body(t, resp), path)
	}
	// A missing asset is a 404, not a page that a module loader chokes on.
	for _, path := range []string{"/missing.js", "/img/logo.png", "/embed.go"} {
		assert.Equal(t, http.StatusNotFound, get(t, h, http.MethodGet, path).StatusCode, path)
	}
}

func TestHandlerLeavesV1ToTheAPI(t *testing.T) {
	h := Handler()
	for _, path := range []string{"/v1", "/v1/", "/v1/clusters", "/v1/openapi.json"} {
		resp := get(t, h, http.MethodGet, path)
		assert.Equal(t, http.StatusNotFound, resp.StatusCode, path)
		assert.NotContains(t, body(t, resp), "<html", path)
	}
	// Only /v1 itself is the API's: a page path that merely starts alike is not.
	assert.Equal(t, http.StatusOK, get(t, h, http.MethodGet, "/v1x").StatusCode)
}

func TestHandlerIsReadOnly(t *testing.T) {
	h := Handler()
	resp := get(t, h, http.MethodPost, "/")
	assert.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
	assert.Equal(t, "GET, HEAD", resp.Header.Get("Allow"))
	head := get(t, h, http.MethodHead, "/app.js")
	assert.Equal(t, http.StatusOK, head.StatusCode)
	assert.Empty(t, body(t, head))
}

var imports = regexp.MustCompile(`from '\./([A-Za-z0-9_-]+\.js)'`)

// Every module the page imports is embedded, and no script writes HTML
// from strings (all text goes in through text nodes).
func TestModulesAreEmbeddedAndInsertNoHTML(t *testing.T) {
	h := Handler()
	// Every embedded module, so a new one cannot escape these checks.
	js, err := fs.Glob(web.Files, "*.js")
	require.NoError(t, err)
	require.Contains(t, js, "app.js")
	for _, name := range js {
		resp := get(t, h, http.MethodGet, "/"+name)
		require.Equal(t, http.StatusOK, resp.StatusCode, name)
		src := body(t, resp)
		for _, bad := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "localStorage"} {
			assert.NotContains(t, src, bad, "%s uses %s", name, bad)
		}
		for _, m := range imports.FindAllStringSubmatch(src, -1) {
			assert.Contains(t, js, m[1], "%s imports %s, which is not embedded", name, m[1])
		}
	}
}
