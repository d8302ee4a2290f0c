package static

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/heddle-io/heddle/internal/automator"
	"github.com/heddle-io/heddle/internal/provider"
	"github.com/heddle-io/heddle/internal/sshexec"
)

// TypeName is the provider type's name.
const TypeName = "static"

// Fields of a static provider.
const (
	FieldWipeScript  = "wipe_script"
	FieldWipeTimeout = "wipe_timeout"
	FieldNodeHomes   = "node_homes"
)

// PropHome is the node property that gives a node's scripts a HOME of its
// own (automator.PropHome).
const PropHome = automator.PropHome

// Type describes the static provider type.
func Type() provider.Type {
	return provider.Type{
		Name:        TypeName,
		Label:       "Existing hosts",
		Description: "A pool of machines an administrator registers (address, port, user, key). A node takes a free host; deleting the node runs the wipe script and returns the host.",
		Parameters: provider.Parameters{
			Admin: provider.ParameterSet{Fields: map[string]provider.Field{
				FieldWipeScript: {Label: "Wipe script", Type: provider.FieldTextArea,
					Tip: "Runs as root (through sudo when the login user is not) when a node gives its host back; a failure keeps the host out of the pool and fails the delete."},
				FieldWipeTimeout: {Label: "Wipe timeout (seconds)", Type: provider.FieldNumber, Default: "600", Min: 1, Max: 43200},
				FieldNodeHomes: {Label: "Node homes", Type: provider.FieldText,
					Tip: "An absolute directory on the hosts: each node's scripts then run with HOME=<dir>/<tenant>/<cluster>/<node> (the wipe script gets it as HEDDLE_NODE_HOME), for hosts that several pools or other users share. Empty: the login's own HOME."},
			}},
			User: provider.ParameterSet{Fields: map[string]provider.Field{}},
		},
	}
}

// Config tunes the provider.
type Config struct {
	// ProbeInterval is how long after a probe that found the host not
	// answering Confirm asks to be called again; zero means one second.
	ProbeInterval time.Duration
}

// Static is the static provider.
type Static struct {
	pool  *Pool
	probe time.Duration
}

var _ provider.Provider = (*Static)(nil)

// New returns the provider over pool.
func New(pool *Pool, cfg Config) *Static {
	if cfg.ProbeInterval <= 0 {
		cfg.ProbeInterval = time.Second
	}
	return &Static{pool: pool, probe: cfg.ProbeInterval}
}

// keyLine is the authorized_keys line that lets the cluster's key in as
// the host's user; its comment names the node, so deleting the node
// removes exactly its own line.
func keyLine(req provider.Request) string {
	return req.Key.AuthorizedKey() + marker(req.Tenant, req.ClusterID, req.Node.ID)
}

// Create takes a host for the node (or finds the one it took). It does not
// contact the host: a host that cannot be reached, refuses its key or
// presents another host key fails the node's confirm, with the reason,
// where a booting machine's problems show too.
func (s *Static) Create(ctx context.Context, req provider.Request) (provider.Node, error) {
	if req.Key == nil || req.Token == "" || req.Provider == "" {
		return provider.Node{}, errors.New("static: create needs the cluster's key, a token and the provider's name")
	}
	t, err := s.pool.take(ctx, req.Tenant, req.Provider, req.ClusterID, req.Node.ID, req.Token)
	if err != nil {
		return provider.Node{}, err
	}
	return facts(req, t, t.HostKey), nil
}

// nodeHome is the node's own HOME on its host, or "" when the provider
// gives none.
func nodeHome(req provider.Request) string {
	dir := strings.TrimRight(strings.TrimSpace(req.Fields[FieldNodeHomes]), "/")
	if dir == "" {
		return ""
	}
	return path.Join(dir, req.Tenant, req.ClusterID, req.Node.ID)
}

// Confirm logs in once, with the host's own key: it pins the host's key on
// first contact and installs the cluster's public key for the host's user
// (the edit is idempotent, so a repeated confirm does no harm, and fails
// when the line cannot be written). With the worker's connection pool
// (req.SSH) that login then serves the node's bootstrap and actions: it is
// the same user on the same pinned host as a login with the cluster's key,
// so a second handshake would add time and nothing else, and the next
// login the node's tasks make (a connection that ended) uses the cluster's
// key. Without a pool it proves the cluster's key with a login of its own.
// A host that cannot be reached, refuses its key or presents a host key
// other than the pinned one fails the confirm with the reason: a
// registered host is meant to be up, and its attempts' retries cover a
// blip.
func (s *Static) Confirm(ctx context.Context, req provider.Request) (provider.Progress, error) {
	t, found, err := s.held(ctx, req)
	if err != nil {
		return provider.Progress{}, err
	}
	if !found {
		return provider.Progress{}, fmt.Errorf("static: node %s holds no host (was it created?)", req.Node.ID)
	}
	if req.Key == nil {
		return provider.Progress{}, errors.New("static: confirm needs the cluster's key")
	}
	firstContact := t.HostKey == "" && req.Node.HostKey == ""
	if req.Node.HostKey != "" {
		t.HostKey = req.Node.HostKey // the node's pin rules
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	c, err := sshexec.Dial(ctx, s.target(req.Node.ID, t, true))
	if err == nil {
		// The node's tasks will use this login (handed over below): their
		// root shell starts now, beside the key edit, rather than in the
		// node's bootstrap after it (see sshexec's dispatcher).
		ready := func(context.Context) {}
		if req.SSH != nil {
			ready = c.PrestartDispatcher(sshexec.Target{Address: t.address(), User: t.User, NoSudo: facts(req, t, "").NoSudo})
		}
		err = runEdit(ctx, c, addKeyScript(keyLine(req), nodeHome(req)))
		if err == nil {
			ready(ctx)
		}
	}
	if err != nil {
		if c != nil {
			_ = c.Close()
		}
		return provider.Progress{}, fmt.Errorf("static: confirm: install the cluster's key on host %s as %s with the host's key: %w", t.ID, t.User, err)
	}
	handedOver := false
	defer func() {
		if !handedOver {
			_ = c.Close()
		}
	}()
	if firstContact {
		// First contact: the key is the host's from now on, for every
		// later node too.
		presented := c.HostKey()
		if err := s.pool.pin(ctx, req.Tenant, req.Provider, t.ID, presented); err != nil {
			return provider.Progress{}, fmt.Errorf("static: pin host %s's key: %w", t.ID, err)
		}
		t.HostKey = presented
	}
	node := facts(req, t, t.HostKey)
	endpoint := sshexec.Target{Node: req.Node.ID, Address: t.address(), User: t.User, Key: req.Key.Signer(), HostKey: t.HostKey, NoSudo: node.NoSudo}
	if req.SSH == nil {
		p, err := provider.ConfirmSSH(ctx, nil, endpoint, facts(req, t, ""), s.probe, "")
		if err != nil {
			return provider.Progress{}, fmt.Errorf("static: confirm: %w", err)
		}
		return p, nil
	}
	view, err := c.As(endpoint)
	if err != nil {
		return provider.Progress{}, fmt.Errorf("static: confirm: %w", err)
	}
	req.SSH.Adopt(endpoint, view)
	handedOver = true
	return provider.Done(node), nil
}

// Delete runs the wipe script, removes the cluster's key and returns the
// host to the pool, in one call (the wipe script is bounded by its own
// timeout). A node that holds no host is already deleted.
func (s *Static) Delete(ctx context.Context, req provider.Request) (provider.Progress, error) {
	if err := s.release(ctx, req); err != nil {
		return provider.Progress{}, err
	}
	return provider.Done(provider.Node{}), nil
}

func (s *Static) release(ctx context.Context, req provider.Request) error {
	t, found, err := s.held(ctx, req)
	if err != nil || !found {
		return err
	}
	if req.SSH != nil && req.Key != nil {
		// The node's pooled login (its confirm's, handed over) ends with
		// the node: nothing of the cluster stays logged in to the host.
		req.SSH.Forget(sshexec.Target{Address: t.address(), User: t.User, Key: req.Key.Signer()})
	}
	if script := req.Fields[FieldWipeScript]; strings.TrimSpace(script) != "" {
		if err := s.pool.setStatus(ctx, req.Tenant, req.Provider, t.ID, req.Node.ID, StatusWiping, ""); err != nil {
			return err
		}
		if err := s.wipe(ctx, req, t, script); err != nil {
			// The reason is kept on the host for the operator; the
			// context may be spent, so record it on one of its own.
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
			defer cancel()
			if serr := s.pool.setStatus(rctx, req.Tenant, req.Provider, t.ID, req.Node.ID, StatusDirty, err.Error()); serr != nil {
				return errors.Join(err, serr)
			}
			return err
		}
	}
	if _, err := s.editKeys(ctx, t, req.Node.ID, removeKeyScript(marker(req.Tenant, req.ClusterID, req.Node.ID))); err != nil {
		return fmt.Errorf("static: remove the cluster's key from host %s: %w", t.ID, err)
	}
	return s.pool.release(ctx, req.Tenant, req.Provider, req.ClusterID, req.Node.ID)
}

func (s *Static) held(ctx context.Context, req provider.Request) (taken, bool, error) {
	st, err := s.pool.scoped(req.Tenant)
	if err != nil {
		return taken{}, false, err
	}
	return s.pool.held(ctx, st, req.Tenant, req.Provider, req.ClusterID, req.Node.ID, "")
}

// wipe runs the provider's wipe script on the host as root.
func (s *Static) wipe(ctx context.Context, req provider.Request, t taken, script string) error {
	timeout := 600 * time.Second
	if n, err := strconv.Atoi(req.Fields[FieldWipeTimeout]); err == nil && n > 0 {
		timeout = time.Duration(n) * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	c, err := sshexec.Dial(ctx, s.target(req.Node.ID, t, false))
	if err != nil {
		return fmt.Errorf("static: wipe host %s: %w", t.ID, err)
	}
	defer c.Close()
	res, err := c.Run(ctx, sshexec.Command{Script: script, Env: map[string]string{
		"HEDDLE_TENANT": req.Tenant, "HEDDLE_CLUSTER_ID": req.ClusterID, "HEDDLE_NODE_ID": req.Node.ID, "HEDDLE_HOST_ID": t.ID,
		"HEDDLE_NODE_HOME": nodeHome(req),
	}})
	if err != nil {
		return fmt.Errorf("static: wipe host %s (it stays out of the pool until a delete succeeds): %w: %s", t.ID, err, strings.TrimSpace(res.Stderr.Text))
	}
	return nil
}

// target logs in with the host's own key.
func (s *Static) target(node string, t taken, noSudo bool) sshexec.Target {
	return sshexec.Target{Node: node, Address: t.address(), User: t.User, Key: t.key.Signer(), HostKey: t.HostKey, NoSudo: noSudo}
}

// editKeys runs an authorized_keys edit as the host's user (its own file:
// no sudo), and returns the host key the host presented.
func (s *Static) editKeys(ctx context.Context, t taken, node, script string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	c, err := sshexec.Dial(ctx, s.target(node, t, true))
	if err != nil {
		return "", err
	}
	defer c.Close()
	if err := runEdit(ctx, c, script); err != nil {
		return "", err
	}
	return c.HostKey(), nil
}

// runEdit runs an authorized_keys edit on c, with its stderr in the error.
func runEdit(ctx context.Context, c *sshexec.Client, script string) error {
	res, err := c.Run(ctx, sshexec.Command{Script: script})
	if err != nil {
		return fmt.Errorf("%w: %s", err, strings.TrimSpace(res.Stderr.Text))
	}
	return nil
}

func facts(req provider.Request, t taken, hostKey string) provider.Node {
	var props map[string]string
	if home := nodeHome(req); home != "" {
		props = map[string]string{PropHome: home}
	}
	return provider.Node{
		Properties: props,
		Hostname:   t.Address,
		Addresses:  map[string]string{provider.AddressAccess: t.Address, provider.AddressBind: t.Address},
		SSHPort:    t.Port,
		SSHUser:    t.User,
		HostKey:    hostKey,
		ProviderID: TypeName + ":" + req.Provider + "/" + t.ID,
		Flavor:     req.Flavor,
		Image:      req.Image,
	}
}

// lockedEdit runs body with the user's authorized_keys file locked, so that
// concurrent edits (several nodes of one user's home) never lose a line:
// flock where it exists, a lock directory elsewhere.
func lockedEdit(body string) string {
	return `set -e
umask 077
[ -d "$HOME/.ssh" ] || mkdir -p "$HOME/.ssh"
f="$HOME/.ssh/authorized_keys"
if command -v flock >/dev/null 2>&1; then
	exec 9>>"$HOME/.ssh/.heddle.lock"
	flock -w 60 9
else
	i=0
	while ! mkdir "$HOME/.ssh/.heddle.lockdir" 2>/dev/null; do
		i=$((i + 1)); [ $i -lt 600 ] || { echo "heddle: $HOME/.ssh/.heddle.lockdir is held" >&2; exit 1; }
		sleep 0.1 2>/dev/null || sleep 1
	done
	trap 'rmdir "$HOME/.ssh/.heddle.lockdir"' EXIT
fi
[ -f "$f" ] || : > "$f"
` + body
}

// addKeyScript appends line unless the file has it, and makes the node's
// home when it has one of its own. The home is made before the lock is
// taken: it is the node's alone, and every process started while holding
// the lock lengthens the wait of the other nodes that share the login's
// file (hosts that are one machine, several pools of one user).
func addKeyScript(line, home string) string {
	mkHome := ""
	if home != "" {
		mkHome = nodeHomeScript(home)
	}
	return mkHome + lockedEdit(`line=`+shellQuote(line)+`
grep -qxF -- "$line" "$f" || printf '%s\n' "$line" >> "$f"
`)
}

// nodeHomeScript makes the node's home, or fails with what a person needs
// to fix it: the login user, the nearest existing directory on the path and
// its owner and mode (the first one that exists, walking up: the one in the
// way). A node_homes directory made earlier by another user
// (root, another test run) otherwise fails every confirm with a bare
// "Permission denied".
func nodeHomeScript(home string) string {
	q := shellQuote(home)
	return `umask 077
h=` + q + `
if ! mkdir -p -- "$h" 2>/dev/null || [ ! -w "$h" ] || [ ! -x "$h" ]; then
	d="$h"
	while [ ! -e "$d" ] && [ "$d" != / ] && [ "$d" != . ]; do d=$(dirname -- "$d"); done
	echo "heddle: node home $h cannot be made or written by $(id -un): $d is $(ls -ld -- "$d" | awk '{print $1 " owned by " $3 ":" $4}'); give $(id -un) write access there, or set node_homes to a directory it owns" >&2
	exit 1
fi
`
}

// marker ends the authorized_keys line of a node (see keyLine).
func marker(tenant, clusterID, nodeID string) string {
	return " heddle:" + tenant + "/" + clusterID + "/" + nodeID
}

// removeKeyScript removes the node's line (the exact text it added). The
// new file is renamed over the old one, so sshd, reading it for a login
// at the same moment (another node's, the operator's), sees the old file
// or the new one and never the empty file a rewrite in place passes
// through; the copy is the user's own and 0600 (lockedEdit's umask), which
// sshd's StrictModes accepts. Where the rename is refused (a .ssh
// directory the user may not write), it falls back to the rewrite.
func removeKeyScript(marker string) string {
	return lockedEdit(`marker=` + shellQuote(marker) + `
t="$f.heddle.$$"
awk -v m="$marker" '{ n = length($0) - length(m); if (n > 0 && substr($0, n + 1) == m) next; print }' "$f" > "$t"
if ! mv -f -- "$t" "$f" 2>/dev/null; then
	cat "$t" > "$f"
	rm -f "$t"
fi
`)
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
