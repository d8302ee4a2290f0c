package api

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/store/boltstore"
)

// getRaw GETs path and returns the status, the body's size and the body.
func (b *testBundle) getRaw(t testing.TB, key, path string) (int, int, map[string]any) {
	t.Helper()
	resp := b.raw(t, key, http.MethodGet, path, nil)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var out map[string]any
	require.NoError(t, json.Unmarshal(raw, &out), "%s", raw)
	return resp.StatusCode, len(raw), out
}

// requireBadParam checks a 400 envelope names field.
func requireBadParam(t testing.TB, status int, body map[string]any, field string) {
	t.Helper()
	require.Equal(t, http.StatusBadRequest, status, "%v", body)
	code, e := errorOf(t, body)
	require.Equal(t, CodeInvalidParameter, code)
	require.Equal(t, field, e["details"].([]any)[0].(map[string]any)["field"], "%v", e)
}

func TestCursorsAreSignedAndBoundToTenantAndCollection(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, k := range []string{b.acmeKey, b.otherKey} {
		for _, u := range []string{"ann", "bob", "cat"} {
			status, body := b.do(t, k, http.MethodPost, "/v1/users", map[string]any{"name": u, "role": "user"})
			require.Equal(t, http.StatusCreated, status, "%v", body)
		}
	}
	status, page := b.do(t, b.acmeKey, http.MethodGet, "/v1/users?limit=2", nil)
	require.Equal(t, http.StatusOK, status, "%v", page)
	require.Len(t, page["items"], 2)
	cursor := page["nextCursor"].(string)
	require.NotEmpty(t, cursor)

	// The cursor works where it was made, and pages on.
	status, next := b.do(t, b.acmeKey, http.MethodGet, "/v1/users?limit=2&cursor="+url.QueryEscape(cursor), nil)
	require.Equal(t, http.StatusOK, status, "%v", next)
	require.NotEqual(t, page["items"].([]any)[0], next["items"].([]any)[0])

	raw, err := base64.RawURLEncoding.DecodeString(cursor)
	require.NoError(t, err)
	flipped := append([]byte(nil), raw...)
	flipped[0] ^= 1
	forged := base64.RawURLEncoding.EncodeToString(flipped)
	cases := []struct {
		name, key, path, field string
	}{
		{"another tenant", b.otherKey, "/v1/users?limit=2&cursor=" + url.QueryEscape(cursor), "query.cursor"},
		{"another collection", b.acmeKey, "/v1/users/ann/keys?limit=2&cursor=" + url.QueryEscape(cursor), "query.cursor"},
		{"another filter", b.acmeKey, "/v1/clusters?all=true&cursor=" + url.QueryEscape(cursor), "query.cursor"},
		{"changed by hand", b.acmeKey, "/v1/users?limit=2&cursor=" + forged, "query.cursor"},
		{"a store cursor without the signature", b.acmeKey, "/v1/users?cursor=" + base64.RawURLEncoding.EncodeToString(raw[:len(raw)-cursorMACBytes]), "query.cursor"},
		{"not base64", b.acmeKey, "/v1/users?cursor=%25%25", "query.cursor"},
		{"huge", b.acmeKey, "/v1/users?cursor=" + strings.Repeat("A", maxCursorChars+1), "query.cursor"},
		{"negative limit", b.acmeKey, "/v1/users?limit=-1", "query.limit"},
		{"zero limit", b.acmeKey, "/v1/users?limit=0", "query.limit"},
		{"huge limit", b.acmeKey, "/v1/users?limit=1000000", "query.limit"},
		{"limit not a number", b.acmeKey, "/v1/users?limit=ten", "query.limit"},
		{"entity limit over its max", b.acmeKey, "/v1/services?limit=201", "query.limit"},
	}
	for _, c := range cases {
		status, body := b.do(t, c.key, http.MethodGet, c.path, nil)
		requireBadParam(t, status, body, c.field)
		require.Contains(t, body["error"].(map[string]any)["message"], c.field, c.name)
	}
}

func TestAnswersOverTheCeilingAreRefused(t *testing.T) {
	t.Parallel()
	rec := httptest.NewRecorder()
	rec.Header().Set("X-Request-Id", "r1")
	writeJSON(rec, http.StatusOK, map[string]string{"big": strings.Repeat("x", MaxAnswerBytes)})
	require.Equal(t, http.StatusUnprocessableEntity, rec.Code)
	var body map[string]any
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &body))
	code, e := errorOf(t, body)
	require.Equal(t, CodeAnswerTooLarge, code)
	require.Contains(t, e["message"], "?limit=")

	rec = httptest.NewRecorder()
	writeJSON(rec, http.StatusOK, map[string]string{"small": "x"})
	require.Equal(t, http.StatusOK, rec.Code)
}

// TestTenThousandNodeClusterAnswersAreBounded creates a 10,000-node cluster
// through the API and reads every view of it: each answer is under 1 MB by
// default and the maximum pages stay under the ceiling.
func TestTenThousandNodeClusterAnswersAreBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("creates a 10,000-node cluster")
	}
	t.Parallel()
	db, err := boltstore.Open(filepath.Join(t.TempDir(), "heddle.db"), boltstore.Options{NoSync: true})
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	b, key := bigTenant(t, db)

	const oneMB = 1 << 20
	req := map[string]any{"name": "huge", "template": "big", "size": 10000}
	resp := b.raw(t, key, http.MethodPost, "/v1/clusters?dryRun=true", req)
	dry, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", dry[:min(len(dry), 500)])
	require.Less(t, len(dry), oneMB, "the dry run answers a bounded preview")
	require.Contains(t, string(dry), `"omitted"`)

	status, body := b.do(t, key, http.MethodPost, "/v1/clusters", req)
	require.Equal(t, http.StatusAccepted, status, "%v", body)
	id := body["cluster"].(map[string]any)["id"].(string)
	job := body["job"].(map[string]any)["id"].(string)
	require.Equal(t, "PENDING", body["job"].(map[string]any)["status"], "a submission this large is accepted, then written in the background")
	require.Eventually(t, func() bool {
		_, jv := b.do(t, key, http.MethodGet, "/v1/clusters/"+id+"/jobs/"+job, nil)
		return jv["status"] == "RUNNING"
	}, 10*time.Minute, 50*time.Millisecond, "the background plans, writes and starts the job (minutes under -race on a loaded machine; a liveness bound, not a speed one)")

	status, size, view := b.getRaw(t, key, "/v1/clusters/"+id)
	require.Equal(t, http.StatusOK, status)
	require.Less(t, size, oneMB)
	require.Len(t, view["nodes"], 100)
	require.EqualValues(t, 10000-100, view["nodesOmitted"])
	require.EqualValues(t, 10000, view["nodeStatus"].(map[string]any)["PLANNED"])
	total := 0.0
	for _, g := range view["layout"].([]any) {
		total += g.(map[string]any)["count"].(float64)
	}
	require.EqualValues(t, 10000, total)

	status, size, jv := b.getRaw(t, key, "/v1/clusters/"+id+"/jobs/"+job)
	require.Equal(t, http.StatusOK, status)
	require.Less(t, size, oneMB)
	require.Len(t, jv["tasks"], 100)
	require.Greater(t, jv["tasksOmitted"].(float64), 10000.0)

	// Every node, in pages of the most the route allows, each under the
	// ceiling, each node once.
	seen := map[string]bool{}
	cursor := ""
	for {
		path := "/v1/clusters/" + id + "/nodes?limit=1000"
		if cursor != "" {
			path += "&cursor=" + url.QueryEscape(cursor)
		}
		status, size, page := b.getRaw(t, key, path)
		require.Equal(t, http.StatusOK, status, "%v", page)
		require.Less(t, size, MaxAnswerBytes)
		for _, n := range page["items"].([]any) {
			nid := n.(map[string]any)["id"].(string)
			require.False(t, seen[nid])
			seen[nid] = true
		}
		next, _ := page["nextCursor"].(string)
		if next == "" {
			break
		}
		cursor = next
	}
	require.Len(t, seen, 10000)

	status, size, tasks := b.getRaw(t, key, "/v1/clusters/"+id+"/jobs/"+job+"/tasks?limit=500")
	require.Equal(t, http.StatusOK, status)
	require.Less(t, size, MaxAnswerBytes)
	require.Len(t, tasks["items"], 500)
	status, size, tasks = b.getRaw(t, key, "/v1/clusters/"+id+"/jobs/"+job+"/tasks?status=READY")
	require.Equal(t, http.StatusOK, status)
	require.Less(t, size, oneMB)
	for _, tk := range tasks["items"].([]any) {
		require.Equal(t, "READY", tk.(map[string]any)["status"])
	}
	first := tasks["items"].([]any)[0].(map[string]any)
	status, _, whole := b.getRaw(t, key, fmt.Sprintf("/v1/clusters/%s/jobs/%s/tasks/%s", id, job, url.PathEscape(first["id"].(string))))
	require.Equal(t, http.StatusOK, status, "%v", whole)
	require.Equal(t, first["id"], whole["id"])
}

func TestCursorKeyIsSharedThroughTheStore(t *testing.T) {
	t.Parallel()
	db, err := boltstore.Open(t.TempDir()+"/heddle.db", boltstore.Options{NoSync: true})
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	first, err := LoadCursorKey(t.Context(), db)
	require.NoError(t, err)
	require.Len(t, first, 32)
	again, err := LoadCursorKey(t.Context(), db)
	require.NoError(t, err)
	require.Equal(t, first, again, "a second instance signs with the same key")

	// A cursor one instance made opens on another.
	a, b := New(Config{CursorKey: first}), New(Config{CursorKey: again})
	inner, err := b.cursors.open("acme", "/v1/users?", a.cursors.seal("acme", "/v1/users?", "page-2"))
	require.NoError(t, err)
	require.Equal(t, "page-2", inner)
}
