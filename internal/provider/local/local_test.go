package local

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/provider"
	"github.com/heddle-io/heddle/internal/provider/providertest"
	"github.com/heddle-io/heddle/internal/secrets"
	"github.com/heddle-io/heddle/internal/sshexec"
	"github.com/stretchr/testify/require"
)

// leakCheck is set in heddle's (the test binary's) environment: a node's
// commands must not see it.
const leakCheck = "AWS_SECRET_ACCESS_KEY"

func TestMain(m *testing.M) {
	os.Setenv(leakCheck, "must-not-reach-nodes")
	os.Exit(m.Run())
}

func clusterKey(t testing.TB) *secrets.SSHKey {
	t.Helper()
	kp, err := sshexec.GenerateKeyPair()
	require.NoError(t, err)
	k, err := secrets.NewSSHKey(kp.PrivateKey)
	require.NoError(t, err)
	return k
}

func setup(t testing.TB) (*Local, string) {
	t.Helper()
	dir := t.TempDir()
	l, err := New(Config{Dir: dir})
	require.NoError(t, err)
	t.Cleanup(l.Close)
	return l, dir
}

func request(key *secrets.SSHKey, nodeID string) provider.Request {
	return provider.Request{
		Tenant: "acme", ClusterID: "c1", Node: domain.Node{ID: nodeID, ClusterID: "c1", Num: 1000},
		Token: "tok-" + nodeID, Hostname: nodeID + ".local", Flavor: "small", Image: "host", Key: key,
	}
}

func testCtx(t testing.TB) context.Context {
	t.Helper()
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

func target(n provider.Node, key *secrets.SSHKey) sshexec.Target {
	return sshexec.Target{
		Node: "n", Address: net.JoinHostPort(n.Addresses[provider.AddressAccess], strconv.Itoa(n.SSHPort)),
		User: n.SSHUser, Key: key.Signer(), HostKey: n.HostKey, NoSudo: n.NoSudo,
	}
}

// login runs a script on the node the way the automator would.
func login(t testing.TB, n provider.Node, key *secrets.SSHKey, script string) (sshexec.Result, error) {
	t.Helper()
	c, err := sshexec.Dial(testCtx(t), target(n, key))
	if err != nil {
		return sshexec.Result{}, err
	}
	defer c.Close()
	return c.Run(testCtx(t), sshexec.Command{Script: script})
}

func TestCreateConfirmRunDelete(t *testing.T) {
	t.Parallel()
	l, _ := setup(t)
	key := clusterKey(t)
	req := request(key, "c1-1000")

	created, err := l.Create(testCtx(t), req)
	require.NoError(t, err)
	addr := created.Addresses[provider.AddressAccess]
	require.True(t, strings.HasPrefix(addr, "127.42."), "each node has a loopback address of its own, got %s", addr)
	other, err := l.Create(testCtx(t), request(key, "c1-1001"))
	require.NoError(t, err)
	require.NotEqual(t, addr, other.Addresses[provider.AddressAccess], "two nodes, two addresses")
	require.NotZero(t, created.SSHPort)
	require.True(t, strings.HasPrefix(created.HostKey, "ssh-ed25519 "))
	require.True(t, created.NoSudo)
	require.Equal(t, "c1-1000.local", created.Hostname)
	require.Equal(t, "small", created.Flavor)
	require.True(t, strings.HasPrefix(created.ProviderID, "local:c1-1000~"))

	req.Node.HostKey = created.HostKey
	confirmed, err := confirm(t, l, req)
	require.NoError(t, err)
	require.Equal(t, created, confirmed)

	res, err := login(t, confirmed, key, `echo "home=$HOME pwd=$(pwd) leak=${`+leakCheck+`:-none}"; touch made-here`)
	require.NoError(t, err)
	home := filepath.Dir(confirmed.WorkDir)
	require.Equal(t, "home="+home+" pwd="+home+" leak=none\n", res.Stdout.Text)
	require.FileExists(t, filepath.Join(home, "made-here"))

	// Another key is refused.
	_, err = login(t, confirmed, clusterKey(t), "true")
	var te *sshexec.TransportError
	require.ErrorAs(t, err, &te)
	require.Equal(t, "authenticate", te.Op)

	require.NoError(t, del(t, l, req))
	require.NoDirExists(t, home)
	_, err = login(t, confirmed, key, "true")
	var unreachable *sshexec.UnreachableError
	require.ErrorAs(t, err, &unreachable)
	require.NoError(t, del(t, l, req), "deleting a deleted node succeeds")
	_, err = confirm(t, l, req)
	require.ErrorContains(t, err, "does not exist")
}

func TestCreateIsIdempotentOnTheToken(t *testing.T) {
	t.Parallel()
	l, _ := setup(t)
	key := clusterKey(t)
	req := request(key, "c1-1000")
	first, err := l.Create(testCtx(t), req)
	require.NoError(t, err)
	again, err := l.Create(testCtx(t), req)
	require.NoError(t, err)
	require.Equal(t, first, again)
	require.Equal(t, 1, l.Nodes())

	other := req
	other.Token = "another-task"
	_, err = l.Create(testCtx(t), other)
	require.ErrorContains(t, err, "made by another create")

	// The same node id in another cluster or tenant is another node.
	elsewhere := req
	elsewhere.ClusterID = "c2"
	n2, err := l.Create(testCtx(t), elsewhere)
	require.NoError(t, err)
	require.NotEqual(t, first.Addresses[provider.AddressAccess], n2.Addresses[provider.AddressAccess])
	require.NotEqual(t, first.HostKey, n2.HostKey)
}

func TestNodesComeBackAfterARestart(t *testing.T) {
	t.Parallel()
	l, dir := setup(t)
	key := clusterKey(t)
	var nodes []provider.Node
	for i := range 3 {
		n, err := l.Create(testCtx(t), request(key, "c1-"+strconv.Itoa(1000+i)))
		require.NoError(t, err)
		_, err = login(t, n, key, "echo kept > state")
		require.NoError(t, err)
		nodes = append(nodes, n)
	}
	l.Close() // heddle stops
	_, err := login(t, nodes[0], key, "true")
	require.Error(t, err)

	restarted, err := New(Config{Dir: dir})
	require.NoError(t, err)
	t.Cleanup(restarted.Close)
	require.NoError(t, restarted.Restore(testCtx(t)))
	require.Equal(t, 3, restarted.Nodes())
	for i, n := range nodes {
		// Same address, same pinned host key, same files.
		res, err := login(t, n, key, "cat state")
		require.NoError(t, err, "node %d", i)
		require.Equal(t, "kept\n", res.Stdout.Text)
		req := request(key, "c1-"+strconv.Itoa(1000+i))
		req.Node.HostKey = n.HostKey
		confirmed, err := confirm(t, restarted, req)
		require.NoError(t, err)
		require.Equal(t, n, confirmed)
	}
	// A repeated create after the restart still finds the node.
	again, err := restarted.Create(testCtx(t), request(key, "c1-1000"))
	require.NoError(t, err)
	require.Equal(t, nodes[0], again)
}

func TestNodeOnDiskStartsWithoutRestore(t *testing.T) {
	t.Parallel()
	l, dir := setup(t)
	key := clusterKey(t)
	req := request(key, "c1-1000")
	n, err := l.Create(testCtx(t), req)
	require.NoError(t, err)
	l.Close()

	fresh, err := New(Config{Dir: dir})
	require.NoError(t, err)
	t.Cleanup(fresh.Close)
	req.Node.HostKey = n.HostKey
	confirmed, err := confirm(t, fresh, req)
	require.NoError(t, err)
	require.Equal(t, n.SSHPort, confirmed.SSHPort)
}

func TestRestoreReportsATakenPort(t *testing.T) {
	t.Parallel()
	l, dir := setup(t)
	key := clusterKey(t)
	n, err := l.Create(testCtx(t), request(key, "c1-1000"))
	require.NoError(t, err)
	_, err = l.Create(testCtx(t), request(key, "c1-1001"))
	require.NoError(t, err)
	l.Close()

	squatter, err := net.Listen("tcp", net.JoinHostPort(n.Addresses[provider.AddressAccess], strconv.Itoa(n.SSHPort)))
	require.NoError(t, err)
	defer squatter.Close()
	restarted, err := New(Config{Dir: dir, RetryInterval: 20 * time.Millisecond})
	require.NoError(t, err)
	t.Cleanup(restarted.Close)
	err = restarted.Restore(testCtx(t))
	require.ErrorContains(t, err, "node c1-1000: listen on port "+strconv.Itoa(n.SSHPort))
	require.ErrorContains(t, err, "another process on this machine holds the node's address", "the error says what happens")
	require.Equal(t, 1, restarted.Nodes(), "the other node runs")
	time.Sleep(100 * time.Millisecond)
	require.Equal(t, 1, restarted.Nodes(), "the node stays down while its address is held")

	// Once the address is free the node comes back, with its host key.
	require.NoError(t, squatter.Close())
	require.Eventually(t, func() bool { return restarted.Nodes() == 2 }, time.Minute, 20*time.Millisecond)
	req := request(key, "c1-1000")
	req.Node.HostKey = n.HostKey
	_, err = confirm(t, restarted, req)
	require.NoError(t, err, "the node answers at its address with its pinned host key")
}

func TestHalfCreatedNodeIsStartedOver(t *testing.T) {
	t.Parallel()
	l, dir := setup(t)
	key := clusterKey(t)
	req := request(key, "c1-1000")
	// A crash after the host key was written but before node.json.
	half := filepath.Join(dir, "nodes", dirName("acme", "c1", "c1-1000"))
	require.NoError(t, os.MkdirAll(filepath.Join(half, "home"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(half, "host_key"), []byte("garbage"), 0o600))
	require.NoError(t, l.Restore(testCtx(t)), "Restore skips it")
	n, err := l.Create(testCtx(t), req)
	require.NoError(t, err)
	req.Node.HostKey = n.HostKey
	_, err = confirm(t, l, req)
	require.NoError(t, err)
}

func TestDeleteKillsRunningCommands(t *testing.T) {
	t.Parallel()
	l, _ := setup(t)
	key := clusterKey(t)
	req := request(key, "c1-1000")
	n, err := l.Create(testCtx(t), req)
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() {
		_, err := login(t, n, key, "sleep 60")
		done <- err
	}()
	time.Sleep(300 * time.Millisecond)
	start := time.Now()
	require.NoError(t, del(t, l, req))
	require.Less(t, time.Since(start), 10*time.Second)
	require.Error(t, <-done)
}

// TestDeleteKillsDetachedProcesses: a process a script detached from its
// session outlives the session and heddle stopping (Close), as a service on
// a machine would, but not the node's delete.
func TestDeleteKillsDetachedProcesses(t *testing.T) {
	t.Parallel()
	l, dir := setup(t)
	key := clusterKey(t)
	req := request(key, "c1-1000")
	n, err := l.Create(testCtx(t), req)
	require.NoError(t, err)
	res, err := login(t, n, key, "setsid nohup sleep 120 > /dev/null 2>&1 < /dev/null & echo $!")
	require.NoError(t, err)
	pid, err := strconv.Atoi(strings.TrimSpace(res.Stdout.Text))
	require.NoError(t, err)
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) }) // whatever happens below

	running, err := l.Processes()
	require.NoError(t, err)
	require.Equal(t, []int{pid}, running)
	l.Close()
	running, err = l.Processes()
	require.NoError(t, err)
	require.Equal(t, []int{pid}, running, "stopping heddle leaves the node's services running")

	restarted, err := New(Config{Dir: dir})
	require.NoError(t, err)
	t.Cleanup(restarted.Close)
	_, err = restarted.Delete(testCtx(t), req)
	require.NoError(t, err, "a node this process never ran is deleted too")
	running, err = restarted.Processes()
	require.NoError(t, err)
	require.Empty(t, running)
}

func TestTypeRegisters(t *testing.T) {
	t.Parallel()
	l, _ := setup(t)
	r := provider.NewRegistry()
	require.NoError(t, r.Register(Type(), l))
	require.Empty(t, r.Validate(&domain.Provider{ProviderType: TypeName}))
	ps := r.Validate(&domain.Provider{ProviderType: TypeName, Fields: map[string]string{"region": "x"}})
	require.Len(t, ps, 1)
	require.Equal(t, domain.CodeUnknownField, ps[0].Code)
}

func TestDirNameSeparatesTenantsAndClusters(t *testing.T) {
	t.Parallel()
	names := map[string]bool{}
	for _, k := range [][3]string{{"a", "c1", "n"}, {"b", "c1", "n"}, {"a", "c2", "n"}, {"a", "c1", "n/../x"}, {"a", "c1\x00n", ""}} {
		d := dirName(k[0], k[1], k[2])
		require.False(t, names[d])
		require.NotContains(t, d, "/")
		names[d] = true
	}
}

// A relative data directory (heddle server's default is .heddle) must give
// nodes absolute homes: the automator refuses relative work directories.
func TestARelativeDirectoryGivesAbsoluteHomes(t *testing.T) {
	t.Parallel()
	cwd, err := os.Getwd()
	require.NoError(t, err)
	abs := t.TempDir()
	rel, err := filepath.Rel(cwd, abs)
	require.NoError(t, err)
	require.False(t, filepath.IsAbs(rel))
	l, err := New(Config{Dir: rel})
	require.NoError(t, err)
	require.Equal(t, abs, l.dir)
}

// TestAddressHeldElsewhereIsSkipped: a listener outside the provider (as
// another heddle process's node would be) holds the SSH port of the
// address the node's name hashes to; the node claims another address and
// works there.
func TestAddressHeldElsewhereIsSkipped(t *testing.T) {
	t.Parallel()
	l, _ := setup(t)
	key := clusterKey(t)
	req := request(key, "held-1000")
	hashed := hostAddress(l.firstCandidate(dirName(req.Tenant, req.ClusterID, req.Node.ID)))
	// Some other test may hold it already; either way it is not ours.
	if squatter, err := net.Listen("tcp", net.JoinHostPort(hashed, strconv.Itoa(SSHPort))); err == nil {
		t.Cleanup(func() { _ = squatter.Close() })
	}

	n, err := l.Create(testCtx(t), req)
	require.NoError(t, err)
	require.NotEqual(t, hashed, n.Addresses[provider.AddressAccess], "the held address is skipped")
	require.Equal(t, SSHPort, n.SSHPort)
	res, err := login(t, n, key, "echo up")
	require.NoError(t, err)
	require.Equal(t, "up\n", res.Stdout.Text)
}

// TestTwoProvidersNeverShareAnAddress: two providers with state of their
// own (two heddle processes on one machine) create a node of the same name,
// so both start from the same hashed address; the second must not take
// the address the first holds.
func TestTwoProvidersNeverShareAnAddress(t *testing.T) {
	t.Parallel()
	first, _ := setup(t)
	second, _ := setup(t)
	key := clusterKey(t)
	a, err := first.Create(testCtx(t), request(key, "twin-1000"))
	require.NoError(t, err)
	b, err := second.Create(testCtx(t), request(key, "twin-1000"))
	require.NoError(t, err)
	require.NotEqual(t, a.Addresses[provider.AddressAccess], b.Addresses[provider.AddressAccess])
	for _, n := range []provider.Node{a, b} {
		res, err := login(t, n, key, "echo up")
		require.NoError(t, err)
		require.Equal(t, "up\n", res.Stdout.Text)
	}
}

// confirm makes one Confirm call, the last for such a node.
func confirm(t *testing.T, l *Local, req provider.Request) (provider.Node, error) {
	t.Helper()
	return providertest.Once(t, testCtx(t), req, l.Confirm)
}

// del makes one Delete call, the last for such a node.
func del(t *testing.T, l *Local, req provider.Request) error {
	t.Helper()
	_, err := providertest.Once(t, testCtx(t), req, l.Delete)
	return err
}

// TestDeleteOfANodeNeverMade: a node whose create failed has no directory
// and no server; its delete succeeds, so a rollback or a plain delete of a
// cluster that has one ends (issue 28).
func TestDeleteOfANodeNeverMade(t *testing.T) {
	t.Parallel()
	l, _ := setup(t)
	p, err := l.Delete(testCtx(t), provider.Request{Tenant: "acme", ClusterID: "c1", Node: domain.Node{ID: "c1-1000", ClusterID: "c1", Num: 1000}})
	require.NoError(t, err)
	require.False(t, p.Pending())
	require.Zero(t, l.Nodes())
}
