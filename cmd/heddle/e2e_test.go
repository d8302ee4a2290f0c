package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/heddle-io/heddle/internal/demotest"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/access"
)

// The end-to-end tests run `heddle server` as a real process (this test
// binary, re-executed as heddle: see TestMain) and drive it through the CLI's
// own commands, so a SIGKILL is a real one.

const runMainEnv = "HEDDLE_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(runMainEnv) == "1" {
		main()
		return
	}
	os.Exit(m.Run())
}

type server struct {
	t       *testing.T
	dir     string
	addr    string
	super   string
	cmd     *exec.Cmd
	logPath string
}

func newServer(t *testing.T) *server {
	t.Helper()
	s := &server{t: t, dir: t.TempDir(), super: access.NewKeySecret()}
	s.logPath = filepath.Join(s.dir, "server.log")
	t.Cleanup(func() {
		s.kill(syscall.SIGKILL)
		// Nothing the nodes started may outlive the test.
		demotest.KillProcessesUnder(s.dir)
		if t.Failed() {
			if log, err := os.ReadFile(s.logPath); err == nil {
				t.Logf("server log:\n%s", lastLines(string(log), 60))
			}
		}
	})
	s.start()
	return s
}

func lastLines(s string, lines int) string {
	parts := strings.Split(s, "\n")
	if len(parts) > lines {
		parts = parts[len(parts)-lines:]
	}
	return strings.Join(parts, "\n")
}

// start runs heddle server on the server's data directory and waits until
// it answers. The first start listens on a port the kernel picks and reads
// it from the server's welcome line; a restart takes the same address back
// (a running `events --follow` reconnects there). A port picked by the test
// and closed before the server binds it could be taken in between (any
// loopback connection's ephemeral port, another test's server, which would
// then answer the status probe), or stay bound while a fork elsewhere in
// this process held the closed listener.
func (s *server) start() {
	s.t.Helper()
	log, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	require.NoError(s.t, err)
	defer log.Close()
	from, err := log.Seek(0, io.SeekEnd)
	require.NoError(s.t, err)
	listen := s.addr
	if listen == "" {
		listen = "127.0.0.1:0"
	}
	cmd := exec.Command(os.Args[0], "server", "--data-dir", filepath.Join(s.dir, "data"), "--listen", listen)
	cmd.Env = append(os.Environ(), runMainEnv+"=1", "HEDDLE_BOOTSTRAP_KEY="+s.super)
	// t.Cleanup kills the server, but not when the test binary itself is
	// killed (a -timeout, a killed go test): the kernel ends it then.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	cmd.Stdout, cmd.Stderr = log, log
	require.NoError(s.t, cmd.Start())
	s.cmd = cmd
	// A liveness bound: a -race server starting on a loaded machine.
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if s.addr == "" {
			s.addr = servingAddress(s.t, s.logPath, from)
		}
		if s.addr != "" {
			resp, err := testHTTP.Get("http://" + s.addr + "/v1/status")
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					return
				}
			}
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("heddle server did not answer on %q", s.addr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// servingAddress is the address in the welcome line ("heddle <version>
// serving http://<address>/v1 ...") the server wrote to its log after
// offset from, or "" while there is none.
func servingAddress(t *testing.T, logPath string, from int64) string {
	t.Helper()
	data, err := os.ReadFile(logPath)
	require.NoError(t, err)
	if int64(len(data)) < from {
		return ""
	}
	m := servingLine.FindSubmatch(data[from:])
	if m == nil {
		return ""
	}
	return string(m[1])
}

var servingLine = regexp.MustCompile(`serving http://([^/\s]+)/v1`)

// kill sends sig and waits for the process to end; it returns its exit error.
func (s *server) kill(sig syscall.Signal) error {
	if s.cmd == nil || s.cmd.Process == nil {
		return nil
	}
	_ = s.cmd.Process.Signal(sig)
	err := s.cmd.Wait()
	s.cmd = nil
	return err
}

// cli runs a heddle command against the server with key and returns its
// exit code, stdout and stderr.
func (s *server) cli(key string, args ...string) result {
	s.t.Helper()
	var out, errOut bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	args = append([]string{"--endpoint", "http://" + s.addr, "--key", key}, args...)
	code := run(ctx, newRootCommand(), args, strings.NewReader(""), &out, &errOut)
	return result{code, out.String(), errOut.String()}
}

func (s *server) must(key string, args ...string) string {
	s.t.Helper()
	r := s.cli(key, args...)
	require.Zero(s.t, r.code, "heddle %s\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.stdout, r.stderr)
	return r.stdout
}

func (s *server) tenant(id string) (adminKey string) {
	s.t.Helper()
	var created struct {
		AdminKey struct {
			Secret string `json:"secret"`
		} `json:"adminKey"`
	}
	out := s.must(s.super, "tenants", "create", id, "--max-clusters", "3", "--max-nodes", "12", "--workers", "4", "--admin", "ann", "-o", "json")
	require.NoError(s.t, json.Unmarshal([]byte(out), &created))
	require.NotEmpty(s.t, created.AdminKey.Secret)
	return created.AdminKey.Secret
}

type shownCluster struct {
	ID       string          `json:"id"`
	Status   string          `json:"status"`
	Nodes    []demotest.Node `json:"nodes"`
	Progress struct {
		JobID  string `json:"jobId"`
		Status string `json:"status"`
		Done   int    `json:"done"`
		Total  int    `json:"total"`
	} `json:"progress"`
}

func (s *server) show(key, id string) shownCluster {
	s.t.Helper()
	var c shownCluster
	require.NoError(s.t, json.Unmarshal([]byte(s.must(key, "clusters", "show", id, "-o", "json")), &c))
	return c
}

func (s *server) createdID(out string) (cluster, job string) {
	s.t.Helper()
	var res struct {
		Cluster struct{ ID string } `json:"cluster"`
		Job     struct{ ID string } `json:"job"`
	}
	require.NoError(s.t, json.Unmarshal([]byte(out), &res), out)
	return res.Cluster.ID, res.Job.ID
}

func answerers(t *testing.T, c shownCluster, n int) map[string]bool {
	t.Helper()
	return demotest.Answerers(t, demotest.LBAddress(c.Nodes), n)
}

func TestEndToEndThroughTheCLI(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	admin := s.tenant("acme")

	applied := s.must(admin, "apply", "-f", "../../docs/examples/catalog.yaml")
	require.Contains(t, applied, "created")
	again := s.must(admin, "apply", "-f", "../../docs/examples/catalog.yaml")
	require.Contains(t, again, "0 created, 0 updated, 8 unchanged", "applying twice changes nothing")

	dry := s.must(admin, "clusters", "create", "shop", "--template", "web", "--size", "3", "--dry-run", "-o", "json")
	require.Contains(t, dry, `"preview"`)
	var list struct {
		Items []json.RawMessage `json:"items"`
	}
	require.NoError(t, json.Unmarshal([]byte(s.must(admin, "clusters", "list", "--all", "-o", "json")), &list))
	require.Empty(t, list.Items, "a dry run creates nothing")

	id, job := s.createdID(s.must(admin, "clusters", "create", "shop", "--template", "web", "--size", "3", "-o", "json"))
	watched := s.must(admin, "jobs", "watch", id, job)
	require.Contains(t, watched, "SUCCEEDED")
	c := s.show(admin, id)
	require.Equal(t, "ACTIVE", c.Status)
	require.Len(t, answerers(t, c, 6), 2)

	s.must(admin, "clusters", "expand", id, "--count", "2", "--wait")
	c = s.show(admin, id)
	require.Len(t, c.Nodes, 5)
	require.Len(t, answerers(t, c, 12), 4, "the load balancer reaches the new web nodes")

	table := s.must(admin, "clusters", "show", id)
	require.Contains(t, table, "ACTIVE")

	s.must(admin, "clusters", "delete", id, "--wait")
	require.Equal(t, "TERMINATED", s.show(admin, id).Status)

	// Graceful shutdown: SIGTERM ends the server with status 0.
	require.NoError(t, s.kill(syscall.SIGTERM))
}

// slowCatalog has one service whose install takes a while, and nothing
// that runs in the background: a SIGKILLed server leaves no daemon behind.
const slowCatalog = `apiVersion: heddle/v1
providers:
  - {name: local, providerType: local}
hardwareTypes:
  - {name: small, providerMap: {local: {flavor: small}}}
imageTypes:
  - {name: debian, providerMap: {local: {image: host}}}
services:
  - name: slow
    actions:
      install: {type: shell, fields: {script: "sleep 4; echo installed > \"$HOME/installed\""}}
      configure: {type: shell, fields: {script: "test -f \"$HOME/installed\" && echo configured"}}
      start: {type: shell, fields: {script: "echo started"}}
clusterTemplates:
  - name: slow
    compatibility: {services: [slow]}
    defaults: {services: [slow], provider: local, hardwareType: small, imageType: debian}
    constraints: {size: {min: 1, max: 10}}
`

func TestServerKilledDuringCreateFinishesTheJobAfterRestart(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	admin := s.tenant("acme")
	catalog := filepath.Join(s.dir, "slow.yaml")
	require.NoError(t, os.WriteFile(catalog, []byte(slowCatalog), 0o600))
	s.must(admin, "apply", "-f", catalog)

	id, job := s.createdID(s.must(admin, "clusters", "create", "slow", "--template", "slow", "--size", "4", "-o", "json"))
	// Kill it while the installs run: nodes exist, tasks are RUNNING, and
	// the configures and starts wait behind them.
	waitInstalling(t, s, admin, id, job)
	err := s.kill(syscall.SIGKILL)
	require.Error(t, err, "the server was killed, not stopped")

	s.start()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		c := s.show(admin, id)
		if c.Progress.Status == "SUCCEEDED" {
			require.Equal(t, "ACTIVE", c.Status)
			require.Equal(t, c.Progress.Total, c.Progress.Done)
			break
		}
		require.NotContains(t, []string{"FAILED", "ABORTED"}, c.Progress.Status, s.must(admin, "jobs", "show", id, job))
		require.True(t, time.Now().Before(deadline), "the job did not finish after the restart: %+v", c.Progress)
		time.Sleep(200 * time.Millisecond)
	}
	require.Contains(t, s.must(admin, "jobs", "show", id, job), "SUCCEEDED")
	s.must(admin, "clusters", "delete", id, "--wait")
}

// TestScriptResourcesThroughTheCLI: apply -f uploads the script a document
// names by file, a cluster runs it, push makes a new version, show prints
// either, and delete is refused while a service runs it.
func TestScriptResourcesThroughTheCLI(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	admin := s.tenant("acme")

	applied := s.must(admin, "apply", "-f", "../../docs/examples/hello-scripts.yaml")
	require.Contains(t, applied, "created  scripts/hello-install")
	again := s.must(admin, "apply", "-f", "../../docs/examples/hello-scripts.yaml")
	require.Contains(t, again, "0 created, 0 updated, 6 unchanged")
	file, err := os.ReadFile("../../docs/examples/scripts/hello-install.sh")
	require.NoError(t, err)
	require.Equal(t, string(file), s.must(admin, "scripts", "show", "hello-install"))
	require.Contains(t, s.must(admin, "scripts", "list"), "hello-install  1 ")

	id, job := s.createdID(s.must(admin, "clusters", "create", "greet", "--template", "hello", "--size", "2", "-o", "json"))
	require.Contains(t, s.must(admin, "jobs", "watch", id, job), "SUCCEEDED")

	v2 := filepath.Join(t.TempDir(), "v2.sh")
	require.NoError(t, os.WriteFile(v2, append(file, "echo v2\n"...), 0o600))
	require.Contains(t, s.must(admin, "scripts", "push", "hello-install", v2), "script hello-install version 2")
	require.Contains(t, s.must(admin, "scripts", "push", "hello-install", v2), "version 2", "the same content is no new version")
	require.Equal(t, string(file), s.must(admin, "scripts", "show", "hello-install", "--version", "1"))
	versions := s.must(admin, "scripts", "versions", "hello-install")
	require.Len(t, strings.Split(strings.TrimSpace(versions), "\n"), 3, "a header and two versions:\n%s", versions)

	refused := s.cli(admin, "scripts", "delete", "hello-install")
	require.Equal(t, 1, refused.code)
	require.Contains(t, refused.stderr, "referenced by services/hello")

	s.must(admin, "clusters", "delete", id, "--wait")

	// Who did all that: the audit names each change, the refused one too.
	trail := s.must(admin, "audit", "--all")
	require.Contains(t, trail, "PUT /v1/scripts/hello-install")
	require.Contains(t, trail, "DELETE /v1/scripts/hello-install")
	require.Contains(t, trail, "refused 409")
	require.Contains(t, trail, "DELETE /v1/clusters/"+id)
	require.NotContains(t, trail, "GET /v1/", "reads are not audited")

	// What the cluster used, from create to delete.
	used := s.must(admin, "usage", "--group-by", "template", "--step", "hour", "--from", time.Now().Add(-time.Hour).UTC().Format(time.RFC3339))
	require.Contains(t, used, "by template, per hour")
	require.Regexp(t, `(?m)^hello\s+0\.\d\d`, used)
}
