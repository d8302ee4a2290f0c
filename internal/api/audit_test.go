package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// auditOf follows the audit pages of a tenant as key sees them.
func (b *testBundle) auditOf(t *testing.T, key, query string) []map[string]any {
	t.Helper()
	var out []map[string]any
	path := "/v1/audit?limit=7" + query
	for {
		status, body := b.do(t, key, http.MethodGet, path, nil)
		require.Equal(t, http.StatusOK, status, "%v", body)
		for _, it := range body["items"].([]any) {
			out = append(out, it.(map[string]any))
		}
		next, _ := body["nextCursor"].(string)
		if next == "" {
			return out
		}
		path = "/v1/audit?limit=7" + query + "&cursor=" + next
	}
}

// TestEveryChangeIsAudited walks the route table: a change asked of any
// route that is not a GET, whatever its outcome, leaves an audit record
// naming the route, so a new route cannot go unaudited.
func TestEveryChangeIsAudited(t *testing.T) {
	t.Parallel()
	b := setup(t)
	fill := map[string]string{"kind": "services", "name": "audited", "cluster": "c-none", "job": "j-none",
		"tenant": "acme", "user": "nobody", "key": "k-none", "version": "1", "provider": "pool", "host": "h-none", "task": "t-none", "issuer": "i-none", "webhook": "wh-none"}
	want := map[string]string{} // request id -> route
	for i, rt := range b.api.routes() {
		if rt.Method == http.MethodGet || rt.Role == "" {
			continue // a public route has no caller to record (a sign-in is recorded when it succeeds)
		}
		path := rt.Path
		for _, p := range pathParams(rt.Path) {
			v, ok := fill[p]
			require.True(t, ok, "the test knows no value for {%s} of %s", p, rt.Path)
			path = strings.ReplaceAll(path, "{"+p+"}", v)
		}
		id := fmt.Sprintf("audit-%d", i)
		want[id] = rt.Method + " " + rt.Path
		b.do(t, b.acmeKey, rt.Method, path, map[string]any{}, "X-Request-Id", id)
	}
	require.NotEmpty(t, want)
	got := map[string]map[string]any{}
	for _, r := range b.auditOf(t, b.acmeKey, "") {
		got[r["requestId"].(string)] = r
	}
	for id, route := range want {
		r, ok := got[id]
		require.True(t, ok, "%s left no audit record", route)
		require.Equal(t, route, r["method"].(string)+" "+r["route"].(string))
		require.Equal(t, "acme", r["tenant"])
		require.Equal(t, "acme-admin", r["user"])
		require.NotEmpty(t, r["keyId"])
		status := int(r["status"].(float64))
		switch {
		case status >= 500:
			require.Equal(t, "failed", r["outcome"], route)
		case status >= 400:
			require.Equal(t, "refused", r["outcome"], route)
			require.NotEmpty(t, r["code"], route)
		default:
			require.Equal(t, "done", r["outcome"], route)
		}
	}
}

func TestAuditRecordsWhoAndWhatButNoSecret(t *testing.T) {
	t.Parallel()
	b := setup(t)
	status, body := b.do(t, b.acmeKey, http.MethodPost, "/v1/users/acme-admin/keys", map[string]any{"description": "ci"}, "X-Request-Id", "make-a-key")
	require.Equal(t, http.StatusCreated, status, "%v", body)
	secret := body["secret"].(string)
	require.NotEmpty(t, secret)
	// Reads and requests with no valid key leave nothing.
	b.do(t, b.acmeKey, http.MethodGet, "/v1/users", nil)
	b.do(t, "hdl_not-a-key", http.MethodPost, "/v1/users", map[string]any{"name": "mallory"})

	records := b.auditOf(t, b.acmeKey, "")
	require.Len(t, records, 1)
	r := records[0]
	require.Equal(t, "make-a-key", r["requestId"])
	require.Equal(t, "done", r["outcome"])
	require.Equal(t, map[string]any{"user": "acme-admin"}, r["target"])
	raw, err := json.Marshal(records)
	require.NoError(t, err)
	require.NotContains(t, string(raw), secret, "a key's secret never reaches the audit")

	// Tenants see only their own; the superadmin names any.
	require.Empty(t, b.auditOf(t, b.otherKey, ""))
	status, body = b.do(t, b.otherKey, http.MethodGet, "/v1/audit?tenant=acme", nil)
	require.Equal(t, http.StatusNotFound, status, "%v", body)
	require.Len(t, b.auditOf(t, b.rootKey, "&tenant=acme"), 1)
	status, body = b.do(t, b.rootKey, http.MethodGet, "/v1/audit?limit=0", nil)
	require.Equal(t, http.StatusBadRequest, status)
	code, _ := errorOf(t, body)
	require.Equal(t, "invalid_parameter", code)
}

func TestUsageRangesAreChecked(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, tc := range []struct{ query, field string }{
		{"from=yesterday", "query.from"},
		{"from=2026-11-24T00:00:00Z&to=2026-11-23T00:00:00Z", "query.to"},
		{"from=2026-01-01T00:00:00Z&to=2026-11-23T00:00:00Z&step=hour", "query.from"},
		{"groupBy=colour", "query.groupBy"},
		{"step=week", "query.step"},
	} {
		status, body := b.do(t, b.acmeKey, http.MethodGet, "/v1/usage?"+tc.query, nil)
		require.Equal(t, http.StatusBadRequest, status, tc.query)
		_, e := errorOf(t, body)
		require.Equal(t, tc.field, e["details"].([]any)[0].(map[string]any)["field"], tc.query)
	}
	status, body := b.do(t, b.acmeKey, http.MethodGet, "/v1/usage", nil)
	require.Equal(t, http.StatusOK, status, "%v", body)
	require.Len(t, body["buckets"], 7, "seven days by day by default")
	require.Empty(t, body["rows"])
	status, _ = b.do(t, b.otherKey, http.MethodGet, "/v1/usage?tenant=acme", nil)
	require.Equal(t, http.StatusNotFound, status, "another tenant's usage does not exist")
}

// TestAuditNamesWhatACreateMade: the record of POST /v1/clusters names the
// cluster and job it made, which its path cannot; an operation's record
// names its job beside the cluster in its path; a dry run made nothing.
func TestAuditNamesWhatACreateMade(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.importExample(t, b.acmeKey)
	status, body := b.do(t, b.acmeKey, http.MethodPost, "/v1/clusters?dryRun=true", map[string]any{"name": "shop", "template": "web", "size": 3}, "X-Request-Id", "dry-create")
	require.Equal(t, http.StatusOK, status, "%v", body)
	status, body = b.do(t, b.acmeKey, http.MethodPost, "/v1/clusters", map[string]any{"name": "shop", "template": "web", "size": 3}, "X-Request-Id", "the-create")
	require.Equal(t, http.StatusAccepted, status, "%v", body)
	clusterID := body["cluster"].(map[string]any)["id"].(string)
	jobID := body["job"].(map[string]any)["id"].(string)

	byRequest := map[string]map[string]any{}
	for _, r := range b.auditOf(t, b.acmeKey, "") {
		byRequest[r["requestId"].(string)] = r
	}
	require.Equal(t, map[string]any{"cluster": clusterID, "job": jobID}, byRequest["the-create"]["target"])
	require.Nil(t, byRequest["dry-create"]["target"], "a dry run made nothing")
}
