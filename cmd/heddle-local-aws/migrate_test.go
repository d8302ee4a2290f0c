package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/access"
	"github.com/heddle-io/heddle/internal/provider/providertest"
)

// localServer is a `heddle server` beside the local AWS topology: the
// machine a tenant moves from.
type localServer struct {
	t        *testing.T
	endpoint string
	super    string
	dir      string
}

func startLocalServer(t *testing.T) *localServer {
	t.Helper()
	// The server listens on a port the kernel picks and says which in its
	// welcome line: a port the test picked and closed could be taken before
	// the server binds it (by any loopback connection, or another test's
	// server, which would then answer the status probe).
	s := &localServer{t: t, super: access.NewKeySecret(), dir: t.TempDir()}
	logPath := filepath.Join(s.dir, "server.log")
	log, err := os.Create(logPath)
	require.NoError(t, err)
	defer log.Close()
	cmd := exec.Command(filepath.Join(bin, "heddle"), "server", "--data-dir", filepath.Join(s.dir, "data"), "--listen", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), "HEDDLE_BOOTSTRAP_KEY="+s.super)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	require.NoError(t, cmd.Start())
	readLog := func() string {
		data, _ := os.ReadFile(logPath)
		return string(data)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("heddle server's log:\n%s", readLog())
		}
	})
	// A liveness bound: a server starting on a loaded machine.
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if s.endpoint == "" {
			if m := servingURL.FindStringSubmatch(readLog()); m != nil {
				s.endpoint = m[1]
			}
		}
		if s.endpoint != "" {
			resp, err := testHTTP.Get(s.endpoint + "/v1/status")
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					return s
				}
			}
		}
		require.True(t, time.Now().Before(deadline), "heddle server did not answer:\n%s", readLog())
		time.Sleep(50 * time.Millisecond)
	}
}

// servingURL finds the server's URL in its welcome line ("heddle <version>
// serving http://<address>/v1 ...").
var servingURL = regexp.MustCompile(`serving (http://[^/\s]+)/v1`)

// heddle runs the CLI against the local server with key and returns its
// stdout and stderr together.
func (s *localServer) heddle(key string, args ...string) (string, error) {
	stdout, stderr, err := s.run(key, args...)
	return stdout + stderr, err
}

func (s *localServer) run(key string, args ...string) (string, string, error) {
	cmd := exec.Command(filepath.Join(bin, "heddle"), args...)
	cmd.Env = append(os.Environ(), "HEDDLE_ENDPOINT="+s.endpoint, "HEDDLE_KEY="+key, "HEDDLE_CONFIG="+filepath.Join(s.dir, "cli.yaml"))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err != nil {
		err = fmt.Errorf("heddle %s: %v\n%s%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String(), stderr.String(), err
}

// must runs the CLI and returns its stdout.
func (s *localServer) must(key string, args ...string) string {
	s.t.Helper()
	out, _, err := s.run(key, args...)
	require.NoError(s.t, err)
	return out
}

func adminKeyOf(t *testing.T, created string) string {
	t.Helper()
	var tenant struct {
		AdminKey struct {
			Secret string `json:"secret"`
		} `json:"adminKey"`
	}
	require.NoError(t, json.Unmarshal([]byte(created), &tenant), created)
	return tenant.AdminKey.Secret
}

// TestMigrateFromALocalServer moves tenant acme from a `heddle server`,
// where a cluster runs on the static provider's OpenSSH hosts and another
// on the local provider, to the AWS topology with `heddle migrate`. The
// first run stops half way (the target's node quota is too small for the
// cluster, after the users and the catalog were written); the quota is
// raised and the same command finishes; a third run writes nothing. The
// cluster is then expanded and deleted from AWS with the key ann had on the
// local server, through the hosts' login keys and the cluster's SSH key,
// which the target sealed under its KMS key; every host is back FREE. The
// local-provider cluster was skipped with the reason.
func TestMigrateFromALocalServer(t *testing.T) {
	t.Parallel()
	d := setup(t)
	need(t, "HEDDLE_SSH_HOSTS", "scripts/sshd-hosts.sh")
	src := startLocalServer(t)

	ann := adminKeyOf(t, src.must(src.super, "tenants", "create", "acme", "--max-clusters", "3", "--max-nodes", "10", "--workers", "4", "--admin", "ann", "-o", "json"))
	src.must(ann, "apply", "-f", "testdata/static-catalog.yaml")
	localCatalog := filepath.Join(src.dir, "local.yaml")
	require.NoError(t, os.WriteFile(localCatalog, []byte(localProviderCatalog), 0o600))
	src.must(ann, "apply", "-f", localCatalog)
	hosts := providertest.StartOpenSSH(t)
	require.GreaterOrEqual(t, len(hosts.Hosts), 3)
	keyFile := filepath.Join(src.dir, "host.key")
	require.NoError(t, os.WriteFile(keyFile, hosts.KeyPEM, 0o600))
	for i, h := range hosts.Hosts[len(hosts.Hosts)-3:] {
		addr, port, _ := strings.Cut(h.Address, ":")
		src.must(ann, "hosts", "add", "rack", fmt.Sprintf("m%d", i), "--address", addr, "--port", port, "--user", hosts.User,
			"--key-file", keyFile, "--host-key", h.HostKey)
	}
	create := func(name, template, size string) string {
		var created struct {
			Cluster struct {
				ID string `json:"id"`
			} `json:"cluster"`
			Job struct {
				ID string `json:"id"`
			} `json:"job"`
		}
		require.NoError(t, json.Unmarshal([]byte(src.must(ann, "clusters", "create", name, "--template", template, "--size", size, "-o", "json")), &created))
		src.must(ann, "jobs", "watch", created.Cluster.ID, created.Job.ID)
		return created.Cluster.ID
	}
	pair := create("pair", "pair", "2")
	dev := create("dev", "solo", "1")

	// The target's tenant, made by its superadmin, with too few nodes.
	target := adminKeyOf(t, d.mustHeddle("tenants", "create", "acme", "--max-clusters", "3", "--max-nodes", "1", "--workers", "4", "--admin", "ops", "-o", "json"))
	// docs/operations.md's command, as written, from a directory whose
	// bin/heddle is the heddle under test.
	line := migrateLine(t)
	work := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(work, "bin"), 0o700))
	require.NoError(t, os.Symlink(filepath.Join(bin, "heddle"), filepath.Join(work, "bin", "heddle")))
	migrate := func() (string, error) {
		cmd := exec.Command("bash", "-c", line)
		cmd.Dir = work
		cmd.Env = append(os.Environ(), "HEDDLE_ENDPOINT="+src.endpoint, "HEDDLE_KEY="+ann, "HEDDLE_TO_KEY="+target,
			"AWS_ENDPOINT="+d.ready.Endpoint, "HEDDLE_CONFIG="+filepath.Join(work, "none.yaml"))
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := src.heddle(ann, "migrate", "--to", "http://127.0.0.1:1", "--to-key", target)
	require.Error(t, err)
	require.Contains(t, out, "the target (--to http://127.0.0.1:1)")

	out, err = migrate()
	require.Error(t, err, "the first run stops at the quota: %s", out)
	require.Contains(t, out, "stopped after writing")
	require.Contains(t, out, "raise it (heddle tenants update acme --max-clusters N --max-nodes N")
	// As the error says, with the target's superadmin key (d.key).
	require.Contains(t, d.mustHeddle("tenants", "update", "acme", "--max-nodes", "10"), "updated tenant acme")
	out, err = migrate()
	require.NoError(t, err, out)
	require.Contains(t, out, "already there")
	require.Contains(t, out, "skipped cluster "+dev)
	require.Contains(t, out, "cannot move")
	out, err = migrate()
	require.NoError(t, err, out)
	require.Contains(t, out, "imported: 0 records written")
	require.NotContains(t, out, "PRIVATE KEY", "no secret is printed")

	// From now on the cluster is managed from AWS, with ann's own key.
	d.key = ann
	require.Equal(t, "ACTIVE", d.clusterStatus(pair))
	d.mustHeddle("clusters", "expand", pair, "--count", "1", "--wait")
	require.Equal(t, "ACTIVE", d.clusterStatus(pair))
	d.mustHeddle("clusters", "delete", pair, "--wait")
	require.Equal(t, "TERMINATED", d.clusterStatus(pair))
	var listed struct {
		Items []struct {
			ID     string `json:"id"`
			Status string `json:"status"`
		} `json:"items"`
	}
	out = d.mustHeddle("hosts", "list", "rack", "-o", "json")
	require.NoError(t, json.Unmarshal([]byte(out), &listed), out)
	require.Len(t, listed.Items, 3)
	for _, h := range listed.Items {
		require.Equal(t, "FREE", h.Status, "host %s wiped and back in the pool", h.ID)
	}
	_, err = d.heddle("clusters", "show", dev)
	require.Error(t, err, "the local-provider cluster did not move")
}

// localProviderCatalog adds a template on the local provider, whose nodes
// live inside the heddle server.
const localProviderCatalog = `apiVersion: heddle/v1
providers:
  - name: here
    providerType: local
hardwareTypes:
  - name: tiny
    providerMap:
      here: {flavor: small}
imageTypes:
  - name: plain
    providerMap:
      here: {image: host}
clusterTemplates:
  - name: solo
    compatibility:
      services: [base]
    defaults:
      services: [base]
      provider: here
      hardwareType: tiny
      imageType: plain
    constraints:
      size: {min: 1, max: 3}
`

// migrateLine is the migrate command of docs/operations.md, without its
// comment.
func migrateLine(t *testing.T) string {
	t.Helper()
	doc, err := os.ReadFile("../../docs/operations.md")
	require.NoError(t, err)
	for _, line := range strings.Split(string(doc), "\n") {
		if strings.HasPrefix(line, "bin/heddle migrate ") {
			if i := strings.Index(line, " #"); i >= 0 {
				line = line[:i]
			}
			return strings.TrimSpace(line)
		}
	}
	t.Fatal("docs/operations.md shows no bin/heddle migrate command")
	return ""
}
