package provider

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/secrets"
	"github.com/heddle-io/heddle/internal/sshexec"
)

// Provider makes, checks and removes the nodes of one provider type. One
// value serves every provider entity of its type: the entity's fields come
// with each request. Implementations are safe for concurrent use.
//
// No call waits on the machine (invariant 12): Confirm and Delete check
// once and answer Progress.Again when the node is not there yet, and the
// dispatcher parks the attempt and calls again after that delay, with
// Request.Poll set to Progress.Poll, on whichever worker is free. Nothing
// of a check is kept in memory between calls.
type Provider interface {
	// Create asks for the node, or finds the one an earlier call with the
	// same Token asked for, and returns as soon as the provider accepted
	// the request (the node is booting).
	Create(ctx context.Context, req Request) (Node, error)
	// Confirm checks once whether the node runs and answers SSH with the
	// cluster's key (one short login attempt): done, it reports the node's
	// addresses and host key; not yet, it answers Again.
	Confirm(ctx context.Context, req Request) (Progress, error)
	// Delete removes the node, or checks on a removal an earlier call
	// started: done once the provider says the node is gone (a node
	// already gone is not an error); not yet, it answers Again.
	Delete(ctx context.Context, req Request) (Progress, error)
}

// Progress is the answer of one Confirm or Delete check.
type Progress struct {
	// Node is what Confirm learned, once done.
	Node Node
	// Again, when positive, says the node is not there yet (booting, not
	// answering SSH, still shutting down): check again after Again, with
	// Request.Poll set to Poll.
	Again time.Duration
	// Poll is the provider's own state for the next check (a phase, a
	// throttling count); at most a few hundred bytes.
	Poll string
	// Waiting says what is awaited, for the attempt's log ("instance
	// i-0abc pending").
	Waiting string
}

// Done is the answer of a check that found the node ready (Confirm) or
// gone (Delete).
func Done(n Node) Progress { return Progress{Node: n} }

// Later is the answer of a check that found the node not there yet.
func Later(after time.Duration, poll, waiting string) Progress {
	return Progress{Again: max(after, time.Millisecond), Poll: poll, Waiting: waiting}
}

// Pending reports whether the check asks to be called again.
func (p Progress) Pending() bool { return p.Again > 0 }

// Request is one provider call for one node.
type Request struct {
	Tenant    string
	ClusterID string
	// Provider is the provider entity's name (a static provider's pool is
	// per entity).
	Provider string
	// Node is the node as the store holds it when the attempt starts: its
	// id and Num, and what earlier tasks recorded (ProviderID, addresses,
	// the pinned host key, properties).
	Node domain.Node
	// Poll is empty on the first Confirm or Delete call of an attempt and
	// holds the previous answer's Progress.Poll on the next ones.
	Poll string
	// Token is the idempotency token of a create, derived from the task, the
	// same for every attempt; at most 64 printable ASCII characters (EC2's
	// ClientToken limit).
	Token string
	// Hostname is the name heddle gives the node; a provider may report
	// another (EC2's private DNS name).
	Hostname string
	// Flavor, Image and SSHUser come from the node's hardware and image types
	// for this provider.
	Flavor  string
	Image   string
	SSHUser string
	// Fields are the provider entity's fields merged with the cluster's user
	// fields, sensitive ones opened.
	Fields map[string]string
	// Key is the cluster's SSH key: the provider installs its public half
	// (Key.AuthorizedKey) on the node and logs in with it to confirm.
	Key *secrets.SSHKey
	// SSH, when set, is the worker's connection pool, shared with the
	// automators: the login that confirms a node stays open in it, and the
	// node's bootstrap and actions on this worker use it rather than dial
	// again (see ConfirmSSH).
	SSH *sshexec.Pool
}

// Node is what a provider reports about a node. Empty fields leave what is
// recorded unchanged.
type Node struct {
	Hostname string
	// Addresses holds AddressAccess (where heddle reaches the node) and
	// AddressBind (where services on the node listen for each other).
	Addresses  map[string]string
	SSHPort    int
	SSHUser    string
	HostKey    string // authorized_keys form, pinned on first contact
	ProviderID string
	Flavor     string
	Image      string
	// NoSudo: commands run as SSHUser even when it is not root (the local
	// provider's nodes run as heddle's own user, which has no sudo).
	NoSudo bool
	// WorkDir is where the automator keeps task files on the node; empty
	// means DefaultWorkDir.
	WorkDir    string
	Properties map[string]string
}

// Address names, as Coopr's ipaddresses had them.
const (
	AddressAccess = "access_v4"
	AddressBind   = "bind_v4"
)

// Node properties in which the dispatcher records a node's SSH endpoint.
const (
	PropSSHPort = "heddle.sshPort"
	PropNoSudo  = "heddle.noSudo"
	PropWorkDir = "heddle.workDir"
)

// DefaultWorkDir holds the automator's files on a node: under /var/tmp, it
// survives a reboot (which a detached command's poll then notices) and is
// not the tmpfs /tmp often is.
const DefaultWorkDir = "/var/tmp/heddle"

// PropertiesWithEndpoint renders n's SSH endpoint details and its own properties as node
// properties.
func (n Node) PropertiesWithEndpoint() map[string]string {
	out := make(map[string]string, len(n.Properties)+3)
	for k, v := range n.Properties {
		out[k] = v
	}
	if n.SSHPort != 0 {
		out[PropSSHPort] = strconv.Itoa(n.SSHPort)
	}
	if n.NoSudo {
		out[PropNoSudo] = "true"
	}
	if n.WorkDir != "" {
		out[PropWorkDir] = n.WorkDir
	}
	return out
}

// Endpoint is how to reach a node over SSH, from what its confirm recorded.
type Endpoint struct {
	Address string // host:port
	User    string
	HostKey string // empty before the first contact
	NoSudo  bool
	WorkDir string
}

// EndpointOf reads a node's SSH endpoint from its record.
func EndpointOf(n *domain.Node) (Endpoint, error) {
	if n == nil {
		return Endpoint{}, fmt.Errorf("provider: no node")
	}
	host := n.Addresses[AddressAccess]
	if host == "" {
		return Endpoint{}, fmt.Errorf("provider: node %s has no %s address yet (was it confirmed?)", n.ID, AddressAccess)
	}
	port := 22
	if p := n.Properties[PropSSHPort]; p != "" {
		v, err := strconv.Atoi(p)
		if err != nil || v < 1 || v > 65535 {
			return Endpoint{}, fmt.Errorf("provider: node %s has SSH port %q, not a port number", n.ID, p)
		}
		port = v
	}
	user := n.SSHUser
	if user == "" {
		return Endpoint{}, fmt.Errorf("provider: node %s has no SSH user", n.ID)
	}
	dir := n.Properties[PropWorkDir]
	if dir == "" {
		dir = DefaultWorkDir
	}
	return Endpoint{
		Address: net.JoinHostPort(host, strconv.Itoa(port)),
		User:    user,
		HostKey: n.HostKey,
		NoSudo:  n.Properties[PropNoSudo] == "true",
		WorkDir: dir,
	}, nil
}
