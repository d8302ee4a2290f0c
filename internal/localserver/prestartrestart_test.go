package localserver

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/access"
	"github.com/heddle-io/heddle/internal/demotest"
	"github.com/heddle-io/heddle/internal/webhooks"
)

// TestARestartWhileAJobAwaitsItsPreStartHookStartsItAfter: the server
// stops while a worker asks a create's pre-start hook (the hook has not
// answered; stopping cuts the call short) and starts again on its data
// directory. The in-process queue lost the question with the stopped
// process; the new one asks again at start, the hook accepts, and the
// create runs. The cut-short call is no refusal. Before the fix nothing
// asked again and the janitor failed the job after SubmitTimeout ("the
// pre-start hooks were not asked in time").
func TestARestartWhileAJobAwaitsItsPreStartHookStartsItAfter(t *testing.T) {
	t.Parallel()
	var hang atomic.Bool
	hang.Store(true)
	asked := make(chan struct{}, 1)
	var mu sync.Mutex
	answered := map[string]int{} // by job
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body webhooks.Body
		_ = json.NewDecoder(r.Body).Decode(&body)
		if hang.Load() {
			select {
			case asked <- struct{}{}:
			default:
			}
			<-r.Context().Done() // until the server stops and cuts the call
			return
		}
		mu.Lock()
		answered[body.Event.Job]++
		mu.Unlock()
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(hook.Close)

	b := &bundle{t: t, super: access.NewKeySecret()}
	dir := t.TempDir()
	cfg := Config{DataDir: dir, Listen: "127.0.0.1:0", BootstrapKey: b.super, Version: "test",
		Logger: testLogger(), JanitorPeriod: 100 * time.Millisecond,
		// Longer than the test: only the stop ends the first call.
		Webhooks: webhooks.Config{Policy: webhooks.Policy{Timeout: 5 * time.Minute}}}
	start := func() {
		srv, err := Start(context.Background(), cfg)
		require.NoError(t, err)
		b.srv = srv
	}
	stop := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		require.NoError(t, b.srv.Shutdown(ctx))
	}
	start()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = b.srv.Shutdown(ctx)
		demotest.KillProcessesUnder(dir)
	})
	b.admin = demotest.TenantWithCatalog(t, b.srv.URL(), b.super, "acme", 10, "../../docs/examples/health-catalog.yaml")
	require.Equal(t, http.StatusCreated, b.call(b.admin, "POST", "/v1/webhooks",
		map[string]any{"url": hook.URL, "preStart": true}, nil))

	var c result
	require.Equal(t, http.StatusAccepted, b.call(b.admin, "POST", "/v1/clusters",
		map[string]any{"name": "waiting", "template": "health", "size": 1}, &c))
	select {
	case <-asked:
	case <-time.After(60 * time.Second):
		t.Fatal("no worker asked the pre-start hook")
	}
	hang.Store(false)
	stop()
	start()

	var job struct {
		Status        string `json:"status"`
		StatusMessage string `json:"statusMessage"`
	}
	require.Equal(t, http.StatusOK, b.call(b.admin, "GET", "/v1/clusters/"+c.Cluster.ID+"/jobs/"+c.Job.ID, nil, &job))
	require.NotEqual(t, "FAILED", job.Status, "the call the stop cut short is no refusal: %s", job.StatusMessage)
	b.settleTo(b.admin, c.Cluster.ID, "ACTIVE")
	mu.Lock()
	// The create's success makes a verification due, which asks too.
	require.Equal(t, 1, answered[c.Job.ID], "the create asked again once, after the start")
	mu.Unlock()

	require.Equal(t, http.StatusAccepted, b.call(b.admin, "DELETE", "/v1/clusters/"+c.Cluster.ID, nil, nil))
	require.Equal(t, "TERMINATED", b.settle(b.admin, c.Cluster.ID).Status)
}
