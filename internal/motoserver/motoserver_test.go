package motoserver

import (
	"net/http"
	"os/exec"
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
