package api

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/heddle-io/heddle/internal/access"
	"github.com/heddle-io/heddle/internal/audit"
	"github.com/heddle-io/heddle/internal/buildinfo"
	"github.com/heddle-io/heddle/internal/catalog"
	"github.com/heddle-io/heddle/internal/cluster"
	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/idempotency"
	"github.com/heddle-io/heddle/internal/identity"
	"github.com/heddle-io/heddle/internal/metrics"
	"github.com/heddle-io/heddle/internal/onboard"
	"github.com/heddle-io/heddle/internal/provider"
	"github.com/heddle-io/heddle/internal/tenantmove"
	"github.com/heddle-io/heddle/internal/usage"
	"github.com/heddle-io/heddle/internal/webhooks"
)

// MaxBodyBytes is the largest request body accepted, but for a catalog
// import (MaxCatalogBodyBytes).
const MaxBodyBytes = 1 << 20

// Config is what the API needs.
type Config struct {
	Catalog *catalog.Catalog
	Access  *access.Access
	// Clusters runs cluster operations; nil serves the catalog only, and
	// cluster routes answer 503.
	Clusters *cluster.Service
	// Providers lists the provider types for GET /v1/providertypes; nil
	// answers 503 there. Give the catalog the same registry (and a keyring)
	// with catalog.WithProviders so that provider entities are validated and
	// their sensitive fields sealed.
	Providers *provider.Registry
	// Onboarder provisions a tenant's queues when it is created, changed
	// and deleted (see package onboard for the order); nil is onboard.Nop,
	// for the local server, whose in-process queue needs nothing.
	Onboarder onboard.Onboarder
	// Backend names the store backend in /v1/status ("bolt", "dynamodb").
	Backend string
	// Version, when set, replaces the module version /v1/status reports
	// (the rest of the build information is the running binary's).
	Version string
	// CursorKey signs page cursors (see paging.go). Every instance serving
	// one deployment needs the same key: LoadCursorKey keeps it in the
	// store. Empty: a random key, for one process only.
	CursorKey []byte
	Logger    *slog.Logger
	// Audit records every change asked of the API (GET /v1/audit reads
	// them); nil keeps none, which only tests of other parts choose.
	Audit *audit.Log
	// Observer receives a measurement per request; nil measures nothing.
	Observer metrics.Observer
	// Usage reads node lifetimes for GET /v1/usage; nil answers 503.
	Usage *usage.Reader
	// Metrics serves GET /v1/metrics (the Prometheus text format); nil
	// answers 503 there (the Lambdas publish theirs to CloudWatch).
	Metrics http.Handler
	// Throttle limits each tenant's requests and each source's failed
	// authentications (throttle.go); nil limits nothing.
	Throttle *Throttle
	// Backup streams a consistent copy of the embedded store for
	// GET /v1/backup (backup.go); nil answers 501 there, as on DynamoDB,
	// whose backups are point-in-time recovery.
	Backup BackupFunc
	// BackupKeyID is the id (a fingerprint, not secret) of the master key
	// that seals the store Backup copies; GET /v1/backup sends it in
	// BackupKeyHeader, so that heddle backup refuses another directory's
	// key before it downloads the copy.
	BackupKeyID string
	// Identity accepts tokens of the tenants' trusted identity providers
	// beside API keys and serves /v1/issuers; nil accepts API keys only.
	Identity *identity.Identity
	// Webhooks and Deliveries serve /v1/webhooks; nil answers 503 there.
	Webhooks   *webhooks.Registry
	Deliveries *webhooks.Deliverer
	// Moves serves GET /v1/tenant/export and POST /v1/tenant/import; nil
	// answers 501 there.
	Moves *tenantmove.Mover
	// Idempotency keeps the Idempotency-Key of the routes that honour one
	// (idempotency.go); nil checks the header's syntax and keeps nothing,
	// which only tests of other parts choose.
	Idempotency *idempotency.Keys
}

// Server is the /v1 API as an http.Handler.
type Server struct {
	catalog  *catalog.Catalog
	access   *access.Access
	clusters *cluster.Service
	backend  string
	build    buildinfo.Info
	log      *slog.Logger
	mux      *http.ServeMux
	started  time.Time

	providers *provider.Registry  // see Config.Providers
	onboarder onboard.Onboarder   // see Config.Onboarder; never nil
	audit     *audit.Log          // see Config.Audit
	observer  metrics.Observer    // see Config.Observer; never nil
	metrics   http.Handler        // see Config.Metrics
	usage     *usage.Reader       // see Config.Usage
	hooks     *webhooks.Registry  // see Config.Webhooks
	delivered *webhooks.Deliverer // see Config.Deliveries
	cursors   cursorSigner
	throttle  *throttler         // nil: nothing limited
	backup    BackupFunc         // see Config.Backup
	backupKey string             // see Config.BackupKeyID
	identity  *identity.Identity // see Config.Identity
	moves     *tenantmove.Mover  // see Config.Moves
	idem      *idempotency.Keys  // see Config.Idempotency
	// idemAfterAnswer, when set (by tests), runs after an idempotent
	// request's answer is written and before its key is finished: a test
	// that panics there plays a process that died in between.
	idemAfterAnswer atomic.Pointer[func(*http.Request)]
}

// New builds the API handler.
func New(cfg Config) *Server {
	s := &Server{catalog: cfg.Catalog, access: cfg.Access, clusters: cfg.Clusters, backend: cfg.Backend, build: buildinfo.Read(),
		log: cfg.Logger, mux: http.NewServeMux(), started: time.Now()}
	if cfg.Version != "" {
		s.build.Version = cfg.Version
	}
	s.providers = cfg.Providers
	s.onboarder = cfg.Onboarder
	s.audit = cfg.Audit
	s.observer = metrics.OrNop(cfg.Observer)
	s.metrics = cfg.Metrics
	s.usage = cfg.Usage
	s.backup = cfg.Backup
	s.backupKey = cfg.BackupKeyID
	s.identity = cfg.Identity
	s.moves = cfg.Moves
	s.idem = cfg.Idempotency
	s.hooks, s.delivered = cfg.Webhooks, cfg.Deliveries
	if s.onboarder == nil {
		s.onboarder = onboard.Nop{}
	}
	s.cursors = cursorSigner{key: cfg.CursorKey}
	if len(s.cursors.key) == 0 {
		s.cursors.key = make([]byte, 32)
		_, _ = rand.Read(s.cursors.key)
	}
	if s.log == nil {
		s.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	s.throttle = newThrottler(cfg.Throttle, s.log)
	for _, rt := range s.routes() {
		s.mux.Handle(rt.Method+" "+rt.Path, s.wrap(rt))
	}
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.writeError(w, r, errNotFound(fmt.Sprintf("no route %s %s; see /v1/openapi.json", r.Method, r.URL.Path)))
	})
	return s
}

// ServeHTTP serves one request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ctx := context.WithValue(r.Context(), requestIDKey{}, newRequestID(r))
	r = r.WithContext(ctx)
	w.Header().Set("X-Request-Id", requestID(ctx))
	rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
	start := time.Now()
	_, pattern := s.mux.Handler(r)
	defer func() {
		aborted := false
		if p := recover(); p != nil {
			if p == http.ErrAbortHandler { //nolint:errorlint // the sentinel is panicked as is
				// A stream cut short on purpose (a backup whose read
				// failed): net/http drops the connection, so the client
				// sees a short body, not a 200 that looks whole.
				aborted, rec.status = true, http.StatusInternalServerError
			} else {
				s.log.ErrorContext(ctx, "panic", slog.Any("panic", p), slog.String("requestId", requestID(ctx)))
				s.writeError(rec, r, fmt.Errorf("panic: %v", p))
			}
		}
		defer func() {
			if aborted {
				panic(http.ErrAbortHandler)
			}
		}()
		took := time.Since(start)
		s.log.InfoContext(ctx, "request", slog.String("requestId", requestID(ctx)), slog.String("method", r.Method),
			slog.String("path", r.URL.Path), slog.Int("status", rec.status), slog.Duration("took", took))
		// The route's pattern, not the path: ids would make a series per
		// cluster.
		route := ""
		if _, path, ok := strings.Cut(pattern, " "); ok {
			route = path
		}
		s.observer.Request(r.Method, route, rec.status, took)
	}()
	// A pattern's method mismatch answers 405 from the mux with a plain-text
	// body; send our envelope instead.
	if pattern == "" || strings.HasPrefix(pattern, "/") {
		if allowed := s.allowedMethods(r); len(allowed) > 0 {
			rec.Header().Set("Allow", strings.Join(allowed, ", "))
			s.writeError(rec, r, newError(http.StatusMethodNotAllowed, CodeMethodNotAllowed,
				fmt.Sprintf("%s is not allowed on %s; use %s", r.Method, r.URL.Path, strings.Join(allowed, " or "))))
			return
		}
	}
	s.mux.ServeHTTP(rec, r)
}

// allowedMethods lists the methods that have a route for r's path.
func (s *Server) allowedMethods(r *http.Request) []string {
	var out []string
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete} {
		if m == r.Method {
			continue
		}
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, pattern := s.mux.Handler(probe); pattern != "" && !strings.HasPrefix(pattern, "/") {
			out = append(out, m)
		}
	}
	return out
}

type statusRecorder struct {
	http.ResponseWriter
	status int
	code   string // the error envelope's code, when one was written
	// made names what the request created that its path does not (the
	// cluster and job of a create, the job of an operation), for its audit
	// record; see noteMade.
	made map[string]string
}

// noteMade records, for the request's audit record, an id the request made
// (kind "cluster" or "job"), so that the record of POST /v1/clusters says
// which cluster and job it created.
func noteMade(w http.ResponseWriter, kind, id string) {
	sr := findStatusRecorder(w)
	if sr == nil || id == "" {
		return
	}
	if sr.made == nil {
		sr.made = map[string]string{}
	}
	sr.made[kind] = id
}

func (r *statusRecorder) WriteHeader(code int) {
	r.status = code
	r.ResponseWriter.WriteHeader(code)
}

type requestIDKey struct{}

func newRequestID(r *http.Request) string { return requestIDFrom(r.Header.Get("X-Request-Id")) }

// requestIDFrom is the client's X-Request-Id when it is a usable one, or a
// new random id.
func requestIDFrom(header string) string {
	if id := header; id != "" && len(id) <= 64 && domain.ValidName(id) {
		return id
	}
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func requestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

// handlerFunc is a route's handler: it returns an error instead of writing one.
type handlerFunc func(w http.ResponseWriter, r *http.Request, p access.Principal) error

// route is one entry of the route table.
type route struct {
	Method string
	Path   string      // a net/http pattern path; the same text is the OpenAPI path
	Role   domain.Role // the least role allowed; "" for public routes
	Handle handlerFunc
}

func (s *Server) wrap(rt route) http.Handler {
	rules := rulesFor(rt)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, bodyLimit(rt))
		var p access.Principal
		if rt.Role != "" {
			if err := s.throttle.checkSource(r); err != nil {
				s.writeError(w, r, err)
				return
			}
			var (
				err error
				adm *identity.Admission
			)
			if p, adm, err = s.authenticate(r); err != nil {
				s.writeError(w, r, s.throttle.authFailed(r, err))
				return
			}
			if adm != nil {
				s.recordSignIn(w, r, adm)
				r = r.WithContext(context.WithValue(r.Context(), admissionKey{}, adm))
			}
			// Over its limit, a tenant's request is refused before it is
			// recorded: a flood must not cost an audit write per request.
			if err := s.throttle.takeTenant(r.Context(), w, p.Tenant); err != nil {
				s.writeError(w, r, err)
				return
			}
			// From here on the caller is known: a change it asks for is
			// recorded, a refused one too.
			if rt.Method != http.MethodGet && s.audit != nil {
				defer s.record(w, r, rt, p)
			}
			if !p.Role.AtLeast(rt.Role) {
				s.writeError(w, r, errForbidden)
				return
			}
		}
		// After the caller is known (an anonymous probe learns nothing of a
		// route's parameters) and before the handler: nothing it does runs
		// on a request it would misread.
		if err := rules.checkRawQuery(r.URL.RawQuery); err != nil {
			s.writeError(w, r, s.clusterNotFoundFirst(r, rt, p, err))
			return
		}
		r = withBodyRules(r, rules)
		handle := rt.Handle
		if idempotentRoutes[rt.Method+" "+rt.Path] {
			handle = s.idempotent(handle)
		}
		if err := handle(w, r, p); err != nil {
			s.writeError(w, r, err)
		}
	})
}

// record appends the audit record of a change asked by p, whatever its
// outcome. A failure to record is logged, not answered: the change (if
// any) is made by then, and the answer says so.
func (s *Server) record(w http.ResponseWriter, r *http.Request, rt route, p access.Principal) {
	rec := audit.Record{At: time.Now().UTC(), Tenant: p.Tenant, User: p.User, KeyID: p.KeyID,
		Method: rt.Method, Route: rt.Path, Path: r.URL.Path, RequestID: requestID(r.Context()), Status: http.StatusOK}
	var made map[string]string
	if sr, ok := w.(*statusRecorder); ok {
		rec.Status, rec.Code, made = sr.status, sr.code, sr.made
	}
	rec.Outcome = audit.OutcomeOf(rec.Status)
	for _, name := range pathParams(rt.Path) {
		if rec.Target == nil {
			rec.Target = map[string]string{}
		}
		rec.Target[name] = r.PathValue(name)
	}
	for kind, id := range made {
		if rec.Target == nil {
			rec.Target = map[string]string{}
		}
		rec.Target[kind] = id
	}
	// The request's context may be canceled once the answer is out.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), 5*time.Second)
	defer cancel()
	if err := s.audit.Append(ctx, rec); err != nil {
		s.log.ErrorContext(ctx, "audit record lost", slog.String("requestId", rec.RequestID), slog.Any("error", err))
	}
}

// pathParams lists the wildcards of a route pattern ("/v1/x/{a}/{b}").
func pathParams(pattern string) []string {
	var out []string
	for _, part := range strings.Split(pattern, "/") {
		if name, ok := strings.CutPrefix(part, "{"); ok {
			out = append(out, strings.TrimSuffix(name, "}"))
		}
	}
	return out
}

// admissionKey carries a token's *identity.Admission to the handler
// (GET /v1/me answers its notes).
type admissionKey struct{}

func (s *Server) authenticate(r *http.Request) (access.Principal, *identity.Admission, error) {
	return s.authenticateBearer(r, r.Header.Get("Authorization"))
}

// readBody reads the body and converts YAML to JSON when the content type
// says YAML, so both go through the same strict decoder, and refuses one
// that lacks a field its route's schema requires.
func readBody(r *http.Request) ([]byte, error) {
	body, err := readBodyJSON(r)
	if err != nil {
		return nil, err
	}
	if missing := missingFields(r, body); len(missing) > 0 {
		return nil, badBody{missing}
	}
	return body, nil
}

// readBodyJSON is readBody without the check of required fields.
func readBodyJSON(r *http.Request) ([]byte, error) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, err
	}
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		return body, nil
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return nil, newError(http.StatusUnsupportedMediaType, CodeUnsupportedMedia, fmt.Sprintf("Content-Type %q cannot be parsed; send application/json", ct))
	}
	switch mt {
	case "application/json", "text/json":
		return body, nil
	case "application/yaml", "application/x-yaml", "text/yaml":
		js, err := yaml.YAMLToJSON(body)
		if err != nil {
			return nil, badBody{domain.Problems{{Code: domain.CodeMalformed, Message: "the body is not valid YAML: " + err.Error()}}}
		}
		return js, nil
	}
	return nil, newError(http.StatusUnsupportedMediaType, CodeUnsupportedMedia, fmt.Sprintf("Content-Type %q is not accepted; send application/json or application/yaml", mt))
}

// decode reads the body strictly into v; the problems of its shape and the
// required fields it lacks are reported together.
func decode(r *http.Request, v any) error {
	body, err := readBodyJSON(r)
	if err != nil {
		return err
	}
	missing := missingFields(r, body)
	if err := domain.DecodeStrict(body, v); err != nil {
		if ps, ok := err.(domain.Problems); ok {
			return badBody{append(ps, missing...)}
		}
		return err
	}
	if len(missing) > 0 {
		return badBody{missing}
	}
	return nil
}

// pathName reads a path parameter that must be a valid name.
func pathName(r *http.Request, param string) (string, error) {
	v := r.PathValue(param)
	if !domain.ValidName(v) {
		return "", badParam(param, fmt.Sprintf("%q is not a valid name", v))
	}
	return v, nil
}
