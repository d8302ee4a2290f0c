package localserver

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/access"
	"github.com/heddle-io/heddle/internal/demotest"
	"github.com/heddle-io/heddle/internal/webhooks"
)

// receiver fails each delivery's first attempt (500), lets the second run
// past the sender's timeout, and accepts the third, recording what it got.
type receiver struct {
	mu       sync.Mutex
	attempts map[string]int
	accepted []received
	release  chan struct{}
}

type received struct {
	header http.Header
	body   []byte
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	id := r.Header.Get(webhooks.DeliveryHeader)
	rc.mu.Lock()
	rc.attempts[id]++
	n := rc.attempts[id]
	if n == 3 {
		rc.accepted = append(rc.accepted, received{header: r.Header.Clone(), body: body})
	}
	rc.mu.Unlock()
	switch n {
	case 1:
		http.Error(w, "not today", http.StatusInternalServerError)
	case 2:
		select { // longer than the sender waits
		case <-rc.release:
		case <-r.Context().Done():
		}
	default:
		w.WriteHeader(http.StatusNoContent)
	}
}

func setupWithWebhooks(t *testing.T, cfg webhooks.Config) *bundle {
	t.Helper()
	b := &bundle{t: t, super: access.NewKeySecret()}
	dir := t.TempDir()
	srv, err := Start(context.Background(), Config{
		DataDir: dir, Listen: "127.0.0.1:0", BootstrapKey: b.super, Version: "test",
		Logger: testLogger(), JanitorPeriod: 100 * time.Millisecond, Webhooks: cfg,
	})
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		demotest.KillProcessesUnder(dir)
	})
	b.srv = srv
	return b
}

func TestWebhooksRetryAFailingThenHangingEndpointUntilItAccepts(t *testing.T) {
	t.Parallel()
	rc := &receiver{attempts: map[string]int{}, release: make(chan struct{})}
	hook := httptest.NewServer(rc)
	t.Cleanup(func() { close(rc.release); hook.Close() })
	// The sender's timeout must outlast any answer of the receiver under
	// load: at 300 ms a loaded machine turned the first attempt's 500 into a
	// timeout (status 0). Only the second attempt, which hangs, should hit it.
	b := setupWithWebhooks(t, webhooks.Config{Backoff: 50 * time.Millisecond, MaxAttempts: 4, Policy: webhooks.Policy{Timeout: 3 * time.Second}})
	b.admin = demotest.TenantWithCatalog(t, b.srv.URL(), b.super, "acme", 10, "../../docs/examples/health-catalog.yaml")

	var e errorBody
	require.Equal(t, http.StatusUnprocessableEntity, b.call(b.admin, "POST", "/v1/webhooks",
		map[string]any{"url": "http://example.com/hook"}, &e), "plain http only to loopback")
	require.Equal(t, "url", e.Error.Details[0].Field)
	require.Equal(t, http.StatusUnprocessableEntity, b.call(b.admin, "POST", "/v1/webhooks",
		map[string]any{"url": "https://169.254.169.254/latest/meta-data"}, &e), "link-local refused")
	require.Contains(t, e.Error.Details[0].Message, "link-local")
	require.Equal(t, http.StatusUnprocessableEntity, b.call(b.admin, "POST", "/v1/webhooks",
		map[string]any{"url": hook.URL, "types": []string{"cluster.exploded"}}, &e))
	require.Equal(t, "types[0]", e.Error.Details[0].Field)

	var created struct {
		ID     string `json:"id"`
		Secret string `json:"secret"`
	}
	require.Equal(t, http.StatusCreated, b.call(b.admin, "POST", "/v1/webhooks",
		map[string]any{"url": hook.URL + "/heddle", "types": []string{"cluster.status"}}, &created))
	require.True(t, strings.HasPrefix(created.Secret, "whsec_"))
	var shown map[string]any
	require.Equal(t, http.StatusOK, b.call(b.admin, "GET", "/v1/webhooks/"+created.ID, nil, &shown))
	require.NotContains(t, shown, "secret", "the secret is shown once, at registration")

	var c result
	require.Equal(t, http.StatusAccepted, b.call(b.admin, "POST", "/v1/clusters",
		map[string]any{"name": "hooked", "template": "health", "size": 1}, &c))
	b.settleTo(b.admin, c.Cluster.ID, "ACTIVE")

	// Two cluster.status events (PENDING, then ACTIVE), each delivered on
	// its third attempt.
	var log struct {
		Items []webhooks.Delivery `json:"items"`
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		require.Equal(t, http.StatusOK, b.call(b.admin, "GET", "/v1/webhooks/"+created.ID+"/deliveries", nil, &log))
		done := 0
		for _, d := range log.Items {
			if d.Status == webhooks.Delivered {
				done++
			}
		}
		if len(log.Items) == 2 && done == 2 {
			break
		}
		require.True(t, time.Now().Before(deadline), "deliveries did not end: %+v", log.Items)
		time.Sleep(50 * time.Millisecond)
	}
	for _, d := range log.Items {
		require.Len(t, d.Attempts, 3, "%+v", d)
		require.Equal(t, http.StatusInternalServerError, d.Attempts[0].Status)
		require.Contains(t, d.Attempts[0].Answer, "not today")
		require.Zero(t, d.Attempts[1].Status)
		require.Contains(t, d.Attempts[1].Error, "Timeout", "cut at the sender's timeout")
		require.Less(t, d.Attempts[1].Duration, 10*time.Second)
		require.Equal(t, http.StatusNoContent, d.Attempts[2].Status)
	}
	require.Equal(t, "ACTIVE", log.Items[0].Event.Status, "newest first")

	// Exactly the documented signature: HMAC-SHA256 with the secret over
	// "<t>.<body>", hex, in Heddle-Signature: t=<t>,v1=<hex>.
	rc.mu.Lock()
	accepted := append([]received(nil), rc.accepted...)
	rc.mu.Unlock()
	require.Len(t, accepted, 2)
	for _, got := range accepted {
		header := got.header.Get(webhooks.SignatureHeader)
		ts, sig, ok := strings.Cut(strings.TrimPrefix(header, "t="), ",v1=")
		require.True(t, ok, header)
		m := hmac.New(sha256.New, []byte(created.Secret))
		m.Write([]byte(ts + "."))
		m.Write(got.body)
		require.Equal(t, hex.EncodeToString(m.Sum(nil)), sig)
		sec, err := strconv.ParseInt(ts, 10, 64)
		require.NoError(t, err)
		require.WithinDuration(t, time.Now(), time.Unix(sec, 0), time.Minute)
		require.NoError(t, webhooks.Verify(created.Secret, header, got.body, time.Now()))
		require.ErrorIs(t, webhooks.Verify(created.Secret, header, append(got.body, ' '), time.Now()), webhooks.ErrBadSignature, "a changed body is recognized")
		require.ErrorIs(t, webhooks.Verify("whsec_forged", header, got.body, time.Now()), webhooks.ErrBadSignature, "a forged signature is recognized")
		var body webhooks.Body
		require.NoError(t, json.Unmarshal(got.body, &body))
		require.Equal(t, got.header.Get(webhooks.DeliveryHeader), body.Delivery)
		require.Equal(t, "cluster.status", got.header.Get(webhooks.EventHeader))
		require.Equal(t, c.Cluster.ID, body.Event.Cluster)
	}

	require.Equal(t, http.StatusNoContent, b.call(b.admin, "DELETE", "/v1/webhooks/"+created.ID, nil, nil))
	require.Equal(t, http.StatusNotFound, b.call(b.admin, "GET", "/v1/webhooks/"+created.ID, nil, nil))
}

// TestAPreStartHookVetoesAJob: a job waits for the tenant's pre-start hook;
// a refusal fails it with the hook's answer and nothing runs, an
// acceptance lets it run.
func TestAPreStartHookVetoesAJob(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	frozen := true
	var calls []webhooks.Body
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var b webhooks.Body
		_ = json.Unmarshal(body, &b)
		mu.Lock()
		defer mu.Unlock()
		calls = append(calls, b)
		if frozen {
			http.Error(w, "change freeze until Monday", http.StatusForbidden)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(hook.Close)
	b := setupWithWebhooks(t, webhooks.Config{Policy: webhooks.Policy{Timeout: 2 * time.Second}})
	b.admin = demotest.TenantWithCatalog(t, b.srv.URL(), b.super, "acme", 10, "../../docs/examples/health-catalog.yaml")
	var created struct {
		ID string `json:"id"`
	}
	require.Equal(t, http.StatusCreated, b.call(b.admin, "POST", "/v1/webhooks",
		map[string]any{"url": hook.URL, "preStart": true}, &created))

	var c result
	require.Equal(t, http.StatusAccepted, b.call(b.admin, "POST", "/v1/clusters",
		map[string]any{"name": "frozen", "template": "health", "size": 1}, &c))
	v := b.settleTo(b.admin, c.Cluster.ID, "TERMINATED")
	require.Equal(t, "FAILED", v.Progress.Status)
	require.Zero(t, v.Progress.Done, "nothing ran")
	var job struct {
		StatusMessage string `json:"statusMessage"`
	}
	require.Equal(t, http.StatusOK, b.call(b.admin, "GET", "/v1/clusters/"+c.Cluster.ID+"/jobs/"+c.Job.ID, nil, &job))
	require.Contains(t, job.StatusMessage, "refused the job: 403: change freeze until Monday")
	require.Zero(t, b.srv.local.Nodes(), "no node was made")

	mu.Lock()
	frozen = false
	require.Len(t, calls, 1)
	require.Equal(t, webhooks.JobPreStart, calls[0].Event.Type)
	require.Equal(t, c.Job.ID, calls[0].Event.Job)
	mu.Unlock()

	require.Equal(t, http.StatusAccepted, b.call(b.admin, "POST", "/v1/clusters",
		map[string]any{"name": "thawed", "template": "health", "size": 1}, &c))
	b.settleTo(b.admin, c.Cluster.ID, "ACTIVE")

	var log struct {
		Items []webhooks.Delivery `json:"items"`
	}
	require.Equal(t, http.StatusOK, b.call(b.admin, "GET", "/v1/webhooks/"+created.ID+"/deliveries", nil, &log))
	// The pre-start calls of the two creates (the thawed one's
	// verification, due after its create, asks too, later).
	require.GreaterOrEqual(t, len(log.Items), 2)
	last := log.Items[len(log.Items)-1]
	require.Equal(t, webhooks.GaveUp, last.Status)
	require.Equal(t, http.StatusForbidden, last.Attempts[0].Status)
	require.Equal(t, webhooks.Delivered, log.Items[len(log.Items)-2].Status)
	// The create's success made a verification due; it asks the hook too.
	// Once it has ended the cluster is free to delete.
	b.healthAfter(c.Cluster.ID, "")
	require.Equal(t, http.StatusAccepted, b.call(b.admin, "DELETE", "/v1/clusters/"+c.Cluster.ID, nil, nil))
	require.Equal(t, "TERMINATED", b.settle(b.admin, c.Cluster.ID).Status)
}
