package opsmodel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"pgregory.net/rapid"

	"github.com/heddle-io/heddle/client"
	"github.com/heddle-io/heddle/internal/access"
	"github.com/heddle-io/heddle/internal/demotest"
	"github.com/heddle-io/heddle/internal/localserver"
	"github.com/heddle-io/heddle/internal/webhooks"
)

// The tenant's quotas: small, so that creates and expands run into them.
const (
	tenantID    = "ops"
	maxClusters = 3
	maxNodes    = 6
	adminName   = "ann"
)

// world is one check's server, its tenant and the switches of its faults.
type world struct {
	dir    string // the check's own directory (under the test's TempDir)
	faults string // the file the catalog's scripts read (see testdata/catalog.yaml)
	cfg    localserver.Config
	srv    server // in process, or a child process in the kill variant (kill_test.go)
	super  *client.Client
	admin  *client.Client
	hook   *httptest.Server
	veto   atomic.Bool // the pre-start hook refuses every job while set
	vetoes atomic.Int64
	m      *model
	pool   *staticPool // nil: no OpenSSH hosts, no static part (static_test.go)
}

// ctx bounds one API call: a hung server is a failure, not a hung test.
func callCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 60*time.Second)
}

// newWorld starts a server on a fresh data directory under root, creates
// the tenant, applies the catalog and registers the pre-start hook.
func newWorld(t *rapid.T, root string) *world {
	dir, err := os.MkdirTemp(root, "check-")
	if err != nil {
		t.Fatalf("data directory: %v", err)
	}
	w := &world{dir: dir, faults: filepath.Join(dir, "faults"), m: newModel()}
	w.hook = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if w.veto.Load() {
			w.vetoes.Add(1)
			http.Error(rw, "the model vetoes this job", http.StatusForbidden)
			return
		}
		rw.WriteHeader(http.StatusOK)
	}))
	superKey := access.NewKeySecret()
	w.cfg = localserver.Config{
		DataDir: filepath.Join(dir, "data"), Listen: "127.0.0.1:0", BootstrapKey: superKey, Version: "opsmodel",
		Logger: serverLog(t), JanitorPeriod: 100 * time.Millisecond,
		Webhooks: webhooks.Config{Policy: webhooks.Policy{Timeout: 2 * time.Second}},
	}
	w.start(t)
	w.super = client.New(w.srv.URL(), superKey)

	ctx, cancel := callCtx()
	defer cancel()
	data, err := w.super.JSON(ctx, http.MethodPost, "/v1/tenants", nil, map[string]any{
		"id": tenantID, "maxClusters": maxClusters, "maxNodes": maxNodes, "workers": 2, "admin": adminName})
	if err != nil {
		t.Fatalf("creating the tenant: %v", err)
	}
	created, err := client.Decode[struct {
		AdminKey struct {
			Secret string `json:"secret"`
		} `json:"adminKey"`
	}](data)
	if err != nil {
		t.Fatalf("the tenant's answer: %v", err)
	}
	w.admin = client.New(w.srv.URL(), created.AdminKey.Secret)
	if _, err := w.admin.ImportCatalog(ctx, w.catalog(t), "application/yaml"); err != nil {
		t.Fatalf("applying the catalog: %v", err)
	}
	if _, err := w.admin.JSON(ctx, http.MethodPost, "/v1/webhooks", nil, map[string]any{"url": w.hook.URL, "preStart": true}); err != nil {
		t.Fatalf("registering the pre-start hook: %v", err)
	}
	return w
}

func (w *world) start(t *rapid.T) {
	if killMode() {
		w.srv = w.startChild(t)
	} else {
		srv, err := localserver.Start(context.Background(), w.cfg)
		if err != nil {
			t.Fatalf("starting the server on %s: %v", w.cfg.DataDir, err)
		}
		w.srv = srv
	}
	for _, c := range []*client.Client{w.super, w.admin} {
		if c != nil {
			c.Endpoint = w.srv.URL()
		}
	}
}

// restart stops the server as an operator would (in-flight requests end,
// workers stop, tasks cut short are retried after the start), or with
// SIGKILL in the kill variant, and starts it again on the same data
// directory: a new port, the same store.
func (w *world) restart(t *rapid.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := w.srv.Shutdown(ctx); err != nil {
		t.Fatalf("stopping the server: %v", err)
	}
	w.start(t)
}

// close ends everything the check started, whatever its outcome.
func (w *world) close() {
	if w.srv != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		_ = w.srv.Shutdown(ctx)
		cancel()
	}
	w.hook.Close()
	demotest.KillProcessesUnder(w.dir)
	_ = os.RemoveAll(w.dir)
}

// serverLog writes the server's errors into the check's log: rapid prints
// it with the failing (shrunk) sequence, so the server's own account of
// what went wrong stands beside the steps. Below ERROR it is noise: every
// fault the model injects logs warnings.
func serverLog(t *rapid.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(logWriter{t}, &slog.HandlerOptions{Level: slog.LevelError}))
}

// logWriter is one slog line per Write (slog's handlers write each record
// with one call).
type logWriter struct{ t *rapid.T }

func (l logWriter) Write(p []byte) (int, error) {
	line := strings.TrimRight(string(p), "\n")
	l.t.Logf("server: %s", line)
	serverErrors.add(line)
	return len(p), nil
}

// serverErrors keeps the server's last ERROR lines, for the message of a
// check that fails on a 5xx: rapid prints the log of the replay only, and
// a failure that does not replay (timing) would lose the server's account.
var serverErrors recentLines

type recentLines struct {
	mu    sync.Mutex
	lines []string
}

func (r *recentLines) add(line string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lines = append(r.lines, line)
	if len(r.lines) > 10 {
		r.lines = r.lines[len(r.lines)-10:]
	}
}

func (r *recentLines) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.lines, "\n  ")
}

// catalog is testdata/catalog.yaml with this check's faults file.
func (w *world) catalog(t *rapid.T) []byte {
	doc, err := os.ReadFile("testdata/catalog.yaml")
	if err != nil {
		t.Fatalf("the catalog: %v", err)
	}
	return []byte(strings.ReplaceAll(string(doc), "@FAULTS@", w.faults))
}

// setFaults sets what the catalog's scripts do from now on.
func (w *world) setFaults(t *rapid.T, mode string) {
	if err := os.WriteFile(w.faults, []byte(mode), 0o600); err != nil {
		t.Fatalf("writing the faults file: %v", err)
	}
}

// refused tells a refusal (4xx: the request was judged and turned down)
// from a failure of the server or the call, which fails the check.
func refused(t *rapid.T, what string, err error) *client.Error {
	var ce *client.Error
	if !errors.As(err, &ce) {
		t.Fatalf("%s: not an API answer: %v", what, err)
	}
	if ce.Status < 400 || ce.Status >= 500 {
		t.Fatalf("%s: answered %d %s: %v\nthe server's last errors:\n  %s", what, ce.Status, ce.Code, ce, &serverErrors)
	}
	if ce.Code == "" || ce.Message == "" {
		t.Fatalf("%s: a refusal without a code or a sentence: %+v", what, ce.ErrorDetail)
	}
	return ce
}

// tenant reads the tenant's quotas and usage.
func (w *world) tenant(t *rapid.T) *client.Tenant {
	ctx, cancel := callCtx()
	defer cancel()
	v, err := w.super.GetTenant(ctx, tenantID)
	if err != nil {
		t.Fatalf("reading the tenant: %v", err)
	}
	return v
}

// clusters lists every cluster of the tenant, TERMINATED ones included.
func (w *world) clusters(t *rapid.T) []client.Cluster {
	ctx, cancel := callCtx()
	defer cancel()
	cs, err := client.Collect(w.admin.Clusters(ctx, client.ClusterFilter{All: true}))
	if err != nil {
		t.Fatalf("listing the clusters: %v", err)
	}
	return cs
}

func (w *world) cluster(t *rapid.T, id string) *client.ClusterView {
	ctx, cancel := callCtx()
	defer cancel()
	v, err := w.admin.GetCluster(ctx, id)
	if err != nil {
		t.Fatalf("reading cluster %s: %v", id, err)
	}
	return v
}

func (w *world) jobs(t *rapid.T, id string) []client.Job {
	ctx, cancel := callCtx()
	defer cancel()
	js, err := client.Collect(w.admin.Jobs(ctx, id))
	if err != nil {
		t.Fatalf("listing cluster %s's jobs: %v", id, err)
	}
	return js
}

func (w *world) nodes(t *rapid.T, id string) []client.Node {
	ctx, cancel := callCtx()
	defer cancel()
	ns, err := client.Collect(w.admin.Nodes(ctx, id))
	if err != nil {
		t.Fatalf("listing cluster %s's nodes: %v", id, err)
	}
	return ns
}

// usageTotals is node-hours by cluster over the last day, as the API
// reports them, with the client's clock before and after the request (the
// server's "now" lies between).
func (w *world) usageTotals(t *rapid.T) (map[string]float64, time.Time, time.Time) {
	ctx, cancel := callCtx()
	defer cancel()
	q := url.Values{"groupBy": {"cluster"}, "step": {"hour"}, "from": {time.Now().Add(-2 * time.Hour).UTC().Truncate(time.Hour).Format(time.RFC3339)}}
	before := time.Now()
	data, err := w.admin.Do(ctx, http.MethodGet, "/v1/usage", q, nil, "")
	after := time.Now()
	if err != nil {
		t.Fatalf("reading usage: %v", err)
	}
	var r struct {
		Rows []struct {
			Group string  `json:"group"`
			Total float64 `json:"total"`
		} `json:"rows"`
	}
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatalf("usage answer: %v: %s", err, data)
	}
	out := map[string]float64{}
	for _, row := range r.Rows {
		out[row.Group] = row.Total
	}
	return out, before, after
}

// auditRecord is what the model reads of an audit record.
type auditRecord struct {
	Method  string            `json:"method"`
	Route   string            `json:"route"`
	Target  map[string]string `json:"target"`
	Outcome string            `json:"outcome"`
}

// audit pages through the tenant's whole audit log.
func (w *world) audit(t *rapid.T) []auditRecord {
	ctx, cancel := callCtx()
	defer cancel()
	recs, err := client.Collect(client.Each[auditRecord](ctx, w.admin, "/v1/audit", nil, 0))
	if err != nil {
		t.Fatalf("reading the audit log: %v", err)
	}
	return recs
}

func (w *world) String() string { return fmt.Sprintf("world(%s)", w.dir) }
