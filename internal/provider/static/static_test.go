package static

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/provider"
	"github.com/heddle-io/heddle/internal/provider/providertest"
	"github.com/heddle-io/heddle/internal/secrets"
	"github.com/heddle-io/heddle/internal/sshexec"
	"github.com/heddle-io/heddle/internal/sshexec/sshtest"
	"github.com/heddle-io/heddle/internal/store/boltstore"
	"github.com/stretchr/testify/require"
)

// home is HOME for this test binary: the in-process SSH servers run their
// commands as this process, so the provider's authorized_keys edits land
// here and not in the real user's ~/.ssh.
var home string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "heddle-static-home-")
	if err != nil {
		panic(err)
	}
	home = dir
	os.Setenv("HOME", dir)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

type fixture struct {
	pool    *Pool
	static  *Static
	keyring *secrets.Keyring
}

func setup(t testing.TB) fixture {
	t.Helper()
	st, err := boltstore.Open(filepath.Join(t.TempDir(), "store.db"), boltstore.Options{NoSync: true})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	key, err := secrets.LoadOrCreateKeyFile(filepath.Join(t.TempDir(), "master.key"))
	require.NoError(t, err)
	kr := secrets.NewKeyring(key)
	pool := NewPool(st, kr)
	return fixture{pool: pool, static: New(pool, Config{ProbeInterval: 50 * time.Millisecond}), keyring: kr}
}

func newKey(t testing.TB) (*secrets.SSHKey, []byte) {
	t.Helper()
	kp, err := sshexec.GenerateKeyPair()
	require.NoError(t, err)
	k, err := secrets.NewSSHKey(kp.PrivateKey)
	require.NoError(t, err)
	return k, kp.PrivateKey
}

func testCtx(t testing.TB) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func spec(id string, pem []byte) HostSpec {
	return HostSpec{ID: id, Address: "192.0.2.10", Port: 22, User: "admin", PrivateKey: secrets.NewSecret(string(pem))}
}

func TestRegisterListRemove(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := testCtx(t)
	_, pem := newKey(t)
	h, err := f.pool.Register(ctx, "acme", "rack1", spec("h1", pem))
	require.NoError(t, err)
	require.Equal(t, StatusFree, h.Status)
	_, err = f.pool.Register(ctx, "acme", "rack1", spec("h2", pem))
	require.NoError(t, err)

	hosts, err := f.pool.List(ctx, "acme", "rack1")
	require.NoError(t, err)
	require.Len(t, hosts, 2)
	other, err := f.pool.List(ctx, "other", "rack1")
	require.NoError(t, err)
	require.Empty(t, other, "pools are per tenant")
	none, err := f.pool.List(ctx, "acme", "rack2")
	require.NoError(t, err)
	require.Empty(t, none, "and per provider")

	// Re-registering a free host replaces it.
	changed := spec("h1", pem)
	changed.Address = "192.0.2.11"
	_, err = f.pool.Register(ctx, "acme", "rack1", changed)
	require.NoError(t, err)
	hosts, err = f.pool.List(ctx, "acme", "rack1")
	require.NoError(t, err)
	require.Equal(t, "192.0.2.11", hosts[0].Address)

	// A taken host can be neither replaced nor removed.
	_, err = f.pool.take(ctx, "acme", "rack1", "c1", "c1-1000", "tok")
	require.NoError(t, err)
	taken := hostsByStatus(t, f, StatusTaken)[0]
	_, err = f.pool.Register(ctx, "acme", "rack1", spec(taken, pem))
	require.ErrorIs(t, err, ErrHostTaken)
	require.ErrorIs(t, f.pool.Remove(ctx, "acme", "rack1", taken), ErrHostTaken)
	free := hostsByStatus(t, f, StatusFree)[0]
	require.NoError(t, f.pool.Remove(ctx, "acme", "rack1", free))
	require.NoError(t, f.pool.Remove(ctx, "acme", "rack1", free), "removing a removed host succeeds")
}

func hostsByStatus(t testing.TB, f fixture, status string) []string {
	t.Helper()
	hosts, err := f.pool.List(testCtx(t), "acme", "rack1")
	require.NoError(t, err)
	var ids []string
	for _, h := range hosts {
		if h.Status == status {
			ids = append(ids, h.ID)
		}
	}
	return ids
}

func TestHostSpecValidation(t *testing.T) {
	t.Parallel()
	_, pem := newKey(t)
	ps := HostSpec{ID: "bad id", Address: "a b", Port: 70000, User: "", PrivateKey: secrets.NewSecret("not a key"), HostKey: "nope"}.Validate()
	fields := map[string]string{}
	for _, p := range ps {
		fields[p.Field] = p.Code
	}
	require.Equal(t, map[string]string{"id": domain.CodeInvalid, "address": domain.CodeInvalid, "port": domain.CodeOutOfRange,
		"user": domain.CodeInvalid, "privateKey": domain.CodeInvalid, "hostKey": domain.CodeInvalid}, fields)
	require.Empty(t, spec("h1", pem).Validate())
	missing := spec("h1", pem)
	missing.PrivateKey = secrets.Secret{}
	require.Equal(t, domain.CodeRequired, missing.Validate()[0].Code)
	_, err := setup(t).pool.Register(testCtx(t), "acme", "rack1", HostSpec{ID: "x"})
	var problems domain.Problems
	require.ErrorAs(t, err, &problems)
}

func TestTakingHostsUnderContention(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := testCtx(t)
	_, pem := newKey(t)
	for i := range 3 {
		_, err := f.pool.Register(ctx, "acme", "rack1", spec(fmt.Sprintf("h%d", i), pem))
		require.NoError(t, err)
	}
	// Five nodes race for three hosts.
	got := make([]string, 5)
	errs := make([]error, 5)
	var wg sync.WaitGroup
	for i := range 5 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tk, err := f.pool.take(ctx, "acme", "rack1", "c1", fmt.Sprintf("c1-%d", 1000+i), fmt.Sprintf("tok-%d", i))
			got[i], errs[i] = tk.ID, err
		}()
	}
	wg.Wait()
	hosts := map[string]bool{}
	noHost := 0
	for i, err := range errs {
		if errors.Is(err, ErrNoHost) {
			noHost++
			continue
		}
		require.NoError(t, err)
		require.False(t, hosts[got[i]], "host %s given twice", got[i])
		hosts[got[i]] = true
	}
	require.Len(t, hosts, 3)
	require.Equal(t, 2, noHost)
	require.ErrorContains(t, errs[slicesIndex(errs)], "3 hosts registered, none free")

	// One node's create repeated at once: one host.
	f2 := setup(t)
	for i := range 3 {
		_, err := f2.pool.Register(ctx, "acme", "rack1", spec(fmt.Sprintf("h%d", i), pem))
		require.NoError(t, err)
	}
	same := make([]string, 4)
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tk, err := f2.pool.take(ctx, "acme", "rack1", "c1", "c1-1000", "tok")
			if err == nil {
				same[i] = tk.ID
			}
		}()
	}
	wg.Wait()
	for _, id := range same {
		require.Equal(t, same[0], id)
		require.NotEmpty(t, id)
	}
	require.Len(t, hostsByStatus(t, f2, StatusTaken), 1)

	_, err := f2.pool.take(ctx, "acme", "rack1", "c1", "c1-1000", "another-token")
	require.ErrorContains(t, err, "taken by another create")
}

func slicesIndex(errs []error) int {
	for i, err := range errs {
		if err != nil {
			return i
		}
	}
	return -1
}

// inProcessHosts registers n in-process SSH servers. They accept one key,
// so the hosts' login key is also the cluster's key here; the OpenSSH test
// shows the cluster's own key being installed and removed.
func inProcessHosts(t testing.TB, f fixture, n int) (*secrets.SSHKey, []*sshtest.Server) {
	t.Helper()
	key, pem := newKey(t)
	var servers []*sshtest.Server
	for i := range n {
		s := sshtest.Start(t, "127.0.0.1:0", nil, key.Signer().PublicKey())
		servers = append(servers, s)
		host, port, _ := strings.Cut(s.Addr, ":")
		var p int
		fmt.Sscan(port, &p)
		_, err := f.pool.Register(testCtx(t), "acme", "rack1", HostSpec{ID: fmt.Sprintf("h%d", i), Address: host, Port: p, User: "root", PrivateKey: secrets.NewSecret(string(pem))})
		require.NoError(t, err)
	}
	return key, servers
}

func request(key *secrets.SSHKey, node string, fields map[string]string) provider.Request {
	return provider.Request{Tenant: "acme", ClusterID: "c1", Provider: "rack1", Node: domain.Node{ID: node, ClusterID: "c1"},
		Token: "tok-" + node, Key: key, Fields: fields, Flavor: "any", Image: "any"}
}

var nodeSeq atomic.Int64

// uniqueNode names a node no other test (or other run of the same test)
// uses: the in-process hosts share one home, and a node's delete removes
// the authorized_keys line that names it.
func uniqueNode() string { return fmt.Sprintf("c1-%d", 5000+nodeSeq.Add(1)) }

// readAuthorizedKeys reads the shared home's authorized_keys under the lock
// the provider's edits take: parallel tests' removals rewrite the file in
// place, and an unlocked read can fall between the truncation and the
// write.
func readAuthorizedKeys(t *testing.T) string {
	t.Helper()
	lock, err := os.OpenFile(filepath.Join(home, ".ssh", ".heddle.lock"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	require.NoError(t, err)
	defer lock.Close()
	require.NoError(t, syscall.Flock(int(lock.Fd()), syscall.LOCK_EX))
	defer func() { _ = syscall.Flock(int(lock.Fd()), syscall.LOCK_UN) }()
	data, err := os.ReadFile(filepath.Join(home, ".ssh", "authorized_keys"))
	require.NoError(t, err)
	return string(data)
}

func TestCreateConfirmDeleteInProcess(t *testing.T) {
	t.Parallel()
	f := setup(t)
	key, servers := inProcessHosts(t, f, 1)
	marker := filepath.Join(t.TempDir(), "wiped")
	node := uniqueNode()
	req := request(key, node, map[string]string{FieldWipeScript: `echo "$HEDDLE_NODE_ID on $HEDDLE_HOST_ID" > ` + marker})
	ctx := testCtx(t)

	created, err := f.static.Create(ctx, req)
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1", created.Addresses[provider.AddressAccess])
	require.Equal(t, "static:rack1/h0", created.ProviderID)
	presented := sshexec.FormatPublicKey(servers[0].HostKey.PublicKey())
	require.Empty(t, created.HostKey, "no host key was registered, and the create contacts no host")

	again, err := f.static.Create(ctx, req)
	require.NoError(t, err)
	require.Equal(t, created, again)

	confirmed, err := confirm(t, f.static, req)
	require.NoError(t, err)
	require.Equal(t, presented, confirmed.HostKey)
	pinned, err := f.pool.Get(ctx, "acme", "rack1", "h0")
	require.NoError(t, err)
	require.Equal(t, presented, pinned.HostKey, "the confirm's first contact pins it for the host, so later nodes check it")
	require.Equal(t, PinFirstContact, pinned.HostKeySource)
	keys := readAuthorizedKeys(t)
	require.Contains(t, keys, keyLine(req)+"\n")
	_, err = confirm(t, f.static, req)
	require.NoError(t, err)
	keys2 := readAuthorizedKeys(t)
	require.Equal(t, strings.Count(keys, keyLine(req)), strings.Count(keys2, keyLine(req)), "the key line is added once")

	require.NoError(t, del(t, f.static, req))
	wiped, err := os.ReadFile(marker)
	require.NoError(t, err)
	require.Equal(t, node+" on h0\n", string(wiped))
	require.NotContains(t, readAuthorizedKeys(t), keyLine(req))
	require.Equal(t, []string{"h0"}, hostsByStatus(t, f, StatusFree), "the host is back in the pool")
	require.NoError(t, del(t, f.static, req), "deleting again succeeds")
	_, err = confirm(t, f.static, req)
	require.ErrorContains(t, err, "holds no host")
}

// TestConfirmLogsInOnceWithAPool: with the worker's connection pool the
// confirm's one login (the host's key) installs the cluster's key and then
// serves the node's tasks, which ask the pool for the cluster's login; the
// cluster's key logs in on its own too; the delete drops the pooled login,
// so nothing of the cluster stays logged in once its key is removed.
func TestConfirmLogsInOnceWithAPool(t *testing.T) {
	t.Parallel()
	f := setup(t)
	_, servers := inProcessHosts(t, f, 1)
	server := servers[0]
	server.AuthorizeKeysIn(filepath.Join(home, ".ssh", "authorized_keys"))
	cluster, _ := newKey(t)
	pool := sshexec.NewPool()
	t.Cleanup(pool.Close)
	req := request(cluster, uniqueNode(), nil)
	req.SSH = pool
	ctx := testCtx(t)

	_, err := f.static.Create(ctx, req)
	require.NoError(t, err)
	confirmed, err := confirm(t, f.static, req)
	require.NoError(t, err)
	require.Equal(t, sshexec.FormatPublicKey(server.HostKey.PublicKey()), confirmed.HostKey)
	require.EqualValues(t, 1, server.Logins.Load(), "the confirm logs in once")
	require.Contains(t, readAuthorizedKeys(t), keyLine(req)+"\n")

	endpoint := sshexec.Target{Node: req.Node.ID, Address: net.JoinHostPort(confirmed.Addresses[provider.AddressAccess], strconv.Itoa(confirmed.SSHPort)),
		User: confirmed.SSHUser, Key: cluster.Signer(), HostKey: confirmed.HostKey, NoSudo: confirmed.NoSudo}
	res, err := pool.Run(ctx, endpoint, sshexec.Command{Script: "echo bootstrapped"})
	require.NoError(t, err)
	require.Equal(t, "bootstrapped\n", res.Stdout.Text)
	require.EqualValues(t, 1, server.Logins.Load(), "the node's first task runs on the confirm's login")

	own, err := sshexec.Dial(ctx, endpoint)
	require.NoError(t, err, "the cluster's key logs in by itself")
	require.NoError(t, own.Close())

	require.NoError(t, del(t, f.static, req))
	_, err = pool.Run(ctx, endpoint, sshexec.Command{Script: "true"})
	var te *sshexec.TransportError
	require.ErrorAs(t, err, &te, "the pooled login went with the node; a new one needs the removed key")
	require.Equal(t, "authenticate", te.Op)
}

func TestFailedWipeKeepsTheHostOut(t *testing.T) {
	t.Parallel()
	f := setup(t)
	key, _ := inProcessHosts(t, f, 1)
	req := request(key, uniqueNode(), map[string]string{FieldWipeScript: "echo 'disk busy' >&2; exit 1"})
	ctx := testCtx(t)
	_, err := f.static.Create(ctx, req)
	require.NoError(t, err)
	err = del(t, f.static, req)
	require.ErrorContains(t, err, "stays out of the pool")
	require.ErrorContains(t, err, "disk busy")
	require.Equal(t, []string{"h0"}, hostsByStatus(t, f, StatusDirty))
	dirty, err := f.pool.Get(ctx, "acme", "rack1", "h0")
	require.NoError(t, err)
	require.Contains(t, dirty.Reason, "disk busy", "the host says why it is dirty")
	require.Equal(t, req.Node.ID, dirty.Claim.NodeID)
	require.ErrorIs(t, f.pool.Remove(ctx, "acme", "rack1", "h0"), ErrHostTaken)

	// The administrator fixes the script; the retried delete returns it.
	req.Fields[FieldWipeScript] = "true"
	require.NoError(t, del(t, f.static, req))
	require.Equal(t, []string{"h0"}, hostsByStatus(t, f, StatusFree))
}

func TestEmptyPool(t *testing.T) {
	t.Parallel()
	f := setup(t)
	key, _ := newKey(t)
	_, err := f.static.Create(testCtx(t), request(key, "c1-1000", nil))
	require.ErrorIs(t, err, ErrNoHost)
}

// TestAgainstOpenSSH runs the provider against real sshd: the cluster's own
// key gets in only while the node holds the host, and the wipe runs as root
// through sudo.
func TestAgainstOpenSSH(t *testing.T) {
	t.Parallel()
	hosts := providertest.StartOpenSSH(t)
	f := setup(t)
	ctx := testCtx(t)
	n := min(3, len(hosts.Hosts))
	for i, h := range hosts.Hosts[:n] {
		addr, port, _ := strings.Cut(h.Address, ":")
		var p int
		fmt.Sscan(port, &p)
		_, err := f.pool.Register(ctx, "acme", "rack1", HostSpec{ID: fmt.Sprintf("h%d", i), Address: addr, Port: p, User: hosts.User,
			PrivateKey: secrets.NewSecret(string(hosts.KeyPEM)), HostKey: h.HostKey})
		require.NoError(t, err)
	}
	cluster, _ := newKey(t)
	marker := filepath.Join(t.TempDir(), "wiped")
	login := func(node provider.Node) error {
		c, err := sshexec.Dial(ctx, sshexec.Target{Node: "probe", Address: fmt.Sprintf("%s:%d", node.Addresses[provider.AddressAccess], node.SSHPort),
			User: node.SSHUser, Key: cluster.Signer(), HostKey: node.HostKey})
		if err != nil {
			return err
		}
		return c.Close()
	}

	var nodes []provider.Node
	var reqs []provider.Request
	for i := range n {
		req := request(cluster, fmt.Sprintf("c1-%d", 1000+i), map[string]string{FieldWipeScript: "id -u >> " + marker})
		created, err := f.static.Create(ctx, req)
		require.NoError(t, err)
		require.Equal(t, hosts.Hosts[i].HostKey, created.HostKey, "the registered host key is pinned from the start")
		confirmed, err := confirm(t, f.static, req)
		require.NoError(t, err)
		require.NoError(t, login(confirmed), "the cluster's key logs in")
		nodes, reqs = append(nodes, confirmed), append(reqs, req)
	}
	for _, req := range reqs {
		require.NoError(t, del(t, f.static, req))
	}
	// (Every test host shares one home, so the key is gone only once every
	// node of the cluster is deleted.)
	var te *sshexec.TransportError
	require.ErrorAs(t, login(nodes[0]), &te, "the cluster's key no longer logs in")
	wiped, err := os.ReadFile(marker)
	require.NoError(t, err)
	require.Equal(t, strings.Repeat("0\n", n), string(wiped), "the wipe ran as root")
	require.Len(t, hostsByStatus(t, f, StatusFree), n)

	// A host whose key changed is refused at confirm.
	req := request(cluster, "c1-2000", nil)
	_, err = f.static.Create(ctx, req)
	require.NoError(t, err)
	req.Node.HostKey = sshexec.FormatPublicKey(sshtest.NewHostKey(t).PublicKey())
	_, err = confirm(t, f.static, req)
	var hk *sshexec.HostKeyError
	require.ErrorAs(t, err, &hk)
	require.NoError(t, del(t, f.static, req))
}

// confirm makes one Confirm call, the last for such a node.
func confirm(t *testing.T, s *Static, req provider.Request) (provider.Node, error) {
	t.Helper()
	return providertest.Once(t, testCtx(t), req, s.Confirm)
}

// del makes one Delete call, the last for such a node.
func del(t *testing.T, s *Static, req provider.Request) error {
	t.Helper()
	_, err := providertest.Once(t, testCtx(t), req, s.Delete)
	return err
}

// TestSpreadGivesAClusterDistinctPlaces: the nodes of one cluster, created
// at once, start their search for a host at different hosts of the page
// (after losing the first free one to another), so their conditional
// writes rarely collide; an id without a number still gets a place.
func TestSpreadGivesAClusterDistinctPlaces(t *testing.T) {
	t.Parallel()
	seen := map[int]bool{}
	for i := range 50 {
		p := spread(fmt.Sprintf("c1a213afe510e70973-%d", 1000+i), 50)
		require.False(t, seen[p], "node %d shares place %d", 1000+i, p)
		seen[p] = true
	}
	for _, id := range []string{"plain", "ends-with-", "x-12a", ""} {
		p := spread(id, 7)
		require.True(t, p >= 0 && p < 7, "%q -> %d", id, p)
	}
	require.Zero(t, spread("c1-1000", 0))
}
