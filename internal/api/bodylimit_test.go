package api

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/catalog"
	"github.com/heddle-io/heddle/internal/catalog/catalogtest"
)

// TestCatalogBodyLimit: POST /v1/catalog takes documents up to
// MaxCatalogBodyBytes, which stays within what one synchronous Lambda event
// carries once API Gateway base64-encodes it; every other route keeps
// MaxBodyBytes. An oversized body is a 413 that names the limit and changes
// nothing.
func TestCatalogBodyLimit(t *testing.T) {
	t.Parallel()
	require.Greater(t, MaxCatalogBodyBytes, MaxBodyBytes)
	const lambdaEventBytes, headroom = 6_000_000, 64 << 10
	require.LessOrEqual(t, (MaxCatalogBodyBytes+2)/3*4+headroom, lambdaEventBytes)

	b := setup(t)
	b.importExample(t, b.acmeKey)
	before := exportOf(t, b, b.acmeKey)

	// Over 1 MiB: 2,020 entities in one document, all imported at once.
	doc := catalogtest.Large(2000, "A")
	require.Greater(t, len(doc), MaxBodyBytes)
	status, body := b.do(t, b.otherKey, http.MethodPost, "/v1/catalog", doc)
	require.Equal(t, http.StatusOK, status, "%v", body)
	require.Len(t, body["created"], 2020)

	// One byte over the catalog's limit.
	tooBig := `{"apiVersion":"heddle/v1","providers":[{"name":"p","description":"` + strings.Repeat("x", MaxCatalogBodyBytes) + `"}]}`
	status, body = b.do(t, b.acmeKey, http.MethodPost, "/v1/catalog", tooBig)
	require.Equal(t, http.StatusRequestEntityTooLarge, status)
	code, _ := errorOf(t, body)
	require.Equal(t, CodeBodyTooLarge, code)
	require.Contains(t, body["error"].(map[string]any)["message"], "larger than 4 MiB")
	require.Equal(t, before, exportOf(t, b, b.acmeKey))

	// Another route keeps its 1 MiB.
	status, body = b.do(t, b.acmeKey, http.MethodPut, "/v1/services/kv", `{"name":"kv","description":"`+strings.Repeat("x", MaxBodyBytes)+`"}`)
	require.Equal(t, http.StatusRequestEntityTooLarge, status)
	require.Contains(t, body["error"].(map[string]any)["message"], "larger than 1 MiB")
	require.Equal(t, before, exportOf(t, b, b.acmeKey))
}

// TestFiveHundredEntityImportOverHTTP imports catalogtest's 500-entity
// catalog with POST /v1/catalog, reads it back whole with GET /v1/catalog,
// and imports a new version of every entity while readers export: each
// export is one catalog or the other, never a mix.
func TestFiveHundredEntityImportOverHTTP(t *testing.T) {
	t.Parallel()
	b := setup(t)
	status, body := b.do(t, b.acmeKey, http.MethodPost, "/v1/catalog", catalogtest.Large(catalogtest.LargeServices, "A"))
	require.Equal(t, http.StatusOK, status, "%v", body)
	require.Len(t, body["created"], catalogtest.LargeEntities)
	require.Equal(t, map[string]int{"A": catalogtest.LargeEntities}, exportMarks(t, b))

	done := make(chan struct{})
	go func() {
		defer close(done)
		status, body := b.do(t, b.acmeKey, http.MethodPost, "/v1/catalog", catalogtest.Large(catalogtest.LargeServices, "B"))
		if status != http.StatusOK {
			t.Errorf("second import: %d %v", status, body)
		}
	}()
	for reading := true; reading; {
		select {
		case <-done:
			reading = false
		default:
		}
		m := exportMarks(t, b)
		require.Len(t, m, 1, "an export mixes two imports: %v", m)
	}
	require.Equal(t, map[string]int{"B": catalogtest.LargeEntities}, exportMarks(t, b))
}

// exportMarks exports acme's catalog and counts its entities by the mark
// catalogtest.Large put in their descriptions.
func exportMarks(t *testing.T, b *testBundle) map[string]int {
	t.Helper()
	d := exportPages(t, b, b.acmeKey)
	out := map[string]int{}
	add := func(desc string) {
		if i := strings.LastIndex(desc, "("); i >= 0 {
			out[strings.TrimSuffix(desc[i+1:], ")")]++
		}
	}
	for _, e := range d.Providers {
		add(e.Description)
	}
	for _, e := range d.HardwareTypes {
		add(e.Description)
	}
	for _, e := range d.ImageTypes {
		add(e.Description)
	}
	for _, e := range d.Services {
		add(e.Description)
	}
	for _, e := range d.PartialTemplates {
		add(e.Description)
	}
	for _, e := range d.ClusterTemplates {
		add(e.Description)
	}
	return out
}

// exportPages follows GET /v1/catalog's pages to the end and puts them
// together, starting again from the first page when the catalog changed
// between two (409), as heddle export does.
func exportPages(t *testing.T, b *testBundle, key string) *catalog.Document {
	t.Helper()
	whole := &catalog.Document{}
	for cursor, restarts := "", 0; ; {
		path := "/v1/catalog"
		if cursor != "" {
			path += "?cursor=" + url.QueryEscape(cursor)
		}
		resp := b.raw(t, key, http.MethodGet, path, nil)
		raw, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		if resp.StatusCode == http.StatusConflict && cursor != "" && restarts < 100 {
			whole, cursor = &catalog.Document{}, ""
			restarts++
			continue
		}
		require.Equal(t, http.StatusOK, resp.StatusCode, "%.300s", raw)
		var page catalog.Document
		require.NoError(t, json.Unmarshal(raw, &page))
		whole.Append(&page)
		if page.NextCursor == "" {
			return whole
		}
		cursor = page.NextCursor
	}
}
