package sshexec

import (
	"bytes"
	"net"
	"sync"

	"golang.org/x/crypto/ssh"
)

// HostKeyPolicy pins a node's host key. With no pinned key (first contact,
// when the provider confirms a new node) it accepts the key the node presents
// and records it, for the caller to persist on the node; with a pinned key it
// accepts exactly that key and nothing else. Coopr ran with host-key checking
// off; heddle never does.
type HostKeyPolicy struct {
	Node   string
	Pinned ssh.PublicKey // nil on first contact

	mu        sync.Mutex
	presented ssh.PublicKey
}

// NewHostKeyPolicy parses pinned (authorized_keys form, empty on first
// contact) into a policy for node.
func NewHostKeyPolicy(node, pinned string) (*HostKeyPolicy, error) {
	p := &HostKeyPolicy{Node: node}
	if pinned != "" {
		k, err := ParsePublicKey(pinned)
		if err != nil {
			return nil, err
		}
		p.Pinned = k
	}
	return p, nil
}

// Check is an ssh.HostKeyCallback.
func (p *HostKeyPolicy) Check(address string, _ net.Addr, key ssh.PublicKey) error {
	p.mu.Lock()
	p.presented = key
	p.mu.Unlock()
	if p.Pinned == nil {
		return nil
	}
	if key.Type() == p.Pinned.Type() && bytes.Equal(key.Marshal(), p.Pinned.Marshal()) {
		return nil
	}
	return &HostKeyError{Node: p.Node, Address: address, Pinned: Fingerprint(p.Pinned), Presented: Fingerprint(key)}
}

// Presented is the key the node showed in the last handshake, nil before one.
func (p *HostKeyPolicy) Presented() ssh.PublicKey {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.presented
}

// NewlyPinned returns the key to persist after a first contact, and false
// when the key was already pinned (or no handshake happened).
func (p *HostKeyPolicy) NewlyPinned() (string, bool) {
	k := p.Presented()
	if p.Pinned != nil || k == nil {
		return "", false
	}
	return FormatPublicKey(k), true
}

// algorithms restricts the handshake to the pinned key's algorithms, so a
// node that has several host keys presents the pinned one instead of
// whichever the client would prefer. On first contact any is accepted.
func (p *HostKeyPolicy) algorithms() []string {
	if p.Pinned == nil {
		return nil
	}
	switch t := p.Pinned.Type(); t {
	case ssh.KeyAlgoRSA:
		return []string{ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256, ssh.KeyAlgoRSA}
	default:
		return []string{t}
	}
}
