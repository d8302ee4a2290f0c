package static

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestKeyRemovalNeverEmptiesTheFile: while a node's line is added and
// removed again and again, a reader standing in for sshd (which reads
// authorized_keys at every login) always finds the other lines. A rewrite
// in place truncates the file first, so a login at that moment failed with
// "authenticate failed" (seen in the local AWS figures' deletes).
func TestKeyRemovalNeverEmptiesTheFile(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("awk"); err != nil {
		t.Skip("needs awk")
	}
	home := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(home, ".ssh"), 0o700))
	f := filepath.Join(home, ".ssh", "authorized_keys")
	const operator = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOperatorKeyOperatorKeyOperatorKeyOperat operator@laptop"
	require.NoError(t, os.WriteFile(f, []byte(operator+"\n"), 0o600))
	m := marker("acme", "c1", "n1")
	line := "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAINodeKeyNodeKeyNodeKeyNodeKeyNodeKeyNodeKeyNo" + m

	run := func(script string) {
		cmd := exec.CommandContext(context.Background(), "sh", "-c", script)
		cmd.Env = append(os.Environ(), "HOME="+home)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
	}

	var done atomic.Bool
	var misses atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for !done.Load() {
			data, err := os.ReadFile(f)
			if err != nil || !strings.Contains(string(data), operator) {
				misses.Add(1)
			}
		}
	}()
	for range 150 {
		run(addKeyScript(line, ""))
		run(removeKeyScript(m))
	}
	done.Store(true)
	wg.Wait()

	require.Zero(t, misses.Load(), "a reader found the file without the operator's line")
	data, err := os.ReadFile(f)
	require.NoError(t, err)
	require.Equal(t, operator+"\n", string(data), "the node's line is gone, the rest kept")
	fi, err := os.Stat(f)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	leftovers, err := filepath.Glob(f + ".heddle.*")
	require.NoError(t, err)
	require.Empty(t, leftovers)
}
