package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/stretchr/testify/require"
)

// TestPrunePromptOnATerminal drives `heddle apply --prune` on a real
// pseudo-terminal, as a person at a shell would: Ctrl-C at the prompt and
// "n" delete nothing, "y" deletes what the document no longer declares.
func TestPrunePromptOnATerminal(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	admin := s.tenant("acme")
	s.must(admin, "apply", "-f", "../../docs/examples/catalog.yaml")
	dir := t.TempDir()
	doc := filepath.Join(dir, "gone.yaml")
	require.NoError(t, os.WriteFile(doc, []byte("apiVersion: heddle/v1\nclusters:\n  - {name: gone, template: web, size: 2, services: [web, kv]}\n"), 0o600))
	s.must(admin, "apply", "-f", doc)
	empty := filepath.Join(dir, "empty.yaml")
	require.NoError(t, os.WriteFile(empty, []byte("apiVersion: heddle/v1\nclusters: []\n"), 0o600))
	before := s.clusters(admin)
	require.Len(t, before.Items, 1)

	// answer runs the prune on a terminal, waits for its prompt, types
	// keys, and returns what the terminal showed and the exit error.
	answer := func(keys string) (string, error) {
		cmd := exec.Command(os.Args[0], "--endpoint", "http://"+s.addr, "--key", admin, "apply", "-f", empty, "--prune")
		cmd.Env = append(os.Environ(), runMainEnv+"=1")
		// Ended with the test binary, even when it is killed; pty.Start
		// adds its own session settings to these.
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		tty, err := pty.Start(cmd)
		require.NoError(t, err)
		defer tty.Close()
		var mu sync.Mutex
		var screen bytes.Buffer
		read := make(chan struct{}) // closed once the terminal's output is all read
		go func() {
			defer close(read)
			buf := make([]byte, 4096)
			for {
				n, err := tty.Read(buf)
				mu.Lock()
				screen.Write(buf[:n])
				mu.Unlock()
				if err != nil {
					return
				}
			}
		}()
		shown := func() string { mu.Lock(); defer mu.Unlock(); return screen.String() }
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		// A liveness bound, not a timing assertion: a -race CLI on a loaded
		// machine reaching its prompt.
		deadline := time.After(2 * time.Minute)
		for !strings.Contains(shown(), "[y/N] ") {
			select {
			case err := <-done:
				t.Fatalf("apply --prune ended before it asked (%v):\n%s", err, shown())
			case <-deadline:
				_ = cmd.Process.Kill()
				t.Fatalf("apply --prune never asked:\n%s", shown())
			case <-time.After(20 * time.Millisecond):
			}
		}
		require.Contains(t, shown(), "delete gone (")
		_, err = tty.Write([]byte(keys))
		require.NoError(t, err)
		select {
		case err = <-done:
		case <-deadline:
			_ = cmd.Process.Kill()
			t.Fatalf("apply --prune did not end after %q:\n%s", keys, shown())
		}
		// The command's last words may still be in the terminal when it
		// exits: the reader ends once it has read them all (the terminal
		// answers EIO when no process holds its other side).
		select {
		case <-read:
		case <-deadline:
			t.Fatalf("the terminal's output never ended after %q:\n%s", keys, shown())
		}
		return shown(), err
	}

	out, err := answer("\x03")
	require.Error(t, err, "Ctrl-C ends the command unsuccessfully:\n%s", out)
	require.Equal(t, before, s.clusters(admin), "Ctrl-C at the prompt deletes nothing")

	out, err = answer("n\r")
	require.Error(t, err, out)
	require.Contains(t, out, "the deletes were not confirmed")
	require.Equal(t, before, s.clusters(admin), "no deletes nothing")

	out, err = answer("y\r")
	require.NoError(t, err, out)
	for _, c := range s.clusters(admin).Items {
		require.NotEqual(t, "gone", c.Name, "yes deleted the cluster the document no longer declares:\n%s", out)
	}
}
