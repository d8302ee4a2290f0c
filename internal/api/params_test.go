package api

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/domain"
)

// acmeWorld is a tenant with one of everything a route's path can name.
type acmeWorld struct {
	b                 *testBundle
	cluster, job, key string
	ids               *strings.Replacer
}

func setupWorld(t *testing.T) acmeWorld {
	t.Helper()
	b := setup(t)
	b.importExample(t, b.acmeKey)
	w := acmeWorld{b: b}
	status, body := b.do(t, b.acmeKey, http.MethodPost, "/v1/users", map[string]any{"name": "alice", "role": "user"})
	require.Equal(t, http.StatusCreated, status, "%v", body)
	status, body = b.do(t, b.acmeKey, http.MethodPost, "/v1/users/alice/keys", nil)
	require.Equal(t, http.StatusCreated, status, "%v", body)
	w.key = body["id"].(string)
	status, body = b.do(t, b.acmeKey, http.MethodPost, "/v1/issuers", map[string]any{"name": "corp", "url": "https://idp.example.com",
		"audience": "heddle", "rules": []map[string]any{{"role": "user"}}})
	require.Equal(t, http.StatusCreated, status, "%v", body)
	status, body = b.do(t, b.acmeKey, http.MethodPost, "/v1/webhooks", map[string]any{"url": "https://hooks.example.com/heddle"})
	require.Equal(t, http.StatusCreated, status, "%v", body)
	webhook := body["id"].(string)
	status, body = b.do(t, b.acmeKey, http.MethodPost, "/v1/clusters", map[string]any{"name": "shop", "template": "web", "size": 3})
	require.Equal(t, http.StatusAccepted, status, "%v", body)
	w.cluster = body["cluster"].(map[string]any)["id"].(string)
	w.job = body["job"].(map[string]any)["id"].(string)
	w.ids = strings.NewReplacer("{webhook}", webhook, "{kind}", "services", "{name}", "kv", "{version}", "1", "{tenant}", "acme",
		"{user}", "alice", "{key}", w.key, "{cluster}", w.cluster, "{job}", w.job, "{task}", "t1", "{provider}", "local",
		"{host}", "h0", "{issuer}", "corp")
	return w
}

// keyFor is a key of acme (or the superadmin's) that the route lets in.
func (w acmeWorld) keyFor(rt route) string {
	switch rt.Role {
	case "":
		return ""
	case domain.RoleSuperadmin:
		return w.b.rootKey
	}
	return w.b.acmeKey
}

// path is rt's path naming acme's things.
func (w acmeWorld) path(rt route) string {
	if strings.HasPrefix(rt.Path, "/v1/clustertemplates/{name}") {
		return strings.Replace(rt.Path, "{name}", "web", 1)
	}
	return w.ids.Replace(rt.Path)
}

// snapshot is what a refused request must leave as it was.
func (w acmeWorld) snapshot(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	b.WriteString(exportOf(t, w.b, w.b.acmeKey))
	for _, path := range []string{"/v1/users", "/v1/users/alice/keys", "/v1/issuers", "/v1/webhooks", "/v1/tenants/acme",
		"/v1/clusters?all=true", "/v1/clusters/" + w.cluster + "/jobs"} {
		status, body := w.b.do(t, w.b.acmeKey, http.MethodGet, path, nil)
		require.Equal(t, http.StatusOK, status, "%s: %v", path, body)
		fmt.Fprintf(&b, "%s %v\n", path, body)
	}
	c := w.b.clusterOf(t, w.b.acmeKey, w.cluster)
	fmt.Fprintf(&b, "cluster %v %v %v\n", c["status"], c["managedBy"], c["version"])
	status, body := w.b.do(t, w.b.rootKey, http.MethodGet, "/v1/tenants", nil)
	require.Equal(t, http.StatusOK, status, "%v", body)
	fmt.Fprintf(&b, "tenants %v\n", body)
	return b.String()
}

// requireRefused checks a 400 whose problems name field first.
func requireRefused(t *testing.T, status int, body map[string]any, code, field string) map[string]any {
	t.Helper()
	require.Equal(t, http.StatusBadRequest, status, "%v", body)
	got, e := errorOf(t, body)
	require.Equal(t, code, got, "%v", e)
	details, _ := e["details"].([]any)
	require.NotEmpty(t, details, "%v", e)
	first := details[0].(map[string]any)
	require.Equal(t, field, first["field"], "%v", e)
	require.Contains(t, e["message"], field)
	return first
}

// TestEveryRouteRefusesAnUnknownQueryParameter walks the route table: on
// each route, a parameter it does not declare answers 400 on query.<name>,
// before the handler runs, and nothing changes.
func TestEveryRouteRefusesAnUnknownQueryParameter(t *testing.T) {
	t.Parallel()
	w := setupWorld(t)
	before := w.snapshot(t)
	walked := 0
	for _, rt := range w.b.api.routes() {
		var body any
		if rt.Method == http.MethodPost || rt.Method == http.MethodPut {
			body = map[string]any{}
		}
		status, resp := w.b.do(t, w.keyFor(rt), rt.Method, w.path(rt)+"?dryrun=true", body)
		p := requireRefused(t, status, resp, CodeInvalidParameter, "query.dryrun")
		require.Equal(t, domain.CodeUnknownField, p["code"], "%s %s", rt.Method, rt.Path)
		require.Contains(t, p["message"], rt.Method+" "+rt.Path, "the problem names the route")
		walked++
	}
	require.Equal(t, len(w.b.api.routes()), walked)
	require.Equal(t, before, w.snapshot(t), "no refused request changed anything")
}

// TestQueryParametersAreHeldToTheirSchema sends each kind of bad value the
// document can describe, on routes that would act on them.
func TestQueryParametersAreHeldToTheirSchema(t *testing.T) {
	t.Parallel()
	w := setupWorld(t)
	before := w.snapshot(t)
	cluster := "/v1/clusters/" + w.cluster
	newService := `{"apiVersion":"heddle/v1","services":[{"name":"extra"}]}`
	for _, c := range []struct {
		name, method, path string
		body               any
		field, code        string
		says               string
	}{
		{"dryRun on a catalog import", http.MethodPost, "/v1/catalog?dryRun=true", newService, "query.dryRun", domain.CodeUnknownField, "it takes no query parameters"},
		{"an unreadable query", http.MethodPost, "/v1/catalog?dryRun=%zz", newService, "query", domain.CodeInvalid, "write a literal % as %25"},
		{"a typo of dryRun", http.MethodDelete, cluster + "?dryrun=true", nil, "query.dryrun", domain.CodeUnknownField, "it takes dryRun, force"},
		{"unknown cluster status", http.MethodGet, "/v1/clusters?status=ZZZ", nil, "query.status", domain.CodeInvalid, "PENDING, ACTIVE, INCONSISTENT, FAILED, DELETING, TERMINATED"},
		{"unknown node status", http.MethodGet, cluster + "/nodes?status=GONE", nil, "query.status", domain.CodeInvalid, "PLANNED, CREATING"},
		{"page over the maximum", http.MethodGet, "/v1/clusters?limit=1001", nil, "query.limit", domain.CodeOutOfRange, "from 1 to 1000"},
		{"page too large for a whole number", http.MethodGet, "/v1/users?limit=99999999999999999999", nil, "query.limit", domain.CodeOutOfRange, "from 1 to 1000"},
		{"deliveries page over its maximum", http.MethodGet, w.ids.Replace("/v1/webhooks/{webhook}/deliveries?limit=201"), nil, "query.limit", domain.CodeOutOfRange, "from 1 to 200"},
		{"template version zero", http.MethodGet, "/v1/clustertemplates/web/resolved?version=0", nil, "query.version", domain.CodeOutOfRange, "of at least 1"},
		{"a bare boolean", http.MethodDelete, cluster + "?dryRun", nil, "query.dryRun", domain.CodeInvalid, "give true or false"},
		{"a boolean that is not one", http.MethodDelete, cluster + "?force=yes", nil, "query.force", domain.CodeInvalid, "not true or false"},
		{"a parameter given twice", http.MethodGet, "/v1/clusters?status=ACTIVE&status=PENDING", nil, "query.status", domain.CodeDuplicate, "given 2 times"},
		{"a time that is not one", http.MethodGet, "/v1/usage?from=yesterday", nil, "query.from", domain.CodeInvalid, "RFC 3339"},
		{"usage over 366 days", http.MethodGet, "/v1/usage?step=day&from=0001-01-01T00:00:00Z&to=9999-12-31T23:59:59Z", nil, "query.from", domain.CodeInvalid, "at most 366"},
		{"usage of 367 days", http.MethodGet, "/v1/usage?step=day&from=2025-01-01T00:00:00Z&to=2026-01-03T00:00:00Z", nil, "query.from", domain.CodeInvalid, "at most 366"},
		{"a required parameter left out", http.MethodGet, "/v1/tenant/export", nil, "query.recipient", domain.CodeRequired, "is required"},
		{"a filter too long", http.MethodGet, cluster + "/jobs/" + w.job + "/tasks?node=" + strings.Repeat("n", 513), nil, "query.node", domain.CodeOutOfRange, "longer than 512"},
	} {
		t.Run(c.name, func(t *testing.T) {
			status, body := w.b.do(t, w.b.acmeKey, c.method, c.path, c.body)
			p := requireRefused(t, status, body, CodeInvalidParameter, c.field)
			require.Equal(t, c.code, p["code"])
			require.Contains(t, p["message"], c.says)
		})
	}
	require.Equal(t, before, w.snapshot(t), "no refused request changed anything")

	// What the rules let through still works: the parameters the Go
	// client, the CLI and the dashboard send.
	for _, path := range []string{"/v1/clusters?status=ACTIVE&limit=1000&all=true&template=web&owner=acme-admin",
		cluster + "/nodes?status=PLANNED&deleted=true&limit=1000", cluster + "/events?limit=1000",
		cluster + "/jobs/" + w.job + "/tasks?status=READY&limit=500&stage=1&rollback=false&node=n&service=s&action=install",
		cluster + "/jobs/" + w.job + "/graph?rollback=true", "/v1/usage?groupBy=user&step=hour&from=2026-11-20T00:00:00Z&to=2026-11-21T00:00:00Z",
		"/v1/catalog?format=yaml&limit=500", "/v1/services?limit=200", "/v1/audit?limit=1000&tenant=acme", "/v1/clusters?limit="} {
		status, body := w.b.do(t, w.b.acmeKey, http.MethodGet, path, nil)
		require.Equal(t, http.StatusOK, status, "%s: %v", path, body)
	}
	status, body := w.b.do(t, w.b.acmeKey, http.MethodPost, "/v1/clusters?dryRun=true", map[string]any{"name": "dry", "template": "web", "size": 3})
	require.Equal(t, http.StatusOK, status, "%v", body)
}

// TestRefusedQueryOfAnotherTenantsClusterIs404 keeps the cluster routes'
// rule: ids the caller may not see answer 404 before any 400.
func TestRefusedQueryOfAnotherTenantsClusterIs404(t *testing.T) {
	t.Parallel()
	w := setupWorld(t)
	for _, path := range []string{"/v1/clusters/" + w.cluster + "?bogus=1", "/v1/clusters/" + w.cluster + "/nodes?status=GONE",
		"/v1/clusters/nosuch/jobs?limit=0"} {
		status, body := w.b.do(t, w.b.otherKey, http.MethodGet, path, nil)
		require.Equal(t, http.StatusNotFound, status, "%s: %v", path, body)
	}
}

// TestRequiredBodyFieldsAreRequired: managed-by with {} was read as "hand
// the cluster back to people" and cleared managedBy.
func TestRequiredBodyFieldsAreRequired(t *testing.T) {
	t.Parallel()
	w := setupWorld(t)
	path := "/v1/clusters/" + w.cluster + "/managed-by"
	status, body := w.b.do(t, w.b.acmeKey, http.MethodPost, path, map[string]any{"managedBy": "apply"})
	require.Equal(t, http.StatusOK, status, "%v", body)
	require.Equal(t, "apply", w.b.clusterOf(t, w.b.acmeKey, w.cluster)["managedBy"])
	for _, bad := range []string{`{}`, `{"managedBy":null}`} {
		status, body = w.b.do(t, w.b.acmeKey, http.MethodPost, path, bad)
		p := requireRefused(t, status, body, CodeInvalidBody, "managedBy")
		require.Equal(t, domain.CodeRequired, p["code"])
		require.Equal(t, "apply", w.b.clusterOf(t, w.b.acmeKey, w.cluster)["managedBy"], "%s changed nothing", bad)
	}
	// A missing field and an unknown one are reported together.
	status, body = w.b.do(t, w.b.acmeKey, http.MethodPost, path, `{"managedby2":"x"}`)
	require.Equal(t, http.StatusBadRequest, status)
	_, e := errorOf(t, body)
	require.Len(t, e["details"], 2, "%v", e)
	// Keys match as the decoder matches them, case aside; an explicit ""
	// is the documented way to hand the cluster back.
	status, body = w.b.do(t, w.b.acmeKey, http.MethodPost, path, `{"ManagedBy":"apply"}`)
	require.Equal(t, http.StatusOK, status, "%v", body)
	status, body = w.b.do(t, w.b.acmeKey, http.MethodPost, path, `{"managedBy":""}`)
	require.Equal(t, http.StatusOK, status, "%v", body)
	require.Empty(t, w.b.clusterOf(t, w.b.acmeKey, w.cluster)["managedBy"])
}

// requireMissing sends a body without any field and checks the 400 names
// exactly the route's required fields, each as required.
func requireMissing(t *testing.T, b *testBundle, key, method, pattern, path string) {
	t.Helper()
	required := rulesFor(route{Method: method, Path: pattern}).bodyRequired
	require.NotEmpty(t, required, "%s %s has required body fields", method, pattern)
	status, body := b.do(t, key, method, path, `{}`)
	require.Equal(t, http.StatusBadRequest, status, "%s %s: %v", method, path, body)
	code, e := errorOf(t, body)
	require.Equal(t, CodeInvalidBody, code, "%s %s: %v", method, path, e)
	var named []string
	for _, d := range e["details"].([]any) {
		p := d.(map[string]any)
		require.Equal(t, domain.CodeRequired, p["code"], "%s %s: %v", method, path, e)
		named = append(named, p["field"].(string))
	}
	require.Equal(t, required, named, "%s %s", method, pattern)
}

// TestEveryRequiredBodyFieldIsChecked walks the route table: each route
// whose body schema lists required fields refuses a body without them with
// a 400 naming every one, and changes nothing.
func TestEveryRequiredBodyFieldIsChecked(t *testing.T) {
	t.Parallel()
	w := setupWorld(t)
	before := w.snapshot(t)
	// Routes whose precondition this server lacks answer before reading
	// the body; their own tests send them {} where they are served.
	elsewhere := map[string]int{
		"POST /v1/providers/{provider}/hosts": http.StatusConflict,       // TestHostsRefusals
		"POST /v1/tenant/import":              http.StatusNotImplemented, // TestTenantExportImportRoutes
	}
	walked := 0
	for _, rt := range w.b.api.routes() {
		if len(rulesFor(rt).bodyRequired) == 0 {
			continue
		}
		if want, ok := elsewhere[rt.Method+" "+rt.Path]; ok {
			status, body := w.b.do(t, w.keyFor(rt), rt.Method, w.path(rt), `{}`)
			require.Equal(t, want, status, "%s %s: %v", rt.Method, rt.Path, body)
			continue
		}
		requireMissing(t, w.b, w.keyFor(rt), rt.Method, rt.Path, w.path(rt))
		walked++
	}
	require.GreaterOrEqual(t, walked, 12, "managed-by, clusters, expand, services, lease, users, issuers, webhooks, sign-in, catalog")
	require.Equal(t, before, w.snapshot(t), "no refused request changed anything")
}

// TestDocumentedRulesAreTheHandlers checks that the document's enums and
// page sizes are what the handlers use, so the central check refuses
// exactly what a handler would misread.
func TestDocumentedRulesAreTheHandlers(t *testing.T) {
	t.Parallel()
	rules, err := documentedRules()
	require.NoError(t, err)
	enum := func(op, param string) []string {
		r, ok := rules[op].query[param]
		require.True(t, ok, "%s documents %s", op, param)
		return r.enum
	}
	strs := func(vs ...any) []string {
		var out []string
		for _, v := range vs {
			out = append(out, fmt.Sprint(v))
		}
		return out
	}
	// The domain's statuses, in its order.
	var statuses []any
	for _, s := range []domain.ClusterStatus{domain.ClusterPending, domain.ClusterActive, domain.ClusterInconsistent,
		domain.ClusterFailed, domain.ClusterDeleting, domain.ClusterTerminated} {
		statuses = append(statuses, s)
	}
	require.Equal(t, strs(statuses...), enum("GET /v1/clusters", "status"))
	statuses = statuses[:0]
	for _, s := range nodeStatuses {
		statuses = append(statuses, s)
	}
	require.Equal(t, strs(statuses...), enum("GET /v1/clusters/{cluster}/nodes", "status"))
	statuses = statuses[:0]
	for _, s := range taskStatuses {
		statuses = append(statuses, s)
	}
	require.Equal(t, strs(statuses...), enum("GET /v1/clusters/{cluster}/jobs/{job}/tasks", "status"))

	pagings := map[string]Paging{
		"GET /v1/tenants": listPaging, "GET /v1/users": listPaging, "GET /v1/users/{user}/keys": listPaging,
		"GET /v1/issuers": listPaging, "GET /v1/clusters": listPaging, "GET /v1/clusters/{cluster}/jobs": listPaging,
		"GET /v1/audit": listPaging, "GET /v1/providers/{provider}/hosts": listPaging, "GET /v1/clusters/{cluster}/revisions": listPaging,
		"GET /v1/{kind}": entityPaging, "GET /v1/{kind}/{name}/versions": entityPaging,
		"GET /v1/clusters/{cluster}/nodes": nodePaging, "GET /v1/clusters/{cluster}/jobs/{job}/tasks": taskPaging,
		"GET /v1/catalog": catalogPaging, "GET /v1/clusters/{cluster}/events": eventPaging,
		"GET /v1/webhooks/{webhook}/deliveries": deliveryPaging,
	}
	var paged []string
	for op, r := range rules {
		if _, ok := r.query["limit"]; ok {
			paged = append(paged, op)
		}
	}
	slices.Sort(paged)
	require.Equal(t, sortedKeys(func() map[string]bool {
		m := map[string]bool{}
		for op := range pagings {
			m[op] = true
		}
		return m
	}()), paged, "every paged route is in this table")
	for op, pg := range pagings {
		limit := rules[op].query["limit"]
		require.Equal(t, "integer", limit.typ, op)
		require.NotNil(t, limit.min, op)
		require.NotNil(t, limit.max, op)
		require.Equal(t, 1.0, *limit.min, op)
		require.Equal(t, float64(pg.Max), *limit.max, "%s: the documented maximum is the handler's", op)
	}
}

// TestUsageRangeIsNotClampedOrWrapped: a range longer than a Duration holds
// was counted as a negative number of buckets and answered.
func TestUsageRangeIsNotClampedOrWrapped(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)
	for _, q := range []string{"step=day&from=0001-01-01T00:00:00Z&to=9999-12-31T23:59:59Z",
		"step=hour&from=0001-01-01T00:00:00Z", "from=1700-01-01T00:00:00Z&to=2026-01-01T00:00:00Z"} {
		r, err := http.NewRequest(http.MethodGet, "/v1/usage?"+q, nil)
		require.NoError(t, err)
		_, err = usageQuery(r, now)
		require.Error(t, err, q)
		require.Equal(t, "query.from", describe(err).Details[0].Field, q)
	}
	r, err := http.NewRequest(http.MethodGet, "/v1/usage?"+url.Values{"from": {"2026-11-01T00:00:00Z"}}.Encode(), nil)
	require.NoError(t, err)
	q, err := usageQuery(r, now)
	require.NoError(t, err)
	require.Equal(t, time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), q.From, "a given from is kept")
}
