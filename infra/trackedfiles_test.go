package infra

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestTrackedFilesCheck runs scripts/check-tracked-files.sh (make lint) on
// throwaway repositories: it passes on clean ones and names a tracked
// compiled binary or an unlisted file over 1 MiB.
func TestTrackedFilesCheck(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	script, err := filepath.Abs("../scripts/check-tracked-files.sh")
	require.NoError(t, err)

	setup := func(t *testing.T, files map[string][]byte) string {
		dir := t.TempDir()
		git := func(args ...string) {
			cmd := exec.Command("git", args...)
			cmd.Dir = dir
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, "git %v: %s", args, out)
		}
		git("init", "-q")
		for name, content := range files {
			p := filepath.Join(dir, name)
			require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
			require.NoError(t, os.WriteFile(p, content, 0o755))
		}
		git("add", "-A")
		return dir
	}
	check := func(dir string) (string, error) {
		out, err := exec.Command("bash", script, dir).CombinedOutput()
		return string(out), err
	}
	big := []byte(strings.Repeat("x", 1024*1024+1))

	t.Run("clean repository passes", func(t *testing.T) {
		t.Parallel()
		dir := setup(t, map[string][]byte{"main.go": []byte("package main\n"), "run.sh": []byte("#!/bin/sh\necho hi\n")})
		out, err := check(dir)
		require.NoError(t, err, out)
	})
	t.Run("an ELF binary at any depth fails", func(t *testing.T) {
		t.Parallel()
		dir := setup(t, map[string][]byte{"internal/x/api": append([]byte{0x7f, 'E', 'L', 'F'}, make([]byte, 64)...)})
		out, err := check(dir)
		require.Error(t, err)
		require.Contains(t, out, "tracked binary: internal/x/api")
	})
	t.Run("a Mach-O binary fails", func(t *testing.T) {
		t.Parallel()
		dir := setup(t, map[string][]byte{"heddle": append([]byte{0xcf, 0xfa, 0xed, 0xfe}, make([]byte, 64)...)})
		out, err := check(dir)
		require.Error(t, err)
		require.Contains(t, out, "tracked binary: heddle")
	})
	t.Run("a file over 1 MiB fails unless listed", func(t *testing.T) {
		t.Parallel()
		dir := setup(t, map[string][]byte{"testdata/big.json": big})
		out, err := check(dir)
		require.Error(t, err)
		require.Contains(t, out, "over 1 MiB: testdata/big.json")

		listed := setup(t, map[string][]byte{"testdata/big.json": big, ".tracked-large-files": []byte("# fixtures\ntestdata/big.json\n")})
		out, err = check(listed)
		require.NoError(t, err, out)
	})
	t.Run("this repository passes", func(t *testing.T) {
		t.Parallel()
		out, err := exec.Command("bash", script).CombinedOutput()
		require.NoError(t, err, string(out))
	})
}
