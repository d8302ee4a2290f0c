package static

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/secrets"
	"github.com/heddle-io/heddle/internal/sshexec"
	"github.com/heddle-io/heddle/internal/sshexec/sshtest"
	"github.com/stretchr/testify/require"
)

func problemFields(t *testing.T, err error) map[string]string {
	t.Helper()
	var ps domain.Problems
	require.ErrorAs(t, err, &ps)
	out := map[string]string{}
	for _, p := range ps {
		out[p.Field] = p.Code
	}
	return out
}

func TestRegisterAllIsAllOrNothingAndIdempotent(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := testCtx(t)
	_, pem := newKey(t)
	bad := spec("h2", pem)
	bad.Address = "no such/host"
	_, err := f.pool.RegisterAll(ctx, "acme", "rack1", []HostSpec{spec("h0", pem), spec("h1", pem), bad, spec("h1", pem)})
	require.Equal(t, map[string]string{"hosts[2].address": domain.CodeInvalid, "hosts[3].id": domain.CodeDuplicate}, problemFields(t, err))
	require.Empty(t, hostsByStatus(t, f, StatusFree), "nothing of a refused registration is written")

	known := spec("h1", pem)
	hostKey := sshexec.FormatPublicKey(sshtest.NewHostKey(t).PublicKey())
	known.HostKey = "[192.0.2.10]:22 " + hostKey + " a comment"
	specs := []HostSpec{spec("h0", pem), known}
	got, err := f.pool.RegisterAll(ctx, "acme", "rack1", specs)
	require.NoError(t, err)
	require.Equal(t, ResultCreated, got[0].Result)
	require.Equal(t, NoteFirstContact, got[0].Note, "a host without a host key says it will be pinned on first contact")
	require.Equal(t, hostKey, got[1].HostKey, "a known_hosts line is accepted")
	require.Equal(t, PinRegistered, got[1].HostKeySource)
	require.NotEmpty(t, got[0].KeyFingerprint)

	// The same registration again: nothing changes, even for a taken host.
	taken, err := f.pool.take(ctx, "acme", "rack1", "c1", "c1-1000", "tok")
	require.NoError(t, err)
	again, err := f.pool.RegisterAll(ctx, "acme", "rack1", []HostSpec{spec("h0", pem), known})
	require.NoError(t, err)
	require.Equal(t, ResultUnchanged, again[0].Result)
	require.Equal(t, ResultUnchanged, again[1].Result)

	// Changing the taken host refuses the whole registration, naming its cluster.
	moved, other := spec(taken.ID, pem), spec("h0", pem)
	if taken.ID == "h0" {
		other = known
	}
	moved.Address = "192.0.2.99"
	other.User = "changed"
	_, err = f.pool.RegisterAll(ctx, "acme", "rack1", []HostSpec{other, moved})
	var be *BusyError
	require.ErrorAs(t, err, &be)
	require.ErrorIs(t, err, ErrHostTaken)
	require.Contains(t, err.Error(), "cluster c1")
	h, err := f.pool.Get(ctx, "acme", "rack1", other.ID)
	require.NoError(t, err)
	require.Equal(t, "admin", h.User, "the free host of the refused registration did not change")

	// A free host changes.
	changed, err := f.pool.RegisterAll(ctx, "acme", "rack1", []HostSpec{other})
	require.NoError(t, err)
	require.Equal(t, ResultUpdated, changed[0].Result)

	many := make([]HostSpec, MaxRegister+1)
	for i := range many {
		many[i] = spec(fmt.Sprintf("m%d", i), pem)
	}
	_, err = f.pool.RegisterAll(ctx, "acme", "rack1", many)
	require.Equal(t, map[string]string{"hosts": domain.CodeOutOfRange}, problemFields(t, err))
}

func TestRemoveNamesTheCluster(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := testCtx(t)
	_, pem := newKey(t)
	_, err := f.pool.Register(ctx, "acme", "rack1", spec("h0", pem))
	require.NoError(t, err)
	_, err = f.pool.take(ctx, "acme", "rack1", "shop-1", "shop-1-1000", "tok")
	require.NoError(t, err)
	err = f.pool.Remove(ctx, "acme", "rack1", "h0")
	require.ErrorIs(t, err, ErrHostTaken)
	require.EqualError(t, err, "host h0 is taken by node shop-1-1000 of cluster shop-1; it returns to the pool when that node is deleted")
}

func TestListPages(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := testCtx(t)
	_, pem := newKey(t)
	for i := range 5 {
		_, err := f.pool.Register(ctx, "acme", "rack1", spec(fmt.Sprintf("h%d", i), pem))
		require.NoError(t, err)
	}
	var ids []string
	cursor, pages := "", 0
	for {
		page, next, err := f.pool.ListPage(ctx, "acme", "rack1", 2, cursor)
		require.NoError(t, err)
		require.LessOrEqual(t, len(page), 2)
		for _, h := range page {
			ids = append(ids, h.ID)
		}
		pages++
		if next == "" {
			break
		}
		cursor = next
	}
	require.Equal(t, []string{"h0", "h1", "h2", "h3", "h4"}, ids)
	require.Equal(t, 3, pages)
	none, _, err := f.pool.ListPage(ctx, "other", "rack1", 10, "")
	require.NoError(t, err)
	require.Empty(t, none, "another tenant sees none of them")
}

func TestDrainAndReadmit(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := testCtx(t)
	_, pem := newKey(t)
	for i := range 2 {
		_, err := f.pool.Register(ctx, "acme", "rack1", spec(fmt.Sprintf("h%d", i), pem))
		require.NoError(t, err)
	}
	tk, err := f.pool.take(ctx, "acme", "rack1", "c1", "c1-1000", "tok-1")
	require.NoError(t, err)
	require.Equal(t, "h0", tk.ID)
	for _, id := range []string{"h0", "h1"} {
		h, err := f.pool.Drain(ctx, "acme", "rack1", id)
		require.NoError(t, err)
		require.True(t, h.Drained)
	}
	h0, err := f.pool.Get(ctx, "acme", "rack1", "h0")
	require.NoError(t, err)
	require.Equal(t, StatusTaken, h0.Status, "a drained host stays with its node")
	_, err = f.pool.take(ctx, "acme", "rack1", "c1", "c1-1001", "tok-2")
	require.ErrorIs(t, err, ErrNoHost, "a drained host is given to no new node")

	undrained, err := f.static.Readmit(ctx, "acme", "rack1", "h0")
	require.NoError(t, err, "a drained host its node still holds is undrained")
	require.False(t, undrained.Drained)
	require.Equal(t, StatusTaken, undrained.Status, "and stays with its node")
	require.Equal(t, "c1-1000", undrained.Claim.NodeID)
	_, err = f.static.Readmit(ctx, "acme", "rack1", "h0")
	require.ErrorIs(t, err, ErrHostTaken, "a taken host that is not drained cannot be readmitted")
	h1, err := f.static.Readmit(ctx, "acme", "rack1", "h1")
	require.NoError(t, err)
	require.False(t, h1.Drained)
	_, err = f.static.Readmit(ctx, "acme", "rack1", "h1")
	require.ErrorIs(t, err, ErrNotReadmittable)
	tk, err = f.pool.take(ctx, "acme", "rack1", "c1", "c1-1001", "tok-2")
	require.NoError(t, err)
	require.Equal(t, "h1", tk.ID)
	_, err = f.pool.Drain(ctx, "acme", "rack1", "nope")
	require.ErrorIs(t, err, ErrHostNotFound)
}

func TestReadmitDirtyHost(t *testing.T) {
	t.Parallel()
	f := setup(t)
	key, _ := inProcessHosts(t, f, 1)
	req := request(key, uniqueNode(), map[string]string{FieldWipeScript: "exit 3"})
	ctx := testCtx(t)
	_, err := f.static.Create(ctx, req)
	require.NoError(t, err)
	_, err = confirm(t, f.static, req)
	require.NoError(t, err)
	require.Contains(t, readAuthorizedKeys(t), keyLine(req))
	_, err = f.static.Delete(ctx, req)
	require.Error(t, err)
	require.Equal(t, []string{"h0"}, hostsByStatus(t, f, StatusDirty))

	h, err := f.static.Readmit(ctx, "acme", "rack1", "h0")
	require.NoError(t, err)
	require.Equal(t, StatusFree, h.Status)
	require.Nil(t, h.Claim)
	require.NotContains(t, readAuthorizedKeys(t), keyLine(req), "the old node's key no longer logs in")
	_, err = f.static.Delete(ctx, req)
	require.NoError(t, err, "the node's retried delete finds nothing to do")
	require.Equal(t, []string{"h0"}, hostsByStatus(t, f, StatusFree))
}

func TestNodeHomes(t *testing.T) {
	t.Parallel()
	f := setup(t)
	key, _ := inProcessHosts(t, f, 1)
	dir := filepath.Join(t.TempDir(), "homes")
	req := request(key, uniqueNode(), map[string]string{FieldNodeHomes: dir + "/", FieldWipeScript: `echo "$HEDDLE_NODE_HOME" > ` + dir + `/wiped`})
	ctx := testCtx(t)
	created, err := f.static.Create(ctx, req)
	require.NoError(t, err)
	home := filepath.Join(dir, "acme", "c1", req.Node.ID)
	require.Equal(t, home, created.Properties[PropHome])
	_, err = confirm(t, f.static, req)
	require.NoError(t, err)
	require.DirExists(t, home, "the confirm makes the node's home")
	_, err = f.static.Delete(ctx, req)
	require.NoError(t, err)
	wiped, err := os.ReadFile(filepath.Join(dir, "wiped"))
	require.NoError(t, err)
	require.Equal(t, home+"\n", string(wiped), "the wipe script is told the node's home")
}

// TestCheckAtRegistration: a registration that asks for a check refuses an
// unreachable host, a key the host refuses and a changed host key, each at
// its field with the reason, and pins the key it saw otherwise.
func TestCheckAtRegistration(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := testCtx(t)
	_, pem, srv, host, port, deadPort := sshTargets(t)
	good := HostSpec{ID: "h0", Address: host, Port: port, User: "root", PrivateKey: secrets.NewSecret(string(pem))}
	unreachable := good
	unreachable.ID, unreachable.Port = "h1", deadPort
	_, otherPEM := newKey(t)
	wrongKey := good
	wrongKey.ID, wrongKey.PrivateKey = "h2", secrets.NewSecret(string(otherPEM))
	changed := good
	changed.ID, changed.HostKey = "h3", sshexec.FormatPublicKey(sshtest.NewHostKey(t).PublicKey())

	_, err := f.static.Register(ctx, "acme", "rack1", []HostSpec{good, unreachable, wrongKey, changed}, true)
	require.Equal(t, map[string]string{"hosts[1].address": CodeCheckFailed, "hosts[2].privateKey": CodeCheckFailed,
		"hosts[3].hostKey": CodeCheckFailed}, problemFields(t, err))
	require.ErrorContains(t, err, "unreachable")
	require.ErrorContains(t, err, "refused this key")
	require.ErrorContains(t, err, "presented host key")
	require.Empty(t, hostsByStatus(t, f, StatusFree), "nothing is registered")

	// Without the check the same hosts register, and fail later.
	_, err = f.static.Register(ctx, "acme", "rack1", []HostSpec{unreachable}, false)
	require.NoError(t, err)

	got, err := f.static.Register(ctx, "acme", "rack1", []HostSpec{good}, true)
	require.NoError(t, err)
	require.Equal(t, sshexec.FormatPublicKey(srv.HostKey.PublicKey()), got[0].HostKey)
	require.Equal(t, PinChecked, got[0].HostKeySource)
	require.Contains(t, got[0].Note, "pinned by the check")
}

// TestBadHostsFailTheNode: without a check, an unreachable host, a refused
// key and a changed host key fail the node's confirm with the reason (the
// create only takes the host).
func TestBadHostsFailTheNode(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	key, pem, _, host, port, deadPort := sshTargets(t)
	_, otherPEM := newKey(t)

	for name, tc := range map[string]struct {
		spec HostSpec
		want string
	}{
		"unreachable": {HostSpec{ID: "h0", Address: host, Port: deadPort, User: "root", PrivateKey: secrets.NewSecret(string(pem))}, "unreachable"},
		"wrong key":   {HostSpec{ID: "h0", Address: host, Port: port, User: "root", PrivateKey: secrets.NewSecret(string(otherPEM))}, "authenticate failed"},
		"changed host key": {HostSpec{ID: "h0", Address: host, Port: port, User: "root", PrivateKey: secrets.NewSecret(string(pem)),
			HostKey: sshexec.FormatPublicKey(sshtest.NewHostKey(t).PublicKey())}, "host key of node"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := setup(t)
			_, err := f.pool.Register(ctx, "acme", "rack1", tc.spec)
			require.NoError(t, err)
			req := request(key, uniqueNode(), nil)
			_, err = f.static.Create(ctx, req)
			require.NoError(t, err, "the create contacts no host")
			_, err = confirm(t, f.static, req)
			require.ErrorContains(t, err, "host h0")
			require.ErrorContains(t, err, tc.want)
		})
	}
}

// sshTargets starts an in-process SSH server accepting a new key, and
// finds a port nothing listens on: the key (and its PEM), the server, its
// host and port, and the dead port.
func sshTargets(t *testing.T) (*secrets.SSHKey, []byte, *sshtest.Server, string, int, int) {
	t.Helper()
	key, pem := newKey(t)
	srv := sshtest.Start(t, "127.0.0.1:0", nil, key.Signer().PublicKey())
	host, portText, _ := strings.Cut(srv.Addr, ":")
	port, err := strconv.Atoi(portText)
	require.NoError(t, err)
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	deadPort := closed.Addr().(*net.TCPAddr).Port
	require.NoError(t, closed.Close())
	return key, pem, srv, host, port, deadPort
}

// TestNodeHomeNotWritable: a node home the login user cannot make fails the
// confirm with the path, the directory in the way and its owner, and
// changes nothing on the host.
func TestNodeHomeNotWritable(t *testing.T) {
	t.Parallel()
	f := setup(t)
	key, _ := inProcessHosts(t, f, 1)
	blocker := filepath.Join(t.TempDir(), "not-a-dir")
	require.NoError(t, os.WriteFile(blocker, nil, 0o600))
	req := request(key, uniqueNode(), map[string]string{FieldNodeHomes: blocker})
	ctx := testCtx(t)
	_, err := f.static.Create(ctx, req)
	require.NoError(t, err)
	_, err = confirm(t, f.static, req)
	require.Error(t, err)
	nodeHome := filepath.Join(blocker, "acme", "c1", req.Node.ID)
	require.ErrorContains(t, err, "node home "+nodeHome+" cannot be made or written by ")
	require.ErrorContains(t, err, blocker+" is -rw-------")
	require.ErrorContains(t, err, "owned by ")
	// No key was added for a node without a home. The shared home may have
	// no .ssh yet when this test runs first: then nothing was added either.
	if _, err := os.Stat(filepath.Join(home, ".ssh")); err == nil {
		require.NotContains(t, readAuthorizedKeys(t), keyLine(req), "no key was added for a node without a home")
	}
	_, err = f.static.Delete(ctx, req)
	require.NoError(t, err)
}
