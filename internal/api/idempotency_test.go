package api

import (
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/idempotency"
	"github.com/heddle-io/heddle/internal/store"
	"github.com/heddle-io/heddle/internal/store/boltstore"
)

// idemBackends are the stores the idempotency tests run on: the embedded
// one always, DynamoDB Local when HEDDLE_DYNAMODB_ENDPOINT is set.
func idemBackends() map[string]func(t *testing.T) store.Store {
	return map[string]func(t *testing.T) store.Store{
		"bolt": func(t *testing.T) store.Store {
			db, err := boltstore.Open(filepath.Join(t.TempDir(), "heddle.db"), boltstore.Options{NoSync: true})
			require.NoError(t, err)
			t.Cleanup(func() { _ = db.Close() })
			return db
		},
		"dynamodb": func(t *testing.T) store.Store { return dynamoTable(t) },
	}
}

// idemSetup serves the API over db with tenants acme and globex, each
// with the example catalog.
func idemSetup(t *testing.T, db store.Store) *testBundle {
	t.Helper()
	b := serveBundle(t, db, nil)
	b.acmeKey = b.createTenant(t, "acme")
	b.otherKey = b.createTenant(t, "globex")
	b.importExample(t, b.acmeKey)
	b.importExample(t, b.otherKey)
	return b
}

// eachBackend runs fn on a fresh bundle per backend, in parallel.
func eachBackend(t *testing.T, fn func(t *testing.T, b *testBundle, db store.Store)) {
	t.Parallel()
	for name, open := range idemBackends() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			db := open(t)
			fn(t, idemSetup(t, db), db)
		})
	}
}

var shopRequest = map[string]any{"name": "shop", "template": "web", "size": 3}

// answer is one response, read whole.
type answer struct {
	status int
	header http.Header
	body   []byte
}

func (a answer) json(t *testing.T) map[string]any {
	t.Helper()
	var out map[string]any
	require.NoError(t, json.Unmarshal(a.body, &out), "%s", a.body)
	return out
}

func (b *testBundle) send(t *testing.T, apiKey, method, path string, body any, idemKey string) answer {
	t.Helper()
	var headers []string
	if idemKey != "" {
		headers = []string{idempotency.Header, idemKey}
	}
	resp := b.raw(t, apiKey, method, path, body, headers...)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return answer{status: resp.StatusCode, header: resp.Header, body: raw}
}

// clusterCount is how many clusters the tenant of apiKey has.
func (b *testBundle) clusterCount(t *testing.T, apiKey string) int {
	t.Helper()
	status, body := b.do(t, apiKey, http.MethodGet, "/v1/clusters?all=true", nil)
	require.Equal(t, http.StatusOK, status, "%v", body)
	return len(body["items"].([]any))
}

func TestIdempotentCreateReplaysItsAnswer(t *testing.T) {
	eachBackend(t, func(t *testing.T, b *testBundle, _ store.Store) {
		first := b.send(t, b.acmeKey, http.MethodPost, "/v1/clusters", shopRequest, "create-shop-1")
		require.Equal(t, http.StatusAccepted, first.status, "%s", first.body)
		require.Empty(t, first.header.Get(idempotency.ReplayedHeader))

		again := b.send(t, b.acmeKey, http.MethodPost, "/v1/clusters", shopRequest, "create-shop-1")
		require.Equal(t, http.StatusAccepted, again.status, "%s", again.body)
		require.Equal(t, "true", again.header.Get(idempotency.ReplayedHeader))
		require.Equal(t, first.header.Get("Location"), again.header.Get("Location"))
		require.Equal(t, string(first.body), string(again.body), "the same answer, byte for byte")
		require.Equal(t, 1, b.clusterCount(t, b.acmeKey))

		// The quoted form (RFC 8941 sf-string) names the same key.
		quoted := b.send(t, b.acmeKey, http.MethodPost, "/v1/clusters", shopRequest, `"create-shop-1"`)
		require.Equal(t, "true", quoted.header.Get(idempotency.ReplayedHeader))

		// Without a key, the same request is a new one: not replayed, and
		// refused because the first took the name.
		plain := b.send(t, b.acmeKey, http.MethodPost, "/v1/clusters", shopRequest, "")
		require.Equal(t, http.StatusConflict, plain.status, "%s", plain.body)
		require.Empty(t, plain.header.Get(idempotency.ReplayedHeader))
		code, _ := errorOf(t, plain.json(t))
		require.Equal(t, CodeNameTaken, code)
		require.Equal(t, 1, b.clusterCount(t, b.acmeKey))
	})
}

func TestIdempotentCreateAfterACrashBetweenCommitAndAnswer(t *testing.T) {
	eachBackend(t, func(t *testing.T, b *testBundle, db store.Store) {
		// The process dies once the job is committed and before the key
		// is finished: the client sees a broken connection.
		crash := func(*http.Request) { panic(http.ErrAbortHandler) }
		b.api.idemAfterAnswer.Store(&crash)
		js, err := json.Marshal(shopRequest)
		require.NoError(t, err)
		req, err := http.NewRequest(http.MethodPost, b.srv.URL+"/v1/clusters", strings.NewReader(string(js)))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+b.acmeKey)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(idempotency.Header, "crash-1")
		if resp, err := testHTTP.Do(req); err == nil {
			// A short answer may have reached the client before the
			// connection dropped; either way it is not one to trust.
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		b.api.idemAfterAnswer.Store(nil)
		require.Equal(t, 1, b.clusterCount(t, b.acmeKey), "the create committed")
		item, err := db.Get(t.Context(), idempotency.ItemKey("acme", "acme-admin", "crash-1"))
		require.NoError(t, err)
		require.Equal(t, idempotency.StatusCommitted, item.Status, "recorded with the job, never finished")

		retry := b.send(t, b.acmeKey, http.MethodPost, "/v1/clusters", shopRequest, "crash-1")
		require.Equal(t, http.StatusAccepted, retry.status, "%s", retry.body)
		require.Equal(t, "true", retry.header.Get(idempotency.ReplayedHeader))
		res := retry.json(t)
		clusterID := res["cluster"].(map[string]any)["id"].(string)
		jobID := res["job"].(map[string]any)["id"].(string)
		require.Equal(t, "/v1/clusters/"+clusterID+"/jobs/"+jobID, retry.header.Get("Location"))
		require.Equal(t, "shop", res["cluster"].(map[string]any)["name"])
		require.Equal(t, 1, b.clusterCount(t, b.acmeKey), "the retry made no second cluster")
	})
}

func TestIdempotentCreateAfterACrashBeforeCommit(t *testing.T) {
	eachBackend(t, func(t *testing.T, b *testBundle, db store.Store) {
		// An attempt claimed the key and died before it changed anything.
		js, err := json.Marshal(shopRequest)
		require.NoError(t, err)
		claim, replay, err := b.api.idem.Begin(t.Context(), idempotency.Request{Tenant: "acme", Caller: "acme-admin", Key: "early-crash",
			Method: http.MethodPost, Target: "/v1/clusters", Fingerprint: idempotency.Fingerprint(http.MethodPost, "/v1/clusters", js)})
		require.NoError(t, err)
		require.Nil(t, replay)
		require.NotNil(t, claim)

		busy := b.send(t, b.acmeKey, http.MethodPost, "/v1/clusters", shopRequest, "early-crash")
		require.Equal(t, http.StatusConflict, busy.status, "%s", busy.body)
		code, _ := errorOf(t, busy.json(t))
		require.Equal(t, CodeIdempotencyInFlight, code)
		require.NotEmpty(t, busy.header.Get("Retry-After"))
		require.Equal(t, 0, b.clusterCount(t, b.acmeKey))

		// Past the in-flight window the claim is taken over.
		b.clock.Advance(idempotency.DefaultInFlight + time.Second)
		took := b.send(t, b.acmeKey, http.MethodPost, "/v1/clusters", shopRequest, "early-crash")
		require.Equal(t, http.StatusAccepted, took.status, "%s", took.body)
		require.Empty(t, took.header.Get(idempotency.ReplayedHeader))
		require.Equal(t, 1, b.clusterCount(t, b.acmeKey))

		// The dead attempt cannot commit any more: its claim was taken.
		_, err = db.Write(t.Context(), claim.CommitOp("c1", "j1"))
		require.ErrorIs(t, err, store.ErrConditionFailed)
	})
}

func TestIdempotencyKeyWithAnotherRequestIsRefused(t *testing.T) {
	eachBackend(t, func(t *testing.T, b *testBundle, _ store.Store) {
		first := b.send(t, b.acmeKey, http.MethodPost, "/v1/clusters", shopRequest, "k-1")
		require.Equal(t, http.StatusAccepted, first.status, "%s", first.body)
		for name, c := range map[string]struct {
			path string
			body any
		}{
			"another body":  {"/v1/clusters", map[string]any{"name": "shop2", "template": "web", "size": 3}},
			"another query": {"/v1/clusters?dryRun=true", shopRequest},
			"another route": {"/v1/catalog", "apiVersion: heddle/v1\n"},
		} {
			a := b.send(t, b.acmeKey, http.MethodPost, c.path, c.body, "k-1")
			require.Equal(t, http.StatusUnprocessableEntity, a.status, "%s: %s", name, a.body)
			code, e := errorOf(t, a.json(t))
			require.Equal(t, CodeIdempotencyKeyReused, code, name)
			require.Contains(t, e["message"], "POST /v1/clusters", name)
			require.Equal(t, "header.Idempotency-Key", e["details"].([]any)[0].(map[string]any)["field"], name)
		}
		require.Equal(t, 1, b.clusterCount(t, b.acmeKey))
	})
}

func TestIdempotentConcurrentAttemptsMakeOneCluster(t *testing.T) {
	eachBackend(t, func(t *testing.T, b *testBundle, _ store.Store) {
		const attempts = 6
		answers := make([]answer, attempts)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range attempts {
			wg.Go(func() {
				<-start
				answers[i] = b.send(t, b.acmeKey, http.MethodPost, "/v1/clusters", shopRequest, "together")
			})
		}
		close(start)
		wg.Wait()
		var fresh, replayed, inFlight int
		for _, a := range answers {
			switch {
			case a.status == http.StatusAccepted && a.header.Get(idempotency.ReplayedHeader) == "":
				fresh++
			case a.status == http.StatusAccepted:
				replayed++
			case a.status == http.StatusConflict:
				code, _ := errorOf(t, a.json(t))
				require.Equal(t, CodeIdempotencyInFlight, code)
				require.NotEmpty(t, a.header.Get("Retry-After"))
				inFlight++
			default:
				t.Fatalf("unexpected answer %d: %s", a.status, a.body)
			}
		}
		require.Equal(t, 1, fresh, "exactly one attempt ran (%d replayed, %d in flight)", replayed, inFlight)
		require.Equal(t, 1, b.clusterCount(t, b.acmeKey))
		// Once it ended, a retry replays it.
		again := b.send(t, b.acmeKey, http.MethodPost, "/v1/clusters", shopRequest, "together")
		require.Equal(t, "true", again.header.Get(idempotency.ReplayedHeader))
	})
}

func TestIdempotencyKeysExpireAfterADay(t *testing.T) {
	eachBackend(t, func(t *testing.T, b *testBundle, db store.Store) {
		first := b.send(t, b.acmeKey, http.MethodPost, "/v1/clusters", shopRequest, "daily")
		require.Equal(t, http.StatusAccepted, first.status, "%s", first.body)
		item, err := db.Get(t.Context(), idempotency.ItemKey("acme", "acme-admin", "daily"))
		require.NoError(t, err)
		require.Equal(t, b.clock.Now().Add(idempotency.DefaultTTL).Unix(), item.Counter(store.CounterExpires),
			"DynamoDB's time to live removes the item after a day")

		b.clock.Advance(idempotency.DefaultTTL + time.Second)
		// The key is free again: another request may use it.
		second := b.send(t, b.acmeKey, http.MethodPost, "/v1/clusters", map[string]any{"name": "shop2", "template": "web", "size": 3}, "daily")
		require.Equal(t, http.StatusAccepted, second.status, "%s", second.body)
		require.Empty(t, second.header.Get(idempotency.ReplayedHeader))
		require.Equal(t, 2, b.clusterCount(t, b.acmeKey))

		// The sweep (the embedded store's stand-in for a time to live)
		// deletes expired keys and only those.
		old := b.send(t, b.acmeKey, http.MethodPost, "/v1/catalog", "apiVersion: heddle/v1\n", "sweep-me")
		require.Equal(t, http.StatusOK, old.status, "%s", old.body)
		b.clock.Advance(idempotency.DefaultTTL + time.Second)
		n, err := b.api.idem.Sweep(t.Context())
		require.NoError(t, err)
		require.Equal(t, 2, n, "daily (second use) and sweep-me")
		_, err = db.Get(t.Context(), idempotency.ItemKey("acme", "acme-admin", "sweep-me"))
		require.ErrorIs(t, err, store.ErrNotFound)
	})
}

func TestIdempotencyKeysAreTheTenantsOwn(t *testing.T) {
	eachBackend(t, func(t *testing.T, b *testBundle, _ store.Store) {
		first := b.send(t, b.acmeKey, http.MethodPost, "/v1/clusters", shopRequest, "shared-key")
		require.Equal(t, http.StatusAccepted, first.status, "%s", first.body)
		// Tenant globex sends the same key with the same request: it is
		// globex's own first request, not a replay of acme's answer.
		other := b.send(t, b.otherKey, http.MethodPost, "/v1/clusters", shopRequest, "shared-key")
		require.Equal(t, http.StatusAccepted, other.status, "%s", other.body)
		require.Empty(t, other.header.Get(idempotency.ReplayedHeader))
		require.NotEqual(t, first.header.Get("Location"), other.header.Get("Location"))
		require.Equal(t, 1, b.clusterCount(t, b.acmeKey))
		require.Equal(t, 1, b.clusterCount(t, b.otherKey))
		// And with another body, globex is not told what acme sent.
		another := b.send(t, b.otherKey, http.MethodPost, "/v1/clusters", map[string]any{"name": "x", "template": "web", "size": 3}, "shared-key-2")
		require.Equal(t, http.StatusAccepted, another.status, "%s", another.body)
	})
}

func TestIdempotencyKeyOfAFailedRequestIsReleased(t *testing.T) {
	eachBackend(t, func(t *testing.T, b *testBundle, _ store.Store) {
		noLayout := map[string]any{"name": "tiny", "template": "web", "size": 1}
		for range 2 {
			a := b.send(t, b.acmeKey, http.MethodPost, "/v1/clusters", noLayout, "fails")
			require.Equal(t, http.StatusUnprocessableEntity, a.status, "%s", a.body)
			require.Empty(t, a.header.Get(idempotency.ReplayedHeader), "an error changed nothing and is not kept")
		}
		// Released: the key may now carry a request that succeeds.
		ok := b.send(t, b.acmeKey, http.MethodPost, "/v1/clusters", shopRequest, "fails")
		require.Equal(t, http.StatusAccepted, ok.status, "%s", ok.body)
	})
}

func TestIdempotentCatalogImportReplays(t *testing.T) {
	eachBackend(t, func(t *testing.T, b *testBundle, _ store.Store) {
		doc := "apiVersion: heddle/v1\nservices:\n  - {name: extra}\n"
		first := b.send(t, b.acmeKey, http.MethodPost, "/v1/catalog", doc, "import-1")
		require.Equal(t, http.StatusOK, first.status, "%s", first.body)
		again := b.send(t, b.acmeKey, http.MethodPost, "/v1/catalog", doc, "import-1")
		require.Equal(t, http.StatusOK, again.status, "%s", again.body)
		require.Equal(t, "true", again.header.Get(idempotency.ReplayedHeader))
		require.Equal(t, string(first.body), string(again.body))
	})
}

// crashOnce sends one request whose process "dies" after the change
// committed and before its key is finished (the answer is lost).
func (b *testBundle) crashOnce(t *testing.T, apiKey, method, path string, body any, idemKey string) {
	t.Helper()
	crash := func(*http.Request) { panic(http.ErrAbortHandler) }
	b.api.idemAfterAnswer.Store(&crash)
	defer b.api.idemAfterAnswer.Store(nil)
	js, err := json.Marshal(body)
	require.NoError(t, err)
	req, err := http.NewRequest(method, b.srv.URL+path, strings.NewReader(string(js)))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+apiKey)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(idempotency.Header, idemKey)
	if resp, err := testHTTP.Do(req); err == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}

func TestIdempotentLeaseExtensionAfterACrash(t *testing.T) {
	eachBackend(t, func(t *testing.T, b *testBundle, db store.Store) {
		created := b.send(t, b.acmeKey, http.MethodPost, "/v1/clusters", shopRequest, "")
		require.Equal(t, http.StatusAccepted, created.status, "%s", created.body)
		id := created.json(t)["cluster"].(map[string]any)["id"].(string)
		before, err := time.Parse(time.RFC3339Nano, b.clusterOf(t, b.acmeKey, id)["expiresAt"].(string))
		require.NoError(t, err)

		b.crashOnce(t, b.acmeKey, http.MethodPost, "/v1/clusters/"+id+"/lease", map[string]any{"by": "1h"}, "lease-1")
		item, err := db.Get(t.Context(), idempotency.ItemKey("acme", "acme-admin", "lease-1"))
		require.NoError(t, err)
		require.Equal(t, idempotency.StatusCommitted, item.Status, "recorded in the cluster's write")

		retry := b.send(t, b.acmeKey, http.MethodPost, "/v1/clusters/"+id+"/lease", map[string]any{"by": "1h"}, "lease-1")
		require.Equal(t, http.StatusOK, retry.status, "%s", retry.body)
		require.Equal(t, "true", retry.header.Get(idempotency.ReplayedHeader))
		after, err := time.Parse(time.RFC3339Nano, retry.json(t)["expiresAt"].(string))
		require.NoError(t, err)
		require.Equal(t, before.Add(time.Hour), after, "extended once, not twice")
		now, err := time.Parse(time.RFC3339Nano, b.clusterOf(t, b.acmeKey, id)["expiresAt"].(string))
		require.NoError(t, err)
		require.Equal(t, after, now)
	})
}

func TestBadIdempotencyKeyIsRefused(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.importExample(t, b.acmeKey)
	for name, key := range map[string]string{
		"empty quotes": `""`,
		"space inside": "two words",
		"too long":     strings.Repeat("k", idempotency.MaxKeyLength+1),
		"not ASCII":    "clé",
		"open quote":   `"abc`,
		"bad escape":   `"a\b"`,
	} {
		resp := b.raw(t, b.acmeKey, http.MethodPost, "/v1/clusters", shopRequest, idempotency.Header, key)
		raw, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		if resp.StatusCode != http.StatusBadRequest {
			// net/http itself refuses some header values before sending.
			t.Fatalf("%s: %d %s", name, resp.StatusCode, raw)
		}
		var body map[string]any
		require.NoError(t, json.Unmarshal(raw, &body))
		code, e := errorOf(t, body)
		require.Equal(t, CodeInvalidHeader, code, name)
		require.Equal(t, "header.Idempotency-Key", e["details"].([]any)[0].(map[string]any)["field"], name)
		require.Contains(t, e["message"], "UUID", name)
	}
	// Sent twice.
	req, err := http.NewRequest(http.MethodPost, b.srv.URL+"/v1/clusters", strings.NewReader(`{"name":"shop","template":"web","size":3}`))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+b.acmeKey)
	req.Header.Add(idempotency.Header, "a")
	req.Header.Add(idempotency.Header, "b")
	resp, err := testHTTP.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	require.Equal(t, 0, b.clusterCount(t, b.acmeKey), "refused requests created nothing")
}

// TestIdempotentPathMatchesTheRouteTable: the client sends keys on exactly
// the routes that honour them.
func TestIdempotentPathMatchesTheRouteTable(t *testing.T) {
	t.Parallel()
	n := 0
	for _, rt := range (&Server{}).routes() {
		var segs []string
		for _, seg := range strings.Split(rt.Path, "/") {
			if strings.HasPrefix(seg, "{") {
				seg = "x1"
			}
			segs = append(segs, seg)
		}
		path := strings.Join(segs, "/")
		require.Equal(t, IdempotentRoute(rt.Method, rt.Path), IdempotentPath(rt.Method, path), "%s %s", rt.Method, path)
		if IdempotentRoute(rt.Method, rt.Path) {
			n++
		}
	}
	require.Len(t, idempotentRoutes, n, "every idempotent route is in the route table")
}
