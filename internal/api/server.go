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
	"time"

	"sigs.k8s.io/yaml"

	"github.com/heddle-io/heddle/internal/access"
	"github.com/heddle-io/heddle/internal/catalog"
	"github.com/heddle-io/heddle/internal/cluster"
	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/onboard"
	"github.com/heddle-io/heddle/internal/provider"
)

// MaxBodyBytes is the largest request body accepted.
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
	// Version is heddle's build version, reported by /v1/status.
	Version string
	// CursorKey signs page cursors (see paging.go). Every instance serving
	// one deployment needs the same key: LoadCursorKey keeps it in the
	// store. Empty: a random key, for one process only.
	CursorKey []byte
	Logger    *slog.Logger
}

// Server is the /v1 API as an http.Handler.
type Server struct {
	catalog  *catalog.Catalog
	access   *access.Access
	clusters *cluster.Service
	backend  string
	version  string
	log      *slog.Logger
	mux      *http.ServeMux
	started  time.Time

	providers *provider.Registry // see Config.Providers
	onboarder onboard.Onboarder  // see Config.Onboarder; never nil
	cursors   cursorSigner
}

// New builds the API handler.
func New(cfg Config) *Server {
	s := &Server{catalog: cfg.Catalog, access: cfg.Access, clusters: cfg.Clusters, backend: cfg.Backend, version: cfg.Version,
		log: cfg.Logger, mux: http.NewServeMux(), started: time.Now()}
	s.providers = cfg.Providers
	s.onboarder = cfg.Onboarder
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
	defer func() {
		if p := recover(); p != nil {
			s.log.ErrorContext(ctx, "panic", slog.Any("panic", p), slog.String("requestId", requestID(ctx)))
			s.writeError(rec, r, fmt.Errorf("panic: %v", p))
		}
		s.log.InfoContext(ctx, "request", slog.String("requestId", requestID(ctx)), slog.String("method", r.Method),
			slog.String("path", r.URL.Path), slog.Int("status", rec.status), slog.Duration("took", time.Since(start)))
	}()
	// A pattern's method mismatch answers 405 from the mux with a plain-text
	// body; send our envelope instead.
	if _, pattern := s.mux.Handler(r); pattern == "" || strings.HasPrefix(pattern, "/") {
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
}

func (r *statusRecorder) WriteHeader(code int) {
	r.status = code
	r.ResponseWriter.WriteHeader(code)
}

type requestIDKey struct{}

func newRequestID(r *http.Request) string {
	if id := r.Header.Get("X-Request-Id"); id != "" && len(id) <= 64 && domain.ValidName(id) {
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
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, MaxBodyBytes)
		var p access.Principal
		if rt.Role != "" {
			var err error
			if p, err = s.authenticate(r); err != nil {
				s.writeError(w, r, err)
				return
			}
			if !p.Role.AtLeast(rt.Role) {
				s.writeError(w, r, errForbidden)
				return
			}
		}
		if err := rt.Handle(w, r, p); err != nil {
			s.writeError(w, r, err)
		}
	})
}

func (s *Server) authenticate(r *http.Request) (access.Principal, error) {
	h := r.Header.Get("Authorization")
	secret, ok := strings.CutPrefix(h, "Bearer ")
	if !ok {
		return access.Principal{}, access.ErrUnauthorized
	}
	return s.access.Authenticate(r.Context(), strings.TrimSpace(secret))
}

// readBody reads the body and converts YAML to JSON when the content type
// says YAML, so both go through the same strict decoder.
func readBody(r *http.Request) ([]byte, error) {
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

// decode reads the body strictly into v.
func decode(r *http.Request, v any) error {
	body, err := readBody(r)
	if err != nil {
		return err
	}
	if err := domain.DecodeStrict(body, v); err != nil {
		if ps, ok := err.(domain.Problems); ok {
			return badBody{ps}
		}
		return err
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
