package api

import (
	"fmt"
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/domain"
)

// pages follows nextCursor from path (which already carries ?limit=) to the
// end and returns each page's items.
func (b *testBundle) pages(t *testing.T, key, path string) [][]map[string]any {
	t.Helper()
	var out [][]map[string]any
	next := path
	for {
		status, body := b.do(t, key, http.MethodGet, next, nil)
		require.Equal(t, http.StatusOK, status, "%v", body)
		var page []map[string]any
		for _, it := range body["items"].([]any) {
			page = append(page, it.(map[string]any))
		}
		out = append(out, page)
		cursor, _ := body["nextCursor"].(string)
		if cursor == "" {
			return out
		}
		require.Less(t, len(out), 20, "the cursor chain must end")
		next = path + "&cursor=" + url.QueryEscape(cursor)
	}
}

func TestCatalogListingPagesThroughCursors(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.importExample(t, b.acmeKey) // services kv, lb, web
	for _, name := range []string{"a1", "m1", "z1"} {
		status, body := b.do(t, b.acmeKey, http.MethodPut, "/v1/services/"+name, map[string]any{})
		require.Equal(t, http.StatusCreated, status, "%v", body)
	}
	// A deleted entity is not listed, wherever it falls.
	status, _ := b.do(t, b.acmeKey, http.MethodDelete, "/v1/services/m1", nil)
	require.Equal(t, http.StatusNoContent, status)

	var names []string
	pages := b.pages(t, b.acmeKey, "/v1/services?limit=2")
	require.GreaterOrEqual(t, len(pages), 3, "five services at two per page")
	for _, page := range pages {
		require.LessOrEqual(t, len(page), 2)
		for _, it := range page {
			names = append(names, it["name"].(string))
		}
	}
	require.Equal(t, []string{"a1", "kv", "lb", "web", "z1"}, names, "every entity once, by name")

	// Versions page too, newest first.
	for i := 2; i <= 5; i++ {
		status, body := b.do(t, b.acmeKey, http.MethodPut, "/v1/services/a1", map[string]any{"description": fmt.Sprintf("v%d", i)})
		require.Equal(t, http.StatusOK, status, "%v", body)
	}
	var versions []float64
	for _, page := range b.pages(t, b.acmeKey, "/v1/services/a1/versions?limit=2") {
		require.LessOrEqual(t, len(page), 2)
		for _, it := range page {
			versions = append(versions, it["version"].(float64))
		}
	}
	require.Equal(t, []float64{5, 4, 3, 2, 1}, versions)

	// A cursor from another tenant's listing is someone else's position; it
	// never reveals acme's items to globex.
	status, body := b.do(t, b.acmeKey, http.MethodGet, "/v1/services?limit=2", nil)
	require.Equal(t, http.StatusOK, status)
	cursor := body["nextCursor"].(string)
	status, body = b.do(t, b.otherKey, http.MethodGet, "/v1/services?limit=2&cursor="+url.QueryEscape(cursor), nil)
	if status == http.StatusOK {
		require.Empty(t, body["items"])
	} else {
		require.Equal(t, http.StatusBadRequest, status, "%v", body)
	}
}

func TestIfMatchGuardsPutAndDelete(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.importExample(t, b.acmeKey)

	resp := b.raw(t, b.acmeKey, http.MethodGet, "/v1/services/kv", nil)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	etag := resp.Header.Get("ETag")
	require.Equal(t, `"1"`, etag)

	// A write against the current ETag makes version 2.
	resp = b.raw(t, b.acmeKey, http.MethodPut, "/v1/services/kv", map[string]any{"description": "v2"}, "If-Match", etag)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, `"2"`, resp.Header.Get("ETag"))
	before := exportOf(t, b, b.acmeKey)

	// The same ETag is now stale: 412, and nothing changes.
	for _, stale := range []string{etag, `"3"`, `"0"`, `W/"2"`, `garbage`} {
		status, body := b.do(t, b.acmeKey, http.MethodPut, "/v1/services/kv", map[string]any{"description": "lost update"}, "If-Match", stale)
		require.Equal(t, http.StatusPreconditionFailed, status, "If-Match %s: %v", stale, body)
		code, _ := errorOf(t, body)
		require.Equal(t, CodePreconditionFailed, code)
	}
	status, body := b.do(t, b.acmeKey, http.MethodGet, "/v1/services/kv", nil)
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "v2", body["description"])
	require.EqualValues(t, 2, body["version"])
	status, body = b.do(t, b.acmeKey, http.MethodGet, "/v1/services/kv/versions", nil)
	require.Equal(t, http.StatusOK, status)
	require.Len(t, body["items"], 2, "a refused write adds no version")
	require.Equal(t, before, exportOf(t, b, b.acmeKey))

	// If-Match on an entity that does not exist creates nothing.
	status, body = b.do(t, b.acmeKey, http.MethodPut, "/v1/services/ghost", map[string]any{}, "If-Match", `"1"`)
	require.Equal(t, http.StatusNotFound, status, "%v", body)
	status, _ = b.do(t, b.acmeKey, http.MethodGet, "/v1/services/ghost", nil)
	require.Equal(t, http.StatusNotFound, status)
	status, _ = b.do(t, b.acmeKey, http.MethodPut, "/v1/services/ghost", map[string]any{}, "If-Match", "*")
	require.Equal(t, http.StatusNotFound, status, "* matches any existing entity, and there is none")

	// * matches whatever version exists.
	resp = b.raw(t, b.acmeKey, http.MethodPut, "/v1/services/kv", map[string]any{"description": "v3"}, "If-Match", "*")
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, `"3"`, resp.Header.Get("ETag"))

	// DELETE: a stale ETag is refused and the entity stays; the current one
	// deletes it; afterwards there is nothing to match.
	status, _ = b.do(t, b.acmeKey, http.MethodPut, "/v1/providers/ec2", map[string]any{"providerType": "ec2"})
	require.Equal(t, http.StatusCreated, status)
	status, _ = b.do(t, b.acmeKey, http.MethodPut, "/v1/providers/ec2", map[string]any{"providerType": "ec2", "label": "EC2"}, "If-Match", `"1"`)
	require.Equal(t, http.StatusOK, status)
	status, body = b.do(t, b.acmeKey, http.MethodDelete, "/v1/providers/ec2", nil, "If-Match", `"1"`)
	require.Equal(t, http.StatusPreconditionFailed, status, "%v", body)
	code, _ := errorOf(t, body)
	require.Equal(t, CodePreconditionFailed, code)
	status, body = b.do(t, b.acmeKey, http.MethodGet, "/v1/providers/ec2", nil)
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "EC2", body["label"])
	status, _ = b.do(t, b.acmeKey, http.MethodDelete, "/v1/providers/ec2", nil, "If-Match", `"2"`)
	require.Equal(t, http.StatusNoContent, status)
	status, _ = b.do(t, b.acmeKey, http.MethodGet, "/v1/providers/ec2", nil)
	require.Equal(t, http.StatusNotFound, status)
	status, _ = b.do(t, b.acmeKey, http.MethodDelete, "/v1/providers/ec2", nil, "If-Match", `"2"`)
	require.Equal(t, http.StatusNotFound, status)

	// A matching If-Match does not override a reference: kv is still used.
	status, body = b.do(t, b.acmeKey, http.MethodDelete, "/v1/services/kv", nil, "If-Match", `"3"`)
	require.Equal(t, http.StatusConflict, status, "%v", body)
	code, _ = errorOf(t, body)
	require.Equal(t, CodeReferenced, code)

	// Another tenant's If-Match never reaches acme's entity.
	status, _ = b.do(t, b.otherKey, http.MethodDelete, "/v1/services/kv", nil, "If-Match", `"3"`)
	require.Equal(t, http.StatusNotFound, status)
	status, _ = b.do(t, b.acmeKey, http.MethodGet, "/v1/services/kv", nil)
	require.Equal(t, http.StatusOK, status)
}

// TestCollectionsListOnlyTheCallersTenant lists every collection with
// globex's key after acme has filled its catalog: none shows acme's items.
func TestCollectionsListOnlyTheCallersTenant(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.importExample(t, b.acmeKey)
	status, _ := b.do(t, b.acmeKey, http.MethodPost, "/v1/users", map[string]any{"name": "alice", "role": "user"})
	require.Equal(t, http.StatusCreated, status)
	status, _ = b.do(t, b.otherKey, http.MethodPut, "/v1/services/own", map[string]any{})
	require.Equal(t, http.StatusCreated, status)
	status, _ = b.do(t, b.acmeKey, http.MethodPut, "/v1/scripts/hello", "echo hello", "Content-Type", "text/plain")
	require.Equal(t, http.StatusCreated, status)

	for _, k := range domain.Kinds {
		status, body := b.do(t, b.acmeKey, http.MethodGet, "/v1/"+string(k), nil)
		require.Equal(t, http.StatusOK, status)
		require.NotEmpty(t, body["items"], "acme has %s", k)

		var names []string
		for _, page := range b.pages(t, b.otherKey, "/v1/"+string(k)+"?limit=1") {
			for _, it := range page {
				names = append(names, it["name"].(string))
			}
		}
		if k == domain.KindService {
			require.Equal(t, []string{"own"}, names)
		} else {
			require.Empty(t, names, "globex lists none of acme's %s", k)
		}
	}

	status, body := b.do(t, b.otherKey, http.MethodGet, "/v1/users", nil)
	require.Equal(t, http.StatusOK, status)
	var users []string
	for _, u := range body["items"].([]any) {
		users = append(users, u.(map[string]any)["name"].(string))
	}
	require.Equal(t, []string{"globex-admin"}, users)

	status, body = b.do(t, b.otherKey, http.MethodGet, "/v1/catalog", nil)
	require.Equal(t, http.StatusOK, status)
	require.Len(t, body["services"], 1, "globex's export holds only its own service: %v", body)
	require.Empty(t, body["clusterTemplates"])
}
