package motoserver

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// Two servers at once get two ports, answer, and are gone after Stop: the
// process group is killed, so nothing listens or runs any more.
func TestStartStop(t *testing.T) {
	t.Parallel()
	a, b := StartForTest(t), StartForTest(t)
	require.NotEqual(t, a.URL, b.URL)
	for _, s := range []*Server{a, b} {
		resp, err := http.Get(s.URL + "/moto-api/data.json")
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
	}
	pid := a.cmd.Process.Pid
	a.Stop()
	_, err := http.Get(a.URL + "/moto-api/data.json")
	require.Error(t, err, "moto_server still answers after Stop")
	require.ErrorIs(t, syscall.Kill(pid, 0), syscall.ESRCH, "moto_server's process is still there")
}

// The interpreter found imports moto: the one the server and heddle's
// scripts run under.
func TestPythonImportsMoto(t *testing.T) {
	t.Parallel()
	py := RequirePython(t)
	out, err := exec.Command(py, "-c", "import moto; print(moto.__version__)").CombinedOutput()
	require.NoError(t, err, string(out))
	require.NotEmpty(t, strings.TrimSpace(string(out)))
}

// Debian's python3 first on PATH (as after .ci/run installs it) does not
// hide the interpreter that has moto.
func TestFindPythonPastDebians(t *testing.T) {
	py := RequirePython(t)
	dir := t.TempDir()
	require.NoError(t, os.Symlink("/usr/bin/python3", filepath.Join(dir, "python3")))
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("HEDDLE_PYTHON", "")
	got, err := findPython()
	require.NoError(t, err)
	require.NoError(t, imports(got))
	// One interpreter may go by several names (pyenv's bin/python and
	// bin/python3, as CI's HEDDLE_PYTHON and the shim's choice name it):
	// compare the files they lead to.
	want, err := os.Stat(executable(py))
	require.NoError(t, err)
	found, err := os.Stat(got)
	require.NoError(t, err)
	require.True(t, os.SameFile(want, found), "found %s, not the interpreter %s", got, executable(py))
}

// BenchmarkStart is what a test pays for a moto_server of its own: from
// the process's start to its first answer.
func BenchmarkStart(b *testing.B) {
	RequirePython(b)
	for b.Loop() {
		s, err := Start(b.Context(), nil)
		require.NoError(b, err)
		s.Stop()
	}
}
