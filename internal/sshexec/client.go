package sshexec

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"
)

// Target is a node to reach over SSH.
type Target struct {
	// Node names the node in errors (its id).
	Node    string
	Address string // host:port
	User    string
	Key     ssh.Signer
	// HostKey is the pinned host key in authorized_keys form, empty on first
	// contact (see HostKeyPolicy).
	HostKey string
	// NoSudo runs commands as User even when it is not root. By default a
	// non-root user runs everything through `sudo -n`.
	NoSudo bool
}

// Timeouts for the steps a context may leave unbounded.
const (
	// handshakeTimeout bounds TCP connect plus SSH handshake and auth when
	// the context has no earlier deadline.
	handshakeTimeout = 30 * time.Second
	// sessionOpenTimeout bounds opening a session on an established
	// connection: a reused connection whose peer vanished (a frozen Lambda
	// thawed, a node gone) would otherwise wait for TCP to give up, minutes.
	sessionOpenTimeout = 10 * time.Second
	// killGrace is how long a timed-out command has, after SIGTERM, to exit
	// before its session is closed.
	killGrace = 2 * time.Second
)

// Client is one SSH connection to a node. It may run many commands, one
// after another or at once (up to the server's MaxSessions, 10 by default
// in OpenSSH), and is safe for concurrent use.
type Client struct {
	target Target
	policy *HostKeyPolicy
	conn   *ssh.Client
	sudo   bool
	done   chan struct{} // closed when the connection ends
	// disp holds the connection's dispatchers (see dispatcher), which run
	// heddle's control scripts without a session and sudo each; every view
	// of the connection (As) shares them.
	disp *connDispatchers
	// noDispatch keeps this view on sessions of their own (tests).
	noDispatch bool
}

// callerEnded tells whether ctx is done or its deadline has passed: the
// dialer's own timer may fire before the context's has marked it done.
func callerEnded(ctx context.Context) bool {
	if ctx.Err() != nil {
		return true
	}
	dl, ok := ctx.Deadline()
	return ok && !time.Now().Before(dl)
}

// Dial connects and authenticates, checking the host key against
// t.HostKey. Errors: *UnreachableError, *HostKeyError, *TransportError,
// *TimeoutError.
func Dial(ctx context.Context, t Target) (*Client, error) {
	policy, err := NewHostKeyPolicy(t.Node, t.HostKey)
	if err != nil {
		return nil, err
	}
	if t.Key == nil {
		return nil, errors.New("sshexec: target has no private key")
	}
	start := time.Now()
	caller := ctx
	ctx, cancel := context.WithTimeout(ctx, handshakeTimeout)
	defer cancel()

	var d net.Dialer
	tcp, err := d.DialContext(ctx, "tcp", t.Address)
	if err != nil {
		// A dial that outlasts handshakeTimeout is an unreachable node; one
		// cut by the caller's own context (canceled, or its deadline passed:
		// an action whose time ran out, on a loaded machine even before the
		// dial began) is the caller giving up, not the node's fault.
		if callerEnded(caller) {
			cause := context.Cause(caller)
			if cause == nil {
				cause = context.DeadlineExceeded
			}
			return nil, &TimeoutError{Node: t.Node, Address: t.Address, Op: "connect", After: time.Since(start), Err: cause}
		}
		return nil, &UnreachableError{Node: t.Node, Address: t.Address, Err: err}
	}
	// The handshake has no context: bound it with a deadline on the socket,
	// and cut it short if the context ends first.
	if deadline, ok := ctx.Deadline(); ok {
		_ = tcp.SetDeadline(deadline)
	}
	stop := context.AfterFunc(ctx, func() { _ = tcp.Close() })
	config := &ssh.ClientConfig{
		User:              t.User,
		Auth:              []ssh.AuthMethod{ssh.PublicKeys(t.Key)},
		HostKeyCallback:   policy.Check,
		HostKeyAlgorithms: policy.algorithms(),
	}
	conn, chans, reqs, err := ssh.NewClientConn(tcp, t.Address, config)
	stopped := stop()
	if err != nil {
		_ = tcp.Close()
		var hk *HostKeyError
		switch {
		case errors.As(err, &hk):
			return nil, hk
		case !stopped || ctx.Err() != nil || errors.Is(err, os.ErrDeadlineExceeded):
			// The socket's deadline is the context's, and may fire before
			// the context's own timer has marked it done.
			cause := context.Cause(ctx)
			if cause == nil {
				cause = context.DeadlineExceeded
			}
			return nil, &TimeoutError{Node: t.Node, Address: t.Address, Op: "connect", After: time.Since(start), Err: cause}
		case strings.Contains(err.Error(), "unable to authenticate"):
			return nil, &TransportError{Node: t.Node, Address: t.Address, Op: "authenticate", Err: err}
		}
		return nil, &TransportError{Node: t.Node, Address: t.Address, Op: "handshake", Err: err}
	}
	if !stopped {
		// The context ended just as the handshake finished and the socket
		// was closed under it.
		_ = conn.Close()
		return nil, &TimeoutError{Node: t.Node, Address: t.Address, Op: "connect", After: time.Since(start), Err: context.Cause(ctx)}
	}
	_ = tcp.SetDeadline(time.Time{})
	c := &Client{
		target: t,
		policy: policy,
		conn:   ssh.NewClient(conn, chans, reqs),
		sudo:   t.User != "root" && !t.NoSudo,
		done:   make(chan struct{}),

		disp: &connDispatchers{},
	}
	go func() {
		_ = c.conn.Wait()
		close(c.done)
	}()
	return c, nil
}

// As returns a view of c's connection that serves t: the same login (t's
// address and user) on the same host (the key c's handshake saw must be
// t's pinned one, which t must give). Commands run as t asks (through sudo
// unless t.NoSudo) and errors name t.Node; t.Key is not used, so the caller
// vouches that c logged in with a key as good as t's for this login. The
// static provider's confirm uses it: its login with the host's own key,
// which has just installed the cluster's key for the same user, goes on to
// serve the node's bootstrap and actions instead of a second handshake.
// Closing either closes the connection they share.
func (c *Client) As(t Target) (*Client, error) {
	if t.Address != c.target.Address || t.User != c.target.User {
		return nil, fmt.Errorf("sshexec: a connection to %s as %s cannot serve %s as %s", c.target.Address, c.target.User, t.Address, t.User)
	}
	if t.HostKey == "" {
		return nil, fmt.Errorf("sshexec: node %s: a connection is handed over only to a target with a pinned host key", t.Node)
	}
	policy, err := NewHostKeyPolicy(t.Node, t.HostKey)
	if err != nil {
		return nil, err
	}
	presented := c.policy.Presented()
	if presented == nil {
		return nil, fmt.Errorf("sshexec: node %s: the connection has no handshake to check", t.Node)
	}
	if err := policy.Check(t.Address, nil, presented); err != nil {
		return nil, err
	}
	return &Client{target: t, policy: policy, conn: c.conn, sudo: t.User != "root" && !t.NoSudo, done: c.done, disp: c.disp}, nil
}

// HostKey is the host key the node presented, in authorized_keys form.
func (c *Client) HostKey() string { return FormatPublicKey(c.policy.Presented()) }

// NewlyPinned returns the host key to persist when this connection was the
// first contact with the node.
func (c *Client) NewlyPinned() (string, bool) { return c.policy.NewlyPinned() }

// Alive reports whether the connection has not ended.
func (c *Client) Alive() bool {
	select {
	case <-c.done:
		return false
	default:
		return true
	}
}

// Close ends the connection; sessions still open fail.
func (c *Client) Close() error { return c.conn.Close() }

// Command is a shell script to run on a node.
type Command struct {
	// Script is POSIX sh text, run by /bin/sh -c. It travels as the command
	// line, so it is visible to local users of the node (ps) while it runs:
	// secrets belong in a file (SaveStdinTo, Upload) that the script reads.
	Script string
	// Env is exported before Script runs.
	Env map[string]string
	// Stdin feeds the script, unless SaveStdinTo is set.
	Stdin io.Reader
	// SaveStdinTo, an absolute path, makes the run first save Stdin there
	// (a new file is mode 0600, new parent directories 0700) and then run
	// Script with stdin from /dev/null: the task's context upload rides on
	// the same session as the script.
	SaveStdinTo string
	// Secrets are replaced by Redacted in the output tails.
	Secrets []string
}

// Result is what a command left: its exit code and the tails of its output.
type Result struct {
	ExitCode int // -1 when killed by a signal or when it did not finish
	Stdout   Tail
	Stderr   Tail
	Duration time.Duration
}

// Run runs cmd and waits for it. A command that exits non-zero returns its
// Result and an *ExitError; the context ending returns a *TimeoutError; a
// connection that fails returns a *TransportError. The Result holds the
// output seen in every case.
func (c *Client) Run(ctx context.Context, cmd Command) (Result, error) {
	env, err := exports(cmd.Env)
	if err != nil {
		return Result{ExitCode: -1}, err
	}
	script := env + cmd.Script
	if cmd.SaveStdinTo != "" {
		if err := checkRemotePath(cmd.SaveStdinTo); err != nil {
			return Result{ExitCode: -1}, err
		}
		script = saveStdinScript(cmd.SaveStdinTo) + script
	}
	line, err := wrap(script, c.sudo)
	if err != nil {
		return Result{ExitCode: -1}, err
	}
	stdout, stderr := newTailBuffer(TailLimit, cmd.Secrets), newTailBuffer(TailLimit, cmd.Secrets)
	res, err := c.exec(ctx, line, cmd.Stdin, stdout, stderr)
	res.Stdout, res.Stderr = stdout.tail(cmd.Secrets), stderr.tail(cmd.Secrets)
	return res, err
}

// File is a file to write on a node.
type File struct {
	Path string // absolute
	Data []byte
	Mode fs.FileMode // permission bits; 0 means 0600
}

// Upload writes f on the node without scp or sftp (neither is assumed on a
// node): the bytes go through the session's stdin to cat, into a temporary
// file that is size-checked, chmod-ed and renamed into place, so the path
// never holds a partial file. Parent directories are created (mode 0700).
func (c *Client) Upload(ctx context.Context, f File) error {
	if err := checkRemotePath(f.Path); err != nil {
		return err
	}
	mode := uint32(f.Mode.Perm())
	if mode == 0 {
		mode = 0o600
	}
	line, err := wrap(uploadScript(f.Path, int64(len(f.Data)), mode), c.sudo)
	if err != nil {
		return err
	}
	stderr := newTailBuffer(TailLimit, nil)
	_, err = c.exec(ctx, line, bytes.NewReader(f.Data), io.Discard, stderr)
	var exit *ExitError
	if errors.As(err, &exit) {
		return fmt.Errorf("sshexec: upload %s to node %s: %w: %s", f.Path, c.target.Node, err, strings.TrimSpace(stderr.tail(nil).Text))
	}
	return err
}

// exec runs one command line in a new session.
func (c *Client) exec(ctx context.Context, line string, stdin io.Reader, stdout, stderr io.Writer) (Result, error) {
	start := time.Now()
	res := Result{ExitCode: -1}
	sess, err := c.newSession(ctx)
	if err != nil {
		return res, err
	}
	defer sess.Close()
	sess.Stdin, sess.Stdout, sess.Stderr = stdin, stdout, stderr
	if err := sess.Start(line); err != nil {
		return res, c.transport("run", err)
	}
	waited := make(chan error, 1)
	go func() { waited <- sess.Wait() }()
	select {
	case err = <-waited:
	case <-ctx.Done():
		c.stop(sess, waited)
		res.Duration = time.Since(start)
		return res, &TimeoutError{Node: c.target.Node, Address: c.target.Address, Op: "run", After: res.Duration, Err: ctx.Err()}
	}
	res.Duration = time.Since(start)
	var exit *ssh.ExitError
	switch {
	case err == nil:
		res.ExitCode = 0
		return res, nil
	case errors.As(err, &exit):
		e := &ExitError{Node: c.target.Node, Address: c.target.Address, Code: exit.ExitStatus(), Signal: exit.Signal()}
		if e.Signal != "" {
			e.Code = -1
		}
		res.ExitCode = e.Code
		return res, e
	}
	return res, c.transport("run", err)
}

// stop ends a command whose context ended: SIGTERM to its process group
// (OpenSSH's sshd delivers a signal request with killpg; sudo relays it to
// the command), a grace period, then the session is closed. It returns only
// when the session's goroutines are done, so the output buffers are stable.
func (c *Client) stop(sess *ssh.Session, waited <-chan error) {
	_ = sess.Signal(ssh.SIGTERM)
	grace := time.NewTimer(killGrace)
	defer grace.Stop()
	select {
	case <-waited:
		return
	case <-grace.C:
	}
	_ = sess.Close()
	grace.Reset(killGrace)
	select {
	case <-waited:
	case <-grace.C:
		// The connection itself is stuck: closing it fails every read.
		_ = c.conn.Close()
		<-waited
	}
}

// newSession opens a session, bounded by ctx and by sessionOpenTimeout.
func (c *Client) newSession(ctx context.Context) (*ssh.Session, error) {
	type opened struct {
		s   *ssh.Session
		err error
	}
	ch := make(chan opened, 1)
	go func() {
		s, err := c.conn.NewSession()
		ch <- opened{s, err}
	}()
	start := time.Now()
	timer := time.NewTimer(sessionOpenTimeout)
	defer timer.Stop()
	select {
	case o := <-ch:
		if o.err != nil {
			return nil, c.transport("session", o.err)
		}
		return o.s, nil
	case <-ctx.Done():
		go func() {
			if o := <-ch; o.s != nil {
				_ = o.s.Close()
			}
		}()
		return nil, &TimeoutError{Node: c.target.Node, Address: c.target.Address, Op: "session", After: time.Since(start), Err: ctx.Err()}
	case <-timer.C:
		_ = c.conn.Close() // unresponsive: no later session would fare better
		return nil, c.transport("session", fmt.Errorf("no answer within %s", sessionOpenTimeout))
	}
}

func (c *Client) transport(op string, err error) error {
	return &TransportError{Node: c.target.Node, Address: c.target.Address, Op: op, Err: err}
}
