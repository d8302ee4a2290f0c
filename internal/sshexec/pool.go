package sshexec

import (
	"context"
	"errors"
	"sync"
)

// Pool keeps one connection per node login (address, user, key) and reuses
// it across commands, saving a TCP and SSH handshake per task. A connection
// that has ended is dropped and redialed; a reused connection that fails to
// open a session (nothing ran, so it is safe) is replaced once. It is safe
// for concurrent use.
type Pool struct {
	mu      sync.Mutex
	clients map[poolKey]*poolEntry
	closed  bool
}

type poolKey struct {
	address, user, key string
	noSudo             bool
}

// poolEntry makes concurrent first uses of one login share a single dial.
type poolEntry struct {
	ready  chan struct{}
	client *Client
	err    error
}

// NewPool returns an empty pool.
func NewPool() *Pool { return &Pool{clients: map[poolKey]*poolEntry{}} }

var errPoolClosed = errors.New("sshexec: pool closed")

func keyOf(t Target) poolKey {
	k := poolKey{address: t.Address, user: t.User, noSudo: t.NoSudo}
	if t.Key != nil {
		k.key = string(t.Key.PublicKey().Marshal())
	}
	return k
}

// Client returns a live connection for t, dialing if there is none. The
// connection's host key must match t.HostKey when one is pinned: a
// connection made on first contact is reused only by targets that pinned the
// key it saw.
func (p *Pool) Client(ctx context.Context, t Target) (*Client, error) {
	c, _, err := p.client(ctx, t)
	return c, err
}

func (p *Pool) client(ctx context.Context, t Target) (c *Client, reused bool, err error) {
	k := keyOf(t)
	for {
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return nil, false, errPoolClosed
		}
		e, ok := p.clients[k]
		if !ok {
			e = &poolEntry{ready: make(chan struct{})}
			p.clients[k] = e
			p.mu.Unlock()
			e.client, e.err = Dial(ctx, t)
			close(e.ready)
			if e.err != nil {
				p.drop(k, e)
				return nil, false, e.err
			}
			return e.client, false, nil
		}
		p.mu.Unlock()
		select {
		case <-e.ready:
		case <-ctx.Done():
			return nil, false, ctx.Err()
		}
		if e.err != nil || !e.client.Alive() {
			// Another caller's dial failed (perhaps only its own context
			// ended), or the connection has ended: dial for ourselves.
			p.drop(k, e)
			continue
		}
		if err := checkPinned(e.client, t); err != nil {
			return nil, false, err
		}
		return e.client, true, nil
	}
}

// checkPinned applies t's pinned host key to a connection dialed for
// another target of the same login.
func checkPinned(c *Client, t Target) error {
	if t.HostKey == "" {
		return nil
	}
	policy, err := NewHostKeyPolicy(t.Node, t.HostKey)
	if err != nil {
		return err
	}
	return policy.Check(t.Address, nil, c.policy.Presented())
}

func (p *Pool) drop(k poolKey, e *poolEntry) {
	p.mu.Lock()
	if p.clients[k] == e {
		delete(p.clients, k)
	}
	p.mu.Unlock()
	if e.client != nil {
		_ = e.client.Close()
	}
}

// Adopt makes c t's pooled connection, so that the next users of t find it
// logged in (c is typically a Client.As view of a connection made for
// another purpose). The pool owns c from then on: when it already holds a
// live connection for t, or a dial for t is under way, or the pool is
// closed, c is closed instead.
func (p *Pool) Adopt(t Target, c *Client) {
	k := keyOf(t)
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		_ = c.Close()
		return
	}
	if e, ok := p.clients[k]; ok {
		select {
		case <-e.ready:
			if e.err == nil && e.client.Alive() {
				p.mu.Unlock()
				_ = c.Close()
				return
			}
		default: // a dial for t is under way: it wins
			p.mu.Unlock()
			_ = c.Close()
			return
		}
	}
	e := &poolEntry{ready: make(chan struct{}), client: c}
	close(e.ready)
	old := p.clients[k]
	p.clients[k] = e
	p.mu.Unlock()
	if old != nil && old.client != nil {
		_ = old.client.Close() // ended already
	}
}

// Forget closes and drops t's connection, if any (after a host key change
// was resolved, or when a node is deleted).
func (p *Pool) Forget(t Target) {
	k := keyOf(t)
	p.mu.Lock()
	e := p.clients[k]
	p.mu.Unlock()
	if e != nil {
		<-e.ready
		p.drop(k, e)
	}
}

// Do calls fn with a connection for t. If fn fails to open a session on a
// reused connection (a stale one), the connection is replaced and fn is
// called once more; nothing ran the first time.
func (p *Pool) Do(ctx context.Context, t Target, fn func(*Client) error) error {
	c, reused, err := p.client(ctx, t)
	if err != nil {
		return err
	}
	err = fn(c)
	var te *TransportError
	if reused && errors.As(err, &te) && te.Op == "session" {
		p.drop(keyOf(t), p.entryFor(t, c))
		if c, _, err = p.client(ctx, t); err != nil {
			return err
		}
		err = fn(c)
	}
	return err
}

func (p *Pool) entryFor(t Target, c *Client) *poolEntry {
	p.mu.Lock()
	defer p.mu.Unlock()
	if e := p.clients[keyOf(t)]; e != nil && e.client == c {
		return e
	}
	return &poolEntry{client: c}
}

// Run is Client.Run through the pool.
func (p *Pool) Run(ctx context.Context, t Target, cmd Command) (Result, error) {
	var res Result
	err := p.Do(ctx, t, func(c *Client) error {
		var err error
		res, err = c.Run(ctx, cmd)
		return err
	})
	return res, err
}

// Close closes every connection; the pool cannot be used afterwards.
func (p *Pool) Close() {
	p.mu.Lock()
	p.closed = true
	entries := p.clients
	p.clients = map[poolKey]*poolEntry{}
	p.mu.Unlock()
	for _, e := range entries {
		<-e.ready
		if e.client != nil {
			_ = e.client.Close()
		}
	}
}
