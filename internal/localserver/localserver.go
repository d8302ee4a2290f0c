package localserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/heddle-io/heddle/internal/access"
	"github.com/heddle-io/heddle/internal/api"
	"github.com/heddle-io/heddle/internal/assemble"
	"github.com/heddle-io/heddle/internal/audit"
	"github.com/heddle-io/heddle/internal/automator"
	"github.com/heddle-io/heddle/internal/automator/shell"
	"github.com/heddle-io/heddle/internal/backup"
	"github.com/heddle-io/heddle/internal/catalog"
	"github.com/heddle-io/heddle/internal/dashboard"
	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/engine"
	"github.com/heddle-io/heddle/internal/idempotency"
	"github.com/heddle-io/heddle/internal/identity"
	"github.com/heddle-io/heddle/internal/metrics"
	"github.com/heddle-io/heddle/internal/pools"
	"github.com/heddle-io/heddle/internal/provider"
	"github.com/heddle-io/heddle/internal/provider/latency"
	"github.com/heddle-io/heddle/internal/provider/local"
	"github.com/heddle-io/heddle/internal/provider/static"
	"github.com/heddle-io/heddle/internal/queue"
	"github.com/heddle-io/heddle/internal/queue/memqueue"
	"github.com/heddle-io/heddle/internal/ratelimit"
	"github.com/heddle-io/heddle/internal/secrets"
	"github.com/heddle-io/heddle/internal/sshexec"
	"github.com/heddle-io/heddle/internal/store/boltstore"
	"github.com/heddle-io/heddle/internal/tenantmove"
	"github.com/heddle-io/heddle/internal/webhooks"
)

// Config says where the server keeps its data and listens.
type Config struct {
	DataDir      string // created if missing; holds heddle.db, the key file and the local nodes
	Listen       string // host:port; port 0 picks a free one
	BootstrapKey string // optional fixed superadmin key (HEDDLE_BOOTSTRAP_KEY)
	Version      string
	Logger       *slog.Logger
	// JanitorPeriod is how often the janitor runs; zero means 5 s.
	JanitorPeriod time.Duration
	// NoWorkers starts no worker pool: jobs are submitted and wait. Only for
	// measuring the API's own path (solve, plan, persist) without the nodes
	// being built alongside.
	NoWorkers bool
	// TenantRequestsPerMinute bounds each tenant's API requests, and
	// AuthFailuresPerMinute each source address's failed authentications
	// (429 past them, see api.Throttle); zero limits nothing. heddle server
	// sets both by default.
	TenantRequestsPerMinute int
	AuthFailuresPerMinute   int
	// Engine tunes the engine; zero fields take local defaults (short leases
	// and resend delays: a local heddle has no reason to wait minutes).
	Engine engine.Config
	// Webhooks tunes webhook deliveries; the local server always takes
	// http to loopback URLs (Policy.Local). Policy.AllowPrivate lets
	// endpoints on private and link-local addresses be reached.
	Webhooks webhooks.Config
}

func localWebhooks(c webhooks.Config) webhooks.Config {
	c.Policy.Local = true
	return c
}

// Server is a running local heddle.
type Server struct {
	// Addr is the address the API listens on.
	Addr string
	// DataDir is the data directory, absolute.
	DataDir string
	// BootstrapSecret is the superadmin key created by this start, or empty
	// when the data directory already had one.
	BootstrapSecret string

	log      *slog.Logger
	db       *boltstore.Store
	http     *http.Server
	listener net.Listener
	done     chan error
	local    *local.Local
	latency  *latency.Latency
	shell    *shell.Shell
	ssh      *sshexec.Pool
	access   *access.Access
	queue    *tenantQueues
	engine   *engine.Engine
	metrics  *metrics.Prometheus
	audit    *audit.Log
	idem     *idempotency.Keys // the API's idempotency keys, swept by the janitor
	catalog  *catalog.Catalog

	backupsMu sync.Mutex
	backups   map[string]bool // the temporary copies of backups streaming now

	stop    context.CancelFunc // ends the workers and the janitor
	running sync.WaitGroup
}

// Start opens the store, bootstraps the superadmin, restores the local
// nodes, and starts the API, the worker pools and the janitor.
func Start(ctx context.Context, cfg Config) (*Server, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	if cfg.JanitorPeriod == 0 {
		cfg.JanitorPeriod = 5 * time.Second
	}
	// Resolved once, here: everything below (the local nodes' homes, the
	// automator's work directories) needs an absolute path, and the
	// default (.heddle) and the README's examples are relative.
	dataDir, err := filepath.Abs(cfg.DataDir)
	if err != nil {
		return nil, fmt.Errorf("data directory %q: %w", cfg.DataDir, err)
	}
	cfg.DataDir = dataDir
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("creating data directory %s: %w", cfg.DataDir, err)
	}
	db, err := boltstore.Open(filepath.Join(cfg.DataDir, "heddle.db"), boltstore.Options{})
	if err != nil {
		return nil, fmt.Errorf("opening the store in %s: %w", cfg.DataDir, err)
	}
	s := &Server{DataDir: cfg.DataDir, log: cfg.Logger, db: db, done: make(chan error, 1), metrics: metrics.NewPrometheus(), backups: map[string]bool{}}
	// The store's lock says no other server uses this directory, and this
	// one streams no backup yet: every backup copy here is a leftover.
	s.removeBackupLeftovers()
	st := metrics.CountStore(db, s.metrics) // every part's store calls are counted
	fail := func(err error) (*Server, error) {
		s.close()
		return nil, err
	}
	masterKey, err := secrets.LoadOrCreateKeyFile(filepath.Join(cfg.DataDir, "master.key"))
	if err != nil {
		return fail(fmt.Errorf("loading the local master key: %w", err))
	}
	// A store next to another server's key (a restore that mixed them, a
	// key file copied over) would start and then fail every operation
	// that opens a secret: refuse it here, naming both keys.
	if err := backup.RecordStoreKey(ctx, db, masterKey.ID()); err != nil {
		return fail(fmt.Errorf("%s: %w; put back the master.key that belongs with this heddle.db (heddle restore brings both from a backup)", cfg.DataDir, err))
	}
	keyring := secrets.NewKeyring(masterKey)
	s.local, err = local.New(local.Config{Dir: filepath.Join(cfg.DataDir, "nodes"), Logger: cfg.Logger})
	if err != nil {
		return fail(fmt.Errorf("starting the local provider: %w", err))
	}
	// A node whose address another process took meanwhile stays down, and
	// the server starts anyway: refusing would hold every other cluster
	// hostage to one node. The provider starts that node on its next use
	// (an action, a health check) once the address is free, and deleting
	// its cluster needs no running node.
	if err := s.local.Restore(ctx); err != nil {
		cfg.Logger.Error("some local nodes could not start; they stay down until their address is free", "error", err)
	}
	registry := provider.NewRegistry()
	if err := registry.Register(local.Type(), s.local); err != nil {
		return fail(err)
	}
	if err := registry.Register(static.Type(), static.New(static.NewPool(st, keyring), static.Config{})); err != nil {
		return fail(err)
	}
	// Simulated latencies, for measuring what heddle does around a cloud's
	// boot times on this machine (docs/performance.md).
	s.latency = latency.New(latency.Config{})
	if err := registry.Register(latency.Type(), s.latency); err != nil {
		return fail(err)
	}
	// One connection pool for the shell automator and the providers'
	// confirms: a node's confirm login serves its bootstrap and actions.
	s.ssh = sshexec.NewPool()
	s.shell = shell.New(shell.Config{Scripts: catalog.New(st, nil), Pool: s.ssh})

	s.queue = &tenantQueues{memqueue.New(memqueue.Options{})}
	s.metrics.RegisterQueues(s.queue.depths)
	ecfg := localEngineConfig(cfg.Engine)
	ecfg.Observer = s.metrics
	// Provider entities are checked against their type in the registry and
	// their sensitive fields sealed with the local master key.
	svc, err := assemble.Build(assemble.Parts{Store: st, Queue: s.queue, Keyring: keyring, Providers: registry, SSH: s.ssh,
		Automators: map[string]automator.Automator{shell.Type: s.shell}, Engine: ecfg, Logger: cfg.Logger,
		Webhooks: localWebhooks(cfg.Webhooks), SoleWriter: true})
	if err != nil {
		return fail(err)
	}
	s.engine, s.access, s.audit, s.catalog = svc.Engine, svc.Access, svc.Audit, svc.Catalog
	secret, err := s.access.Bootstrap(ctx, cfg.BootstrapKey)
	if err != nil {
		return fail(fmt.Errorf("bootstrapping the superadmin: %w", err))
	}

	s.idem = idempotency.New(st, idempotency.Options{Sweep: true})
	cursorKey, err := api.LoadCursorKey(ctx, db)
	if err != nil {
		return fail(err)
	}
	handler := api.New(api.Config{
		CursorKey:  cursorKey,
		Catalog:    svc.Catalog,
		Access:     s.access,
		Clusters:   svc.Clusters,
		Providers:  registry,
		Audit:      svc.Audit,
		Usage:      svc.Usage,
		Webhooks:   svc.Webhooks,
		Deliveries: svc.Deliveries,
		Observer:   s.metrics,
		Metrics:    s.metrics.Handler(),
		Identity:   identity.New(db, s.access, identity.Config{Logger: cfg.Logger}),
		Backend:    "bolt",
		Version:    cfg.Version,
		Logger:     cfg.Logger,
		// One process: its counts live in memory, no store write per request.
		Throttle: &api.Throttle{Limiter: ratelimit.NewMemory(),
			PerTenant:    ratelimit.Limit{Requests: cfg.TenantRequestsPerMinute, Window: time.Minute},
			AuthFailures: ratelimit.Limit{Requests: cfg.AuthFailuresPerMinute, Window: time.Minute}},
		Backup:      s.backup,
		BackupKeyID: masterKey.ID(),
		Moves:       tenantmove.New(st, keyring),
		// The embedded store has no time to live: expired keys are
		// indexed by expiry and swept by the janitor.
		Idempotency: s.idem,
	})
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fail(fmt.Errorf("listening on %s: %w", cfg.Listen, err))
	}
	s.Addr, s.BootstrapSecret, s.listener = ln.Addr().String(), secret, ln
	s.http = &http.Server{
		Handler:           withDashboard(handler),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       60 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       120 * time.Second,
	}

	// The in-process queue starts empty: whatever was READY when the last
	// process stopped is sent again now rather than after ResendAfter (each
	// tenant's queue is made by its first send, see tenantQueues). RUNNING
	// attempts of the dead process fail when their lease runs out and are
	// retried.
	if _, err := s.engine.ResendReady(ctx); err != nil {
		s.log.WarnContext(ctx, "resending ready tasks at start failed; the janitor will", "error", err)
	}
	bg, stop := context.WithCancel(context.WithoutCancel(ctx))
	s.stop = stop
	if !cfg.NoWorkers {
		s.running.Add(1)
		go func() {
			defer s.running.Done()
			s.superviseWorkers(bg)
		}()
	}
	s.running.Add(1)
	go func() {
		defer s.running.Done()
		s.runJanitor(bg, cfg.JanitorPeriod)
	}()
	go func() {
		// Requests net/http refuses before the handler get the envelope too.
		err := s.http.Serve(api.ListenerWithEnvelope(ln))
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		s.done <- err
	}()
	return s, nil
}

// withDashboard serves the API under /v1 and the web dashboard everywhere
// else.
func withDashboard(apiHandler http.Handler) http.Handler {
	ui := dashboard.Handler()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/metrics" {
			// Where Prometheus looks by default: the API's /v1/metrics,
			// with its key check.
			r = r.Clone(r.Context())
			r.URL.Path = "/v1/metrics"
		}
		if r.URL.Path == "/v1" || strings.HasPrefix(r.URL.Path, "/v1/") {
			apiHandler.ServeHTTP(w, r)
			return
		}
		ui.ServeHTTP(w, r)
	})
}

// tenantQueues gives a tenant its in-process queue on first use: a job
// submitted in the second after its tenant was created must not wait for the
// worker-pool supervisor (or the janitor's resend) to find its queue.
type tenantQueues struct{ *memqueue.Queue }

// depths reports the queues' depths to metrics.
func (q *tenantQueues) depths() map[string]metrics.QueueDepth {
	out := map[string]metrics.QueueDepth{}
	for t, d := range q.Depths() {
		out[t] = metrics.QueueDepth{Visible: d.Visible, InFlight: d.InFlight}
	}
	return out
}

func (q *tenantQueues) Send(ctx context.Context, tenant string, msgs ...queue.Message) error {
	err := q.Queue.Send(ctx, tenant, msgs...)
	if errors.Is(err, queue.ErrNoQueue) {
		if err := q.CreateTenantQueue(ctx, tenant); err != nil {
			return err
		}
		err = q.Queue.Send(ctx, tenant, msgs...)
	}
	return err
}

// localEngineConfig fills c's zero fields with the local defaults; the
// logger is set by assemble.Build.
func localEngineConfig(c engine.Config) engine.Config {
	if c.ResendAfter == 0 {
		c.ResendAfter = 20 * time.Second
	}
	if c.TaskLease == 0 {
		c.TaskLease = 15 * time.Second
	}
	if c.Visibility == 0 {
		c.Visibility = 30 * time.Second
	}
	if c.SubmitTimeout == 0 {
		c.SubmitTimeout = 30 * time.Second
	}
	if c.Backoff == 0 {
		c.Backoff = time.Second
	}
	if c.WorkerID == "" {
		host, _ := os.Hostname()
		c.WorkerID = fmt.Sprintf("local-%s-%d", host, os.Getpid())
	}
	return c
}

// poolKey is one tenant's worker pool: a changed worker count is a new key,
// so pools.Supervise restarts the pool at the new size.
type poolKey struct {
	tenant  string
	workers int
}

// poolKeys lists the pools that should run: one per tenant but the system
// tenant, which runs no tasks.
func (s *Server) poolKeys(ctx context.Context) ([]poolKey, error) {
	tenants, err := s.access.AllTenants(ctx)
	if err != nil {
		return nil, err
	}
	var out []poolKey
	for _, t := range tenants {
		if t.ID != domain.SystemTenant {
			out = append(out, poolKey{tenant: t.ID, workers: max(t.Workers, 1)})
		}
	}
	return out, nil
}

// superviseWorkers keeps one worker pool per tenant, sized by the tenant's
// worker count: new tenants get one within a second, a changed count
// restarts the pool, a deleted tenant's pool stops.
func (s *Server) superviseWorkers(ctx context.Context) {
	pools.Supervise(ctx, time.Second, s.poolKeys, func(ctx context.Context, k poolKey) {
		if err := s.queue.CreateTenantQueue(ctx, k.tenant); err != nil {
			s.log.WarnContext(ctx, "creating a tenant queue failed", "tenant", k.tenant, "error", err)
			return
		}
		s.log.InfoContext(ctx, "worker pool started", "tenant", k.tenant, "workers", k.workers)
		s.engine.RunWorkers(ctx, k.tenant, k.workers)
	}, s.log)
}

func (s *Server) runJanitor(ctx context.Context, period time.Duration) {
	tick := time.NewTicker(period)
	defer tick.Stop()
	var pruned time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if time.Since(pruned) >= time.Hour {
			pruned = time.Now()
			s.pruneAudit(ctx)
			s.collectStaged(ctx)
			s.sweepIdempotencyKeys(ctx)
		}
		r, err := s.engine.RunJanitor(ctx)
		if err != nil && ctx.Err() == nil {
			s.log.WarnContext(ctx, "janitor pass failed", "error", err)
		}
		if r != (engine.JanitorReport{}) {
			s.log.InfoContext(ctx, "janitor", "timedOut", r.TimedOut, "resent", r.Resent, "jobsMovedOn", r.JobsMovedOn,
				"undone", r.Undone, "leasesExpired", r.LeasesExpired)
		}
	}
}

// pruneAudit deletes audit records past their retention, every tenant's.
func (s *Server) pruneAudit(ctx context.Context) {
	tenants, err := s.access.AllTenants(ctx)
	if err == nil {
		ids := make([]string, len(tenants))
		for i, t := range tenants {
			ids[i] = t.ID
		}
		_, err = s.audit.PruneAll(ctx, ids, time.Now())
	}
	if err != nil && ctx.Err() == nil {
		s.log.WarnContext(ctx, "pruning the audit failed; the next hour tries again", "error", err)
	}
}

// sweepIdempotencyKeys deletes idempotency keys past their day.
func (s *Server) sweepIdempotencyKeys(ctx context.Context) {
	n, err := s.idem.Sweep(ctx)
	if n > 0 {
		s.log.InfoContext(ctx, "janitor: expired idempotency keys deleted", "keys", n)
	}
	if err != nil && ctx.Err() == nil {
		s.log.WarnContext(ctx, "sweeping idempotency keys failed; the next hour tries again", "error", err)
	}
}

// collectStaged deletes what catalog imports that never published left
// staged, every tenant's (see catalog.CollectStaged).
func (s *Server) collectStaged(ctx context.Context) {
	tenants, err := s.access.AllTenants(ctx)
	if err == nil {
		ids := make([]string, len(tenants))
		for i, t := range tenants {
			ids[i] = t.ID
		}
		var n int
		n, err = s.catalog.CollectStagedAll(ctx, ids, time.Now())
		if n > 0 {
			s.log.InfoContext(ctx, "janitor: staged catalog versions collected", "versions", n)
		}
	}
	if err != nil && ctx.Err() == nil {
		s.log.WarnContext(ctx, "collecting staged catalog imports failed; the next hour tries again", "error", err)
	}
}

// URL is the base URL of the API.
func (s *Server) URL() string { return "http://" + s.Addr }

// Wait blocks until the server stops by itself (a listener failure).
func (s *Server) Wait() error { return <-s.done }

// Shutdown stops accepting requests, lets those in flight finish (until ctx
// ends), stops the workers (a task cut short is retried after the next
// start) and the janitor, then closes the nodes' servers and the store.
func (s *Server) Shutdown(ctx context.Context) error {
	err := s.http.Shutdown(ctx)
	s.close()
	return err
}

func (s *Server) close() {
	if s.stop != nil {
		s.stop()
		s.running.Wait()
	}
	if s.shell != nil {
		s.shell.Close()
	}
	if s.ssh != nil {
		s.ssh.Close()
	}
	if s.local != nil {
		s.local.Close()
	}
	if s.db != nil {
		_ = s.db.Close()
	}
}

// backup copies the store into a file in the data directory first, then
// streams that: the read transaction then lasts as long as a local disk
// copy, not as long as the client takes to download. A long read
// transaction keeps bbolt from reusing the pages writes free (the file
// grows) and makes a write that must grow the file wait for it.
func (s *Server) backup(ctx context.Context, begin func(size int64) io.Writer) (int64, error) {
	s.removeBackupLeftovers()
	s.backupsMu.Lock()
	f, err := os.CreateTemp(s.DataDir, backupTempPrefix+"*"+backupTempSuffix) // mode 0600
	if err == nil {
		s.backups[filepath.Base(f.Name())] = true
	}
	s.backupsMu.Unlock()
	if err != nil {
		return 0, fmt.Errorf("backup: %w", err)
	}
	defer func() {
		f.Close()
		_ = os.Remove(f.Name())
		s.backupsMu.Lock()
		delete(s.backups, filepath.Base(f.Name()))
		s.backupsMu.Unlock()
	}()
	n, err := s.db.Backup(ctx, func(int64) io.Writer { return f })
	if err != nil {
		return 0, err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return 0, fmt.Errorf("backup: %w", err)
	}
	return io.CopyN(begin(n), f, n)
}

// The names of the backups' temporary copies: prefix, the digits
// os.CreateTemp puts in place of its *, suffix.
const (
	backupTempPrefix = ".backup-"
	backupTempSuffix = ".db"
)

// isBackupTemp tells a backup's temporary copy from every other file: only
// those are removed as leftovers.
func isBackupTemp(name string) bool {
	digits, ok := strings.CutPrefix(name, backupTempPrefix)
	if !ok {
		return false
	}
	digits, ok = strings.CutSuffix(digits, backupTempSuffix)
	if !ok || digits == "" {
		return false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// removeBackupLeftovers removes the temporary copies of backups that no
// longer stream: a process killed mid-backup never ran its cleanup, and
// each copy is as large as the store.
func (s *Server) removeBackupLeftovers() {
	entries, err := os.ReadDir(s.DataDir)
	if err != nil {
		s.log.Warn("cannot look for leftover backup copies", "dir", s.DataDir, "error", err)
		return
	}
	s.backupsMu.Lock()
	defer s.backupsMu.Unlock()
	for _, e := range entries {
		if !e.Type().IsRegular() || !isBackupTemp(e.Name()) || s.backups[e.Name()] {
			continue
		}
		if err := os.Remove(filepath.Join(s.DataDir, e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
			s.log.Warn("cannot remove a leftover backup copy", "file", e.Name(), "error", err)
			continue
		}
		s.log.Info("removed the copy of a backup that was cut short", "file", e.Name())
	}
}
