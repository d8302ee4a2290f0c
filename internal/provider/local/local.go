package local

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/heddle-io/heddle/internal/provider"
	"github.com/heddle-io/heddle/internal/sshexec"
	"golang.org/x/crypto/ssh"
)

// TypeName is the provider type's name.
const TypeName = "local"

// Type describes the local provider type. It has no fields: there is
// nothing to configure about this machine.
func Type() provider.Type {
	return provider.Type{
		Name:        TypeName,
		Label:       "This machine",
		Description: "Nodes are SSH servers inside the heddle process, on 127.0.0.1, running commands as heddle's own user. For trying heddle and for tests.",
		Parameters:  provider.Parameters{Admin: provider.ParameterSet{Fields: map[string]provider.Field{}}, User: provider.ParameterSet{Fields: map[string]provider.Field{}}},
	}
}

// Config configures the provider.
type Config struct {
	// Dir holds the nodes' state (created 0700 if missing).
	Dir    string
	Logger *slog.Logger
	// ProbeInterval is how long after a probe that found the node not
	// answering yet Confirm asks to be called again; zero means 100 ms.
	ProbeInterval time.Duration
	// RetryInterval is how often Restore tries again the nodes it could
	// not start (their address held by another process); zero means 2 s.
	RetryInterval time.Duration
}

// Local is the local provider.
type Local struct {
	dir   string
	log   *slog.Logger
	probe time.Duration
	retry time.Duration
	user  string

	mu    sync.Mutex
	nodes map[string]*node // by node directory name
	// creating serializes the creates and deletes of one node directory.
	locks sync.Map // dir name -> *sync.Mutex

	// closing ends the retries of nodes Restore could not start; retrying
	// counts them, so Close returns after them.
	closing   chan struct{}
	closeOnce sync.Once
	retrying  sync.WaitGroup
}

var _ provider.Provider = (*Local)(nil)

// node is a node whose server runs.
type node struct {
	state  nodeState
	server *server
}

// nodeState is node.json.
type nodeState struct {
	Tenant    string `json:"tenant"`
	ClusterID string `json:"clusterId"`
	NodeID    string `json:"nodeId"`
	Token     string `json:"token"`
	Port      int    `json:"port"`
	// Address is the node's own loopback address (127.42.x.y), where its
	// SSH server listens and its services bind; empty in nodes made before
	// nodes had one, which share 127.0.0.1.
	Address       string    `json:"address,omitempty"`
	AuthorizedKey string    `json:"authorizedKey"`
	HostKey       string    `json:"hostKey"` // public, authorized_keys form
	Hostname      string    `json:"hostname"`
	Flavor        string    `json:"flavor,omitempty"`
	Image         string    `json:"image,omitempty"`
	CreatedAt     time.Time `json:"createdAt"`
}

func (st nodeState) address() string {
	if st.Address == "" {
		return "127.0.0.1"
	}
	return st.Address
}

// SSHPort is the port a node's SSH server listens on at the node's own
// address. Binding it is how a node claims its address against every other
// heddle process on the machine (two servers, a server and a test suite):
// an address whose SSHPort is taken belongs to someone else. It is below
// Linux's ephemeral range, so no connection or :0 listener lands on it by
// chance.
const SSHPort = 22022

// claimAttempts bounds the addresses tried for one node: more taken in a row
// means the port is held on every address (a listener on *:SSHPort).
const claimAttempts = 64

// claimAddress picks the node's own loopback address and binds its SSH
// port there. Linux routes all of 127.0.0.0/8 to the loopback interface, so
// every node can have an address of its own: services on different nodes
// bind the same port, as they would on separate machines, and macros such
// as %ip.service.web% name distinct hosts. The address starts from a hash
// of the node's name and the provider's directory (firstCandidate), skips
// those of this process's nodes, and moves on past any whose SSH port
// another process holds: the bind, not a lookup, decides.
func (l *Local) claimAddress(name string) (string, net.Listener, error) {
	l.mu.Lock()
	used := map[string]bool{}
	for _, n := range l.nodes {
		used[n.state.address()] = true
	}
	l.mu.Unlock()
	start := l.firstCandidate(name)
	tried := 0
	for i := 0; i < loopbackHosts && tried < claimAttempts; i++ {
		addr := hostAddress(start + i)
		if used[addr] {
			continue
		}
		tried++
		ln, err := net.Listen("tcp", net.JoinHostPort(addr, strconv.Itoa(SSHPort)))
		if errors.Is(err, syscall.EADDRINUSE) {
			continue // another process's node (or a concurrent create of ours)
		}
		if err != nil {
			return "", nil, fmt.Errorf("local: claim address %s: %w", addr, err)
		}
		return addr, ln, nil
	}
	return "", nil, fmt.Errorf("local: port %d is taken on the %d addresses of 127.42.0.0/16 tried for node %s; is something listening on *:%d?",
		SSHPort, tried, name, SSHPort)
}

// loopbackHosts are the node addresses 127.42.0.1 .. 127.42.255.254.
const loopbackHosts = 254 * 256

// firstCandidate is where a node's address search starts. The directory is
// part of it: two heddles (or two tests) whose clusters name their nodes
// alike must not start from, and so race for, the same addresses, since a
// node's address is its identity and a restarted heddle takes its nodes'
// addresses back.
func (l *Local) firstCandidate(name string) int { return hashedHost(l.dir + "\x00" + name) }

// hashedHost spreads a string over the node addresses.
func hashedHost(name string) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(name))
	return int(h.Sum32() % loopbackHosts)
}

// hostAddress is the k-th node address (modulo loopbackHosts).
func hostAddress(k int) string {
	k %= loopbackHosts
	return fmt.Sprintf("127.42.%d.%d", k/254, k%254+1)
}

// New opens the provider's state directory. Call Restore to bring back the
// nodes of an earlier run.
func New(cfg Config) (*Local, error) {
	if cfg.Dir == "" {
		return nil, errors.New("local: a data directory is required")
	}
	// Node homes become the nodes' $HOME and the automator's work
	// directories, which must be absolute: a relative directory would
	// mean something else in every process that reads it.
	dir, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("local: %w", err)
	}
	cfg.Dir = dir
	if err := os.MkdirAll(filepath.Join(cfg.Dir, "nodes"), 0o700); err != nil {
		return nil, fmt.Errorf("local: %w", err)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.ProbeInterval <= 0 {
		cfg.ProbeInterval = 100 * time.Millisecond
	}
	if cfg.RetryInterval <= 0 {
		cfg.RetryInterval = 2 * time.Second
	}
	return &Local{dir: cfg.Dir, log: cfg.Logger, probe: cfg.ProbeInterval, retry: cfg.RetryInterval, user: currentUser(),
		nodes: map[string]*node{}, closing: make(chan struct{})}, nil
}

// dirName is a node's directory: its id made path-safe, and a hash of
// (tenant, cluster, node) so that equal ids of different clusters or
// tenants never share one.
func dirName(tenant, clusterID, nodeID string) string {
	sum := sha256.Sum256([]byte(tenant + "\x00" + clusterID + "\x00" + nodeID))
	var b strings.Builder
	for i := 0; i < len(nodeID) && i < 40; i++ {
		c := nodeID[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' {
			b.WriteByte(c)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String() + "~" + hex.EncodeToString(sum[:8])
}

func (l *Local) nodeDir(name string) string { return filepath.Join(l.dir, "nodes", name) }

func (l *Local) lock(name string) func() {
	m, _ := l.locks.LoadOrStore(name, &sync.Mutex{})
	mu := m.(*sync.Mutex)
	mu.Lock()
	return mu.Unlock
}

// Create makes the node's directory, host key and server, or returns the
// node an earlier create with the same token made.
func (l *Local) Create(_ context.Context, req provider.Request) (provider.Node, error) {
	if req.Key == nil {
		return provider.Node{}, errors.New("local: create needs the cluster's key")
	}
	if req.Token == "" {
		return provider.Node{}, errors.New("local: create needs an idempotency token")
	}
	name := dirName(req.Tenant, req.ClusterID, req.Node.ID)
	defer l.lock(name)()

	if n, err := l.running(name); err != nil || n != nil {
		if err != nil {
			return provider.Node{}, err
		}
		if n.state.Token != req.Token {
			return provider.Node{}, fmt.Errorf("local: node %s already exists, made by another create (token %s, not %s)", req.Node.ID, n.state.Token, req.Token)
		}
		return l.facts(name, n.state), nil
	}

	dir := l.nodeDir(name)
	// A directory without node.json is a create that crashed half-way:
	// nothing refers to it yet, so start over.
	if err := os.RemoveAll(dir); err != nil {
		return provider.Node{}, fmt.Errorf("local: clear %s: %w", dir, err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "home"), 0o700); err != nil {
		return provider.Node{}, fmt.Errorf("local: %w", err)
	}
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return provider.Node{}, err
	}
	block, err := ssh.MarshalPrivateKey(priv, "heddle-local-node "+req.Node.ID)
	if err != nil {
		return provider.Node{}, err
	}
	if err := writeFileAtomic(filepath.Join(dir, "host_key"), pem.EncodeToMemory(block)); err != nil {
		return provider.Node{}, err
	}
	hostKey, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		return provider.Node{}, err
	}
	hostname := req.Hostname
	if hostname == "" {
		hostname = req.Node.ID
	}
	st := nodeState{
		Tenant: req.Tenant, ClusterID: req.ClusterID, NodeID: req.Node.ID, Token: req.Token,
		AuthorizedKey: req.Key.AuthorizedKey(), HostKey: sshexec.FormatPublicKey(hostKey.PublicKey()),
		Hostname: hostname, Flavor: req.Flavor, Image: req.Image, CreatedAt: time.Now().UTC(),
	}
	addr, ln, err := l.claimAddress(name)
	if err != nil {
		return provider.Node{}, err
	}
	st.Address, st.Port = addr, SSHPort
	srv, err := l.serverOn(ln, dir, st, hostKey)
	if err != nil {
		release(ln)
		return provider.Node{}, err
	}
	port := st.Port
	// node.json is written last and atomically: its presence is what makes
	// the node exist.
	data, err := json.MarshalIndent(st, "", "  ")
	if err == nil {
		err = writeFileAtomic(filepath.Join(dir, "node.json"), data)
	}
	if err != nil {
		srv.close()
		return provider.Node{}, fmt.Errorf("local: record node %s: %w", req.Node.ID, err)
	}
	srv.start()
	l.mu.Lock()
	l.nodes[name] = &node{state: st, server: srv}
	l.mu.Unlock()
	l.log.Info("local node created", "node", req.Node.ID, "cluster", req.ClusterID, "port", port)
	return l.facts(name, st), nil
}

// running returns the node's running server, starting it from its
// directory when the node exists on disk but not in this process (Restore
// was not called, or it failed then); nil when the node does not exist.
func (l *Local) running(name string) (*node, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if n := l.nodes[name]; n != nil {
		return n, nil
	}
	st, hostKey, err := l.load(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	srv, err := l.listen(l.nodeDir(name), st, hostKey)
	if err != nil {
		return nil, err
	}
	srv.start()
	n := &node{state: st, server: srv}
	l.nodes[name] = n
	return n, nil
}

func (l *Local) load(name string) (nodeState, ssh.Signer, error) {
	dir := l.nodeDir(name)
	data, err := os.ReadFile(filepath.Join(dir, "node.json"))
	if err != nil {
		return nodeState{}, nil, err
	}
	var st nodeState
	if err := json.Unmarshal(data, &st); err != nil {
		return nodeState{}, nil, fmt.Errorf("local: %s/node.json: %w", dir, err)
	}
	keyPEM, err := os.ReadFile(filepath.Join(dir, "host_key"))
	if err != nil {
		return nodeState{}, nil, fmt.Errorf("local: node %s: %w", st.NodeID, err)
	}
	hostKey, err := ssh.ParsePrivateKey(keyPEM)
	if err != nil {
		return nodeState{}, nil, fmt.Errorf("local: node %s host key: %w", st.NodeID, err)
	}
	return st, hostKey, nil
}

// listen binds the node's recorded address and port and builds its server.
func (l *Local) listen(dir string, st nodeState, hostKey ssh.Signer) (*server, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort(st.address(), strconv.Itoa(st.Port)))
	if errors.Is(err, syscall.EADDRINUSE) {
		// The node is not moved to another address: its address is part of
		// what the store, the cluster's configuration and other nodes'
		// services know it by, and the pinned host key would refuse it
		// there anyway. It stays down, and says why.
		return nil, fmt.Errorf("local: node %s: listen on port %d: %w: another process on this machine holds the node's address (another heddle's node, or a service bound to port %d there); the node stays down until that process lets go of it, and heddle starts it then",
			st.NodeID, st.Port, err, st.Port)
	}
	if err != nil {
		return nil, fmt.Errorf("local: node %s: listen on port %d: %w", st.NodeID, st.Port, err)
	}
	srv, err := l.serverOn(ln, dir, st, hostKey)
	if err != nil {
		release(ln)
	}
	return srv, err
}

// serverOn builds the node's server on ln.
func (l *Local) serverOn(ln net.Listener, dir string, st nodeState, hostKey ssh.Signer) (*server, error) {
	authorized, err := sshexec.ParsePublicKey(st.AuthorizedKey)
	if err != nil {
		return nil, err
	}
	return newServer(ln, hostKey, authorized, filepath.Join(dir, "home"), l.user, markerOf(dir)), nil
}

// facts is what the provider reports about a node. The host key is known
// from the start (the provider made it), so it is reported at create rather
// than learned on first contact.
func (l *Local) facts(name string, st nodeState) provider.Node {
	home := filepath.Join(l.nodeDir(name), "home")
	return provider.Node{
		Hostname:   st.Hostname,
		Addresses:  map[string]string{provider.AddressAccess: st.address(), provider.AddressBind: st.address()},
		SSHPort:    st.Port,
		SSHUser:    l.user,
		HostKey:    st.HostKey,
		ProviderID: TypeName + ":" + name,
		Flavor:     st.Flavor,
		Image:      st.Image,
		// Commands run as heddle's user; there is no sudo to go through.
		NoSudo:  true,
		WorkDir: filepath.Join(home, ".heddle"),
	}
}

// Confirm probes the node's server once: it answers the cluster's key with
// the host key it was made with, or the dispatcher asks again after
// ProbeInterval.
func (l *Local) Confirm(ctx context.Context, req provider.Request) (provider.Progress, error) {
	if req.Key == nil {
		return provider.Progress{}, errors.New("local: confirm needs the cluster's key")
	}
	name := dirName(req.Tenant, req.ClusterID, req.Node.ID)
	n, err := l.running(name)
	if err != nil {
		return provider.Progress{}, err
	}
	if n == nil {
		return provider.Progress{}, fmt.Errorf("local: node %s does not exist (was it created?)", req.Node.ID)
	}
	facts := l.facts(name, n.state)
	pinned := req.Node.HostKey
	if pinned == "" {
		pinned = facts.HostKey
	}
	p, err := provider.ConfirmSSH(ctx, req.SSH, sshexec.Target{
		Node: req.Node.ID, Address: net.JoinHostPort(n.state.address(), strconv.Itoa(facts.SSHPort)),
		User: facts.SSHUser, Key: req.Key.Signer(), HostKey: pinned,
	}, facts, l.probe, "")
	if err != nil {
		return provider.Progress{}, fmt.Errorf("local: confirm: %w", err)
	}
	return p, nil
}

// Delete stops the node's server, killing its running commands, and
// removes its directory: done in one call. A node that does not exist is
// already deleted.
func (l *Local) Delete(_ context.Context, req provider.Request) (provider.Progress, error) {
	name := dirName(req.Tenant, req.ClusterID, req.Node.ID)
	defer l.lock(name)()
	l.mu.Lock()
	n := l.nodes[name]
	delete(l.nodes, name)
	l.mu.Unlock()
	if n != nil {
		n.server.close()
	}
	// What the node's scripts detached outlives its sessions; on a real
	// machine deleting the node ends it, so it ends here too (even when
	// the node's server does not run in this process).
	if err := killNodeProcesses(l.nodeDir(name)); err != nil {
		return provider.Progress{}, fmt.Errorf("local: stop the processes of node %s: %w", req.Node.ID, err)
	}
	if err := os.RemoveAll(l.nodeDir(name)); err != nil {
		return provider.Progress{}, fmt.Errorf("local: remove node %s: %w", req.Node.ID, err)
	}
	if n != nil {
		l.log.Info("local node deleted", "node", req.Node.ID, "cluster", req.ClusterID)
	}
	return provider.Done(provider.Node{}), nil
}

// Crash makes the node look like a machine that died outside heddle: its
// SSH server stops and its processes end, while its directory stays. The
// node answers nothing until Restore, or a provider call for it, starts
// its server again (as a machine comes back when it is powered on). Drift
// tests use it; heddle never calls it.
func (l *Local) Crash(tenant, clusterID, nodeID string) error {
	name := dirName(tenant, clusterID, nodeID)
	defer l.lock(name)()
	l.mu.Lock()
	n := l.nodes[name]
	delete(l.nodes, name)
	l.mu.Unlock()
	if n == nil {
		return fmt.Errorf("local: node %s does not run in this process", nodeID)
	}
	n.server.close()
	return killNodeProcesses(l.nodeDir(name))
}

// Restore starts the server of every node on disk that does not run yet,
// on its recorded port with its host key. Nodes that cannot start (their
// port was taken meanwhile) are reported together; the others run, and
// the ones that could not are tried again every RetryInterval until they
// start, are deleted, or the provider closes: a node whose address another
// process held while heddle was down comes back once it is free, as a
// machine comes back when its network does, without a restart of heddle.
func (l *Local) Restore(context.Context) error {
	entries, err := os.ReadDir(filepath.Join(l.dir, "nodes"))
	if err != nil {
		return fmt.Errorf("local: %w", err)
	}
	var (
		errs []error
		down []string
	)
	restored := 0
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		name := e.Name()
		if _, err := os.Stat(filepath.Join(l.nodeDir(name), "node.json")); err != nil {
			continue // a create that never finished: Create clears it
		}
		unlock := l.lock(name)
		n, err := l.running(name)
		unlock()
		if err != nil {
			errs = append(errs, err)
			down = append(down, name)
			continue
		}
		if n != nil {
			restored++
		}
	}
	l.log.Info("local nodes restored", "nodes", restored, "failed", len(errs))
	if len(down) > 0 {
		l.retrying.Add(1)
		go l.retryDown(down)
	}
	return errors.Join(errs...)
}

// retryDown starts the named nodes' servers when it can, until none is
// left or the provider closes.
func (l *Local) retryDown(names []string) {
	defer l.retrying.Done()
	t := time.NewTicker(l.retry)
	defer t.Stop()
	for len(names) > 0 {
		select {
		case <-l.closing:
			return
		case <-t.C:
		}
		left := names[:0]
		for _, name := range names {
			unlock := l.lock(name)
			n, err := l.running(name)
			unlock()
			switch {
			case err != nil:
				left = append(left, name)
			case n != nil:
				l.log.Info("local node restored", "node", n.state.NodeID)
			}
		}
		names = left
	}
}

// Close stops every node's server; the nodes stay on disk for Restore.
func (l *Local) Close() {
	l.closeOnce.Do(func() { close(l.closing) })
	l.retrying.Wait()
	l.mu.Lock()
	nodes := l.nodes
	l.nodes = map[string]*node{}
	l.mu.Unlock()
	for _, n := range nodes {
		n.server.close()
	}
}

// Nodes counts the nodes whose servers run.
func (l *Local) Nodes() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.nodes)
}

func writeFileAtomic(path string, data []byte) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
	}
	return err
}
