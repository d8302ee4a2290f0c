package api

import (
	"context"
	"net/http"
	"sort"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/stretchr/testify/require"
)

// TestOpenAPIDocumentsEveryRoute checks the document is valid OpenAPI 3 and
// that it and the route table list exactly the same operations.
func TestOpenAPIDocumentsEveryRoute(t *testing.T) {
	t.Parallel()
	raw, err := OpenAPIJSON()
	require.NoError(t, err)
	doc, err := openapi3.NewLoader().LoadFromData(raw)
	require.NoError(t, err)
	require.NoError(t, doc.Validate(context.Background()))

	documented := map[string]bool{}
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			documented[method+" "+path] = true
		}
	}
	served := map[string]bool{}
	for _, rt := range (&Server{}).routes() {
		served[rt.Method+" "+rt.Path] = true
	}
	require.Equal(t, sortedKeys(served), sortedKeys(documented))

	// Every operation that needs a key documents 401, and every public one
	// opts out of security.
	for _, rt := range (&Server{}).routes() {
		op := doc.Paths.Find(rt.Path).GetOperation(rt.Method)
		if rt.Role == "" {
			require.NotNil(t, op.Security, "%s %s is public", rt.Method, rt.Path)
			require.Empty(t, *op.Security)
			continue
		}
		require.NotNil(t, op.Responses.Value("401"), "%s %s documents 401", rt.Method, rt.Path)
		require.NotNil(t, op.Responses.Value("429"), "%s %s documents 429 (Throttle)", rt.Method, rt.Path)
		// The routes that honour an Idempotency-Key say so, and only they.
		takesKey := false
		for _, p := range op.Parameters {
			if p.Ref == "#/components/parameters/idempotencyKey" {
				takesKey = true
			}
		}
		require.Equal(t, IdempotentRoute(rt.Method, rt.Path), takesKey, "%s %s: Idempotency-Key documented as honoured", rt.Method, rt.Path)
		if takesKey {
			for _, code := range []string{"400", "409", "422"} {
				require.NotNil(t, op.Responses.Value(code), "%s %s documents %s (Idempotency-Key)", rt.Method, rt.Path, code)
			}
		}
	}
}

func TestOpenAPIServed(t *testing.T) {
	t.Parallel()
	b := setup(t)
	resp := b.raw(t, "", http.MethodGet, "/v1/openapi.json", nil)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.True(t, strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json"))
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
