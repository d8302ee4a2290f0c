package opsmodel

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"pgregory.net/rapid"

	"github.com/heddle-io/heddle/client"
	"github.com/heddle-io/heddle/internal/localserver"
	"github.com/heddle-io/heddle/internal/webhooks"
)

// The kill -9 variant (make opsmodel-kill, outside CI): with
// HEDDLE_OPSMODEL_KILL=1 each check's server runs in a child process (this
// test binary run again as a server, see TestMain and runChild: the local
// server of `heddle server`, on its embedded store), and every server
// restart of the model is a SIGKILL at whatever point the sequence is,
// jobs and imports in flight, followed by a start on the same data
// directory. Nothing gets to finish its request, give back a reservation,
// abandon a staged import or remove a backup's temporary copy: the next
// process, its janitor and the next requests must.
const killEnv = "HEDDLE_OPSMODEL_KILL"

// childEnv carries a child server's configuration (childConfig, JSON): set,
// the test binary serves instead of testing.
const childEnv = "HEDDLE_OPSMODEL_CHILD"

func killMode() bool { return os.Getenv(killEnv) == "1" }

// childConfig is what a child server needs of the check's configuration.
type childConfig struct {
	DataDir      string        `json:"dataDir"`
	BootstrapKey string        `json:"bootstrapKey"`
	Janitor      time.Duration `json:"janitor"`
	HookTimeout  time.Duration `json:"hookTimeout"`
	// AddrFile receives the server's URL once it serves.
	AddrFile string `json:"addrFile"`
}

// runChild serves as a check's server until it is killed, logging its
// errors to stderr (which the check's log receives).
func runChild(raw string) {
	var c childConfig
	if err := json.Unmarshal([]byte(raw), &c); err != nil {
		fmt.Fprintf(os.Stderr, "opsmodel child: %s: %v\n", childEnv, err)
		os.Exit(2)
	}
	srv, err := localserver.Start(context.Background(), localserver.Config{
		DataDir: c.DataDir, Listen: "127.0.0.1:0", BootstrapKey: c.BootstrapKey, Version: "opsmodel",
		Logger:        slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})),
		JanitorPeriod: c.Janitor, Webhooks: webhooks.Config{Policy: webhooks.Policy{Timeout: c.HookTimeout}},
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "opsmodel child: %v\n", err)
		os.Exit(1)
	}
	tmp := c.AddrFile + ".tmp"
	if err := os.WriteFile(tmp, []byte(srv.URL()), 0o600); err == nil {
		err = os.Rename(tmp, c.AddrFile)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "opsmodel child: writing its address: %v\n", err)
		os.Exit(1)
	}
	select {} // until the model kills it
}

// childServer is a check's server in a child process.
type childServer struct {
	cmd  *exec.Cmd
	url  string
	done chan error
}

func (c *childServer) URL() string { return c.url }

// Shutdown ends the child with SIGKILL: the variant never lets a server
// stop as an operator would.
func (c *childServer) Shutdown(ctx context.Context) error {
	_ = c.cmd.Process.Signal(syscall.SIGKILL)
	select {
	case <-c.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("the killed server did not exit: %w", ctx.Err())
	}
}

// startChild starts the check's server as a child process and waits until
// it serves.
func (w *world) startChild(t *rapid.T) server {
	addrFile := filepath.Join(w.dir, "server.addr")
	_ = os.Remove(addrFile)
	raw, _ := json.Marshal(childConfig{DataDir: w.cfg.DataDir, BootstrapKey: w.cfg.BootstrapKey, Janitor: w.cfg.JanitorPeriod,
		HookTimeout: w.cfg.Webhooks.Policy.Timeout, AddrFile: addrFile})
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+string(raw))
	// The child dies with the test binary, however that ends.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	cmd.Stdout, cmd.Stderr = logWriter{t}, logWriter{t}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting the child server: %v", err)
	}
	c := &childServer{cmd: cmd, done: make(chan error, 1)}
	go func() { c.done <- cmd.Wait() }()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if b, err := os.ReadFile(addrFile); err == nil {
			c.url = strings.TrimSpace(string(b))
			return c
		}
		select {
		case err := <-c.done:
			t.Fatalf("the child server exited before serving: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			_ = c.Shutdown(context.Background())
			t.Fatalf("the child server did not serve within 2 minutes")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// killDuringImport, in the kill variant, kills the server while a staged
// import runs (after a drawn delay: before, during or after its staging),
// starts it again, and imports again: that import must succeed at once,
// the new process taking back what the dead one staged (its record names
// another process: catalog.WithSoleWriter). Outside the variant it is
// skipped (importOrphaned cuts the request instead).
func (w *world) killDuringImport(t *rapid.T) {
	if !killMode() {
		t.Skip("kills need the kill variant (HEDDLE_OPSMODEL_KILL=1)")
	}
	after := time.Duration(rapid.IntRange(0, 80).Draw(t, "killAfterMs")) * time.Millisecond
	// A client of its own: the restart moves the world's clients to the new
	// process's address while this request runs.
	importer := client.New(w.admin.Endpoint, w.admin.Key)
	errc := make(chan error, 1)
	go func() {
		ctx, cancel := callCtx()
		defer cancel()
		_, err := importer.ImportCatalog(ctx, bulkCatalog(), "application/yaml")
		errc <- err
	}()
	time.Sleep(after)
	w.restart(t)
	if err := <-errc; err == nil {
		w.m.accept(http.MethodPost, "/v1/catalog", "")
	} else {
		t.Logf("the import killed after %s: %v", after, err)
	}
	ctx, cancel := callCtx()
	defer cancel()
	if _, err := w.admin.ImportCatalog(ctx, bulkCatalog(), "application/yaml"); err != nil {
		t.Fatalf("an import right after a kill -9 during one (after %s) failed: %v", after, err)
	}
	w.m.accept(http.MethodPost, "/v1/catalog", "")
}

// server is a check's server: in process (localserver), or a child process
// in the kill variant.
type server interface {
	URL() string
	Shutdown(ctx context.Context) error
}

// killDuringBackup, in the kill variant, kills the server while it streams
// a backup (after a drawn delay: its temporary copy of the store in the
// data directory may be left behind) and starts it again: the new process
// removes every leftover copy at its start, so the data directory holds no
// .backup-* file. Outside the variant it is skipped.
func (w *world) killDuringBackup(t *rapid.T) {
	if !killMode() {
		t.Skip("kills need the kill variant (HEDDLE_OPSMODEL_KILL=1)")
	}
	after := time.Duration(rapid.IntRange(0, 30).Draw(t, "killAfterMs")) * time.Millisecond
	fetcher := client.New(w.super.Endpoint, w.super.Key)
	done := make(chan struct{})
	go func() {
		defer close(done)
		ctx, cancel := callCtx()
		defer cancel()
		_, _ = fetcher.Do(ctx, http.MethodGet, "/v1/backup", nil, nil, "")
	}()
	time.Sleep(after)
	w.restart(t)
	<-done
	left, err := filepath.Glob(filepath.Join(w.cfg.DataDir, ".backup-*"))
	if err != nil || len(left) > 0 {
		t.Fatalf("after a kill -9 during a backup and a start, the data directory holds %v (%v)", left, err)
	}
}
