package localserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/heddle-io/heddle/internal/access"
	"github.com/heddle-io/heddle/internal/api"
	"github.com/heddle-io/heddle/internal/catalog"
	"github.com/heddle-io/heddle/internal/store/boltstore"
)

// Config says where the server keeps its data and listens.
type Config struct {
	DataDir      string // created if missing; holds heddle.db
	Listen       string // host:port; port 0 picks a free one
	BootstrapKey string // optional fixed superadmin key (HEDDLE_BOOTSTRAP_KEY)
	Version      string
	Logger       *slog.Logger
}

// Server is a running local heddle.
type Server struct {
	// Addr is the address the API listens on.
	Addr string
	// BootstrapSecret is the superadmin key created by this start, or empty
	// when the data directory already had one.
	BootstrapSecret string

	db       *boltstore.Store
	http     *http.Server
	listener net.Listener
	done     chan error
}

// Start opens the store, bootstraps the superadmin and starts serving.
func Start(ctx context.Context, cfg Config) (*Server, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("creating data directory %s: %w", cfg.DataDir, err)
	}
	db, err := boltstore.Open(filepath.Join(cfg.DataDir, "heddle.db"), boltstore.Options{})
	if err != nil {
		return nil, fmt.Errorf("opening the store in %s: %w", cfg.DataDir, err)
	}
	acc := access.New(db)
	secret, err := acc.Bootstrap(ctx, cfg.BootstrapKey)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("bootstrapping the superadmin: %w", err)
	}
	handler := api.New(api.Config{
		Catalog: catalog.New(db, nil),
		Access:  acc,
		Backend: "bolt",
		Version: cfg.Version,
		Logger:  cfg.Logger,
	})
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("listening on %s: %w", cfg.Listen, err)
	}
	s := &Server{
		Addr:            ln.Addr().String(),
		BootstrapSecret: secret,
		db:              db,
		listener:        ln,
		done:            make(chan error, 1),
		http: &http.Server{
			Handler:           handler,
			ReadHeaderTimeout: 10 * time.Second,
			ReadTimeout:       60 * time.Second,
			WriteTimeout:      60 * time.Second,
			IdleTimeout:       120 * time.Second,
		},
	}
	go func() {
		err := s.http.Serve(ln)
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		s.done <- err
	}()
	return s, nil
}

// URL is the base URL of the API.
func (s *Server) URL() string { return "http://" + s.Addr }

// Wait blocks until the server stops by itself (a listener failure).
func (s *Server) Wait() error { return <-s.done }

// Shutdown stops accepting requests, lets those in flight finish (until ctx
// ends), then closes the store.
func (s *Server) Shutdown(ctx context.Context) error {
	err := s.http.Shutdown(ctx)
	if cerr := s.db.Close(); err == nil {
		err = cerr
	}
	return err
}
