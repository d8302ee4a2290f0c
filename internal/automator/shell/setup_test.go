package shell

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/heddle-io/heddle/internal/automator"
	"github.com/heddle-io/heddle/internal/catalog"
	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/provider"
	"github.com/heddle-io/heddle/internal/provider/local"
	"github.com/heddle-io/heddle/internal/provider/providertest"
	"github.com/heddle-io/heddle/internal/secrets"
	"github.com/heddle-io/heddle/internal/sshexec"
	"github.com/heddle-io/heddle/internal/sshexec/sshtest"
	"github.com/heddle-io/heddle/internal/store/boltstore"
	"github.com/stretchr/testify/require"
)

// backend is a set of nodes the same tests run against: in-process SSH
// servers always, the OpenSSH servers of scripts/sshd-hosts.sh when they
// run (their user is not root, so actions go through sudo).
type backend struct {
	name    string
	targets []sshexec.Target
	servers []*sshtest.Server // in-process only
	sudo    bool              // actions run through sudo
}

func eachBackend(t *testing.T, n int, fn func(t *testing.T, b backend)) {
	t.Helper()
	t.Run("inprocess", func(t *testing.T) {
		t.Parallel()
		fn(t, inProcess(t, n))
	})
	t.Run("local", func(t *testing.T) {
		t.Parallel()
		fn(t, localNodes(t, n))
	})
	t.Run("openssh", func(t *testing.T) {
		t.Parallel()
		fn(t, openSSH(t, n))
	})
}

// localNodes are nodes of the local provider: SSH servers inside this
// process, as the embedded server gives a new user.
func localNodes(t testing.TB, n int) backend {
	t.Helper()
	l, err := local.New(local.Config{Dir: t.TempDir()})
	require.NoError(t, err)
	t.Cleanup(l.Close)
	kp, err := sshexec.GenerateKeyPair()
	require.NoError(t, err)
	key, err := secrets.NewSSHKey(kp.PrivateKey)
	require.NoError(t, err)
	b := backend{name: "local"}
	for i := range n {
		id := fmt.Sprintf("c1-%d", 1000+i)
		node, err := l.Create(context.Background(), provider.Request{Tenant: "acme", ClusterID: "c1", Node: domain.Node{ID: id}, Token: "tok-" + id, Key: key})
		require.NoError(t, err)
		b.targets = append(b.targets, sshexec.Target{
			Node: id, Address: net.JoinHostPort(node.Addresses[provider.AddressAccess], strconv.Itoa(node.SSHPort)),
			User: node.SSHUser, Key: key.Signer(), HostKey: node.HostKey, NoSudo: node.NoSudo,
		})
	}
	return b
}

func inProcess(t testing.TB, n int) backend {
	t.Helper()
	kp, err := sshexec.GenerateKeyPair()
	require.NoError(t, err)
	signer, err := sshexec.ParsePrivateKey(kp.PrivateKey)
	require.NoError(t, err)
	root := os.Geteuid() == 0
	b := backend{name: "inprocess"}
	for i := range n {
		s := sshtest.Start(t, "127.0.0.1:0", nil, signer.PublicKey())
		b.servers = append(b.servers, s)
		b.targets = append(b.targets, sshexec.Target{
			Node: fmt.Sprintf("c1-%d", 1000+i), Address: s.Addr, User: map[bool]string{true: "root", false: "tester"}[root],
			Key: signer, HostKey: sshexec.FormatPublicKey(s.HostKey.PublicKey()), NoSudo: !root,
		})
	}
	return b
}

func openSSH(t testing.TB, n int) backend {
	t.Helper()
	hosts := providertest.StartOpenSSH(t)
	if len(hosts.Hosts) < n {
		t.Skipf("%d OpenSSH hosts run; this test needs %d", len(hosts.Hosts), n)
	}
	b := backend{name: "openssh", sudo: true}
	for i, h := range hosts.Hosts[:n] {
		b.targets = append(b.targets, sshexec.Target{
			Node: fmt.Sprintf("c1-%d", 1000+i), Address: h.Address, User: hosts.User, Key: hosts.Key, HostKey: h.HostKey,
		})
	}
	return b
}

func newShell(t testing.TB, cfg Config) *Shell {
	t.Helper()
	s := New(cfg)
	t.Cleanup(s.Close)
	return s
}

// newScripts is a catalog, the automator's source of script resources.
func newScripts(t testing.TB) *catalog.Catalog {
	t.Helper()
	st, err := boltstore.Open(filepath.Join(t.TempDir(), "store.db"), boltstore.Options{NoSync: true})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	return catalog.New(st, nil)
}

// workDir is a fresh directory for the automator's files. Every node of
// both backends is this machine, so a temporary directory serves.
func workDir(t testing.TB) string {
	t.Helper()
	d := filepath.Join(t.TempDir(), "heddle")
	return d
}

func request(target sshexec.Target, dir string, fields map[string]string) automator.Request {
	self := automator.NodeInfo{ID: target.Node, Num: 1000, Hostname: target.Node + ".local",
		Addresses: map[string]string{"access_v4": "127.0.0.1", "bind_v4": "127.0.0.1"}, Services: []string{"zookeeper"}}
	return automator.Request{
		Context: automator.TaskContext{
			Tenant: "acme", ClusterID: "c1", JobID: "c1-job-1", TaskID: "install:zookeeper:" + target.Node, Attempt: 1,
			Action: domain.ActionInstall, Service: "zookeeper", Fields: fields,
			Config: json.RawMessage(`{"zookeeper":{"port":2181},"password":"cfg-secret-123"}`),
			Node:   self, Nodes: []automator.NodeInfo{self},
		},
		Target:  target,
		WorkDir: dir,
		Timeout: 30 * time.Second,
		Secrets: []string{"cfg-secret-123"},
	}
}

func runCtx(t testing.TB, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
