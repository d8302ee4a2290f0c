package api

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCatalogExportPages follows GET /v1/catalog page by page: every
// entity comes once, the pages put together are the whole export, a page
// read after the catalog changed is a 409, and a bad limit or cursor is a
// 400 on its field.
func TestCatalogExportPages(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.importExample(t, b.acmeKey)
	status, whole := b.do(t, b.acmeKey, http.MethodGet, "/v1/catalog", nil)
	require.Equal(t, http.StatusOK, status, "%v", whole)
	require.Empty(t, whole["nextCursor"], "a small catalog is one page")
	names := func(doc map[string]any) []string {
		var out []string
		for _, kind := range []string{"providers", "hardwareTypes", "imageTypes", "scripts", "services", "partialTemplates", "clusterTemplates"} {
			list, _ := doc[kind].([]any)
			for _, e := range list {
				out = append(out, kind+"/"+e.(map[string]any)["name"].(string))
			}
		}
		return out
	}
	all := names(whole)
	require.Greater(t, len(all), 4)

	var paged []string
	var cursors []string
	for cursor := ""; ; {
		p := "/v1/catalog?limit=2"
		if cursor != "" {
			p += "&cursor=" + url.QueryEscape(cursor)
		}
		status, page := b.do(t, b.acmeKey, http.MethodGet, p, nil)
		require.Equal(t, http.StatusOK, status, "%v", page)
		got := names(page)
		require.LessOrEqual(t, len(got), 2)
		require.NotEmpty(t, got)
		paged = append(paged, got...)
		cursor, _ = page["nextCursor"].(string)
		if cursor == "" {
			break
		}
		cursors = append(cursors, cursor)
	}
	require.Equal(t, all, paged, "the pages are the whole export, in its order")

	// A cursor is bound to its listing: its format, its tenant, unchanged.
	for _, bad := range []struct{ query, field string }{
		{"limit=0", "query.limit"},
		{"limit=-3", "query.limit"},
		{"limit=501", "query.limit"},
		{"limit=99999999999999999999", "query.limit"},
		{"limit=ten", "query.limit"},
		{"cursor=" + url.QueryEscape(cursors[0]) + "x", "query.cursor"},
		{"cursor=" + strings.Repeat("A", 5000), "query.cursor"},
		{"cursor=" + url.QueryEscape(cursors[0]) + "&format=yaml", "query.cursor"},
		{"cursor=%2F%2F%2F", "query.cursor"},
	} {
		status, body := b.do(t, b.acmeKey, http.MethodGet, "/v1/catalog?"+bad.query, nil)
		require.Equal(t, http.StatusBadRequest, status, "%s: %v", bad.query, body)
		_, e := errorOf(t, body)
		require.Equal(t, bad.field, e["details"].([]any)[0].(map[string]any)["field"], bad.query)
	}
	status, body := b.do(t, b.otherKey, http.MethodGet, "/v1/catalog?limit=2&cursor="+url.QueryEscape(cursors[0]), nil)
	require.Equal(t, http.StatusBadRequest, status, "another tenant's cursor: %v", body)

	// A write between two pages: the export is no longer one snapshot.
	status, _ = b.do(t, b.acmeKey, http.MethodPut, "/v1/providers/ec2", "name: ec2\nproviderType: ec2\n", "Content-Type", "application/yaml")
	require.Equal(t, http.StatusCreated, status)
	status, body = b.do(t, b.acmeKey, http.MethodGet, "/v1/catalog?limit=2&cursor="+url.QueryEscape(cursors[0]), nil)
	require.Equal(t, http.StatusConflict, status, "%v", body)
	code, e := errorOf(t, body)
	require.Equal(t, CodeConflict, code)
	require.Contains(t, fmt.Sprint(e["message"]), "export again from the first page")
}
