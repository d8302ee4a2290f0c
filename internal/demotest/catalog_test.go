package demotest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/catalog"
	"github.com/heddle-io/heddle/internal/domain"
)

// freeAddress picks a loopback address on which the demo's three ports are
// free: other tests, another heddle or a benchmark may hold some.
func freeAddress(t *testing.T) string {
	t.Helper()
	for range 50 {
		ip := fmt.Sprintf("127.44.%d.%d", rand.IntN(256), 1+rand.IntN(254))
		var held []net.Listener
		for _, port := range []string{"17400", "18080", LBPort} {
			ln, err := net.Listen("tcp", net.JoinHostPort(ip, port))
			if err != nil {
				break
			}
			held = append(held, ln)
		}
		ok := len(held) == 3
		for _, ln := range held {
			ln.Close()
		}
		if ok {
			return ip
		}
	}
	t.Fatal("no loopback address with the demo's ports free")
	return ""
}

// TestDemoScriptsKeepTheActionContract runs the demo catalog's start and
// stop scripts as heddle would (sh, $HOME the node's home) and checks the
// contract docs/architecture.md asks of every action: starting what runs
// and stopping what is stopped succeed and change nothing, stop returns
// only once the process is gone, and a start right after a stop binds the
// port again.
func TestDemoScriptsKeepTheActionContract(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(Catalog)
	require.NoError(t, err)
	doc, err := catalog.DecodeDocument(data)
	require.NoError(t, err)
	home := t.TempDir()
	t.Cleanup(func() { KillProcessesUnder(home) })
	ip := freeAddress(t)
	run := func(s *domain.Service, action domain.Action) string {
		t.Helper()
		// A script that hangs (a lock held by what it started, say)
		// fails the test instead of hanging it.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "sh", "-c", s.Actions[action].Fields["script"])
		cmd.Env = append(os.Environ(), "HOME="+home, "HEDDLE_BIND_IP="+ip, "HEDDLE_HOSTNAME=demo-node")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s %s: %s", s.Name, action, out)
		return string(out)
	}
	pid := func(name string) string {
		data, err := os.ReadFile(filepath.Join(home, name, "pid"))
		require.NoError(t, err, "%s wrote its pid file", name)
		return strings.TrimSpace(string(data))
	}
	listens := func(port string) bool {
		c, err := net.DialTimeout("tcp", net.JoinHostPort(ip, port), time.Second)
		if err == nil {
			c.Close()
		}
		return err == nil
	}
	ports := map[string]string{"kv": "17400", "web": "18080", "lb": LBPort}
	for _, s := range doc.Services {
		run(s, domain.ActionInstall)
	}
	// What configure writes from the layout's macros.
	require.NoError(t, os.WriteFile(filepath.Join(home, "web", "kv"), []byte(ip+":17400\n"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(home, "lb", "backends"), []byte(ip+":18080\n"), 0o600))
	for _, s := range doc.Services {
		t.Run(s.Name, func(t *testing.T) {
			port := ports[s.Name]

			run(s, domain.ActionStart)
			require.True(t, listens(port), "%s listens once its start succeeded", s.Name)
			first := pid(s.Name)
			require.Contains(t, run(s, domain.ActionStart), "already runs")
			require.Equal(t, first, pid(s.Name), "a second start leaves the first process")

			run(s, domain.ActionStop)
			require.False(t, listens(port), "%s is gone once its stop succeeded", s.Name)
			require.NoFileExists(t, filepath.Join(home, s.Name, "pid"))
			run(s, domain.ActionStop) // stopping what is stopped succeeds

			run(s, domain.ActionStart)
			require.True(t, listens(port), "a start right after a stop binds the port again")
			require.NotEqual(t, first, pid(s.Name))

			// A process whose pid file was lost is still this node's: stop
			// finds it by its path.
			require.NoError(t, os.Remove(filepath.Join(home, s.Name, "pid")))
			run(s, domain.ActionStop)
			require.False(t, listens(port), "%s without a pid file is stopped too", s.Name)
		})
	}
}
