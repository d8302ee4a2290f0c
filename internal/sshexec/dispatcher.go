package sshexec

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"
)

// A dispatcher is one long-lived root shell on a node, in one session of a
// pooled connection, that runs heddle's own control scripts (a detached
// command's start, wait and report, its poll, stop and removal, the
// automator's bootstrap) one after another as they arrive on its stdin.
// Each of those through a session of its own costs the node an sshd
// session process, sudo (its policy, PAM session and log line), a relay
// shell and, for a start, the cat and wc of its upload: a 1 s action's
// start cost an OpenSSH test host about 21 CPU-milliseconds (its sshd's
// process tree, 30 starts in a row) through a session and about 10
// through a dispatcher, and when 50 nodes that share two cores start one
// at once, that CPU is most of a step's overhead (BenchmarkStep50).
//
// The privilege is the same as a session's: the login already runs anything
// as root through `sudo -n`, and the dispatcher is started that way, once.
// The channel is the same authenticated, host-key-pinned SSH connection; no
// socket listens anywhere; the dispatcher reads only its own session's
// stdin, so it ends when the connection does (EOF). What changes is
// isolation between control scripts: they share one shell's process group
// and the environment sudo gave it (each still runs in a subshell of its
// own, from /dev/null, and the actions they start still lead a session and
// process group of their own, under setsid, as before). A request that
// times out ends the whole dispatcher (SIGTERM to its process group, as a
// timed-out session's command gets) and the next request starts another.
// A dispatcher that cannot be started (sudo refused, no /bin/sh features)
// leaves the connection on one session per control script, as before.
type dispatcher struct {
	sess   *ssh.Session
	stdin  io.WriteCloser
	stdout *bufio.Reader
	stderr *bufio.Reader
	done   chan struct{} // closed when the session has ended
	ended  sync.Once
}

// dispatcherPreamble starts a dispatcher: a shell reading its commands
// from its stdin (`/bin/sh -s`, through sudo -n), which reads them in
// blocks (a shell's read builtin would take a system call per byte). A
// request is two lines: heddle_req='<the script, quoted>' and heddle_run
// <end marker> (32 hex digits, fresh per request). A request cut short
// runs nothing: an unterminated quote is a syntax error, which ends the
// shell, and a marker cut short is refused. The script runs in a
// background subshell (stdin from /dev/null: it can neither read the next
// request nor wait on a terminal) that the shell waits for, which a trapped
// signal may interrupt: SIGTERM, SIGINT or SIGHUP (the session's signal,
// relayed by sudo, or sshd's hangup) then ends every process of the group,
// as sudoRelay does for one command. Replies: on stdout the script's
// output, a newline, the marker, a space and the exit status; on stderr the
// script's errors, a newline and the marker. The newline before a marker
// is the dispatcher's, so output that did not end in one comes back exact.
const dispatcherPreamble = `trap 'trap - TERM INT HUP; kill -s TERM 0' TERM INT HUP
heddle_run() {
	[ ${#1} -eq 32 ] || { echo "heddle: a request was cut short" >&2; exit 1; }
	(trap - TERM INT HUP; eval "$heddle_req") &
	wait $!
	heddle_s=$?
	heddle_req=
	printf '\n%s %d\n' "$1" "$heddle_s"
	printf '\n%s\n' "$1" >&2
}
echo heddle-dispatcher-ready
`

// dispatcherReady is the dispatcher's first line.
const dispatcherReady = "heddle-dispatcher-ready"

// Dispatcher limits.
const (
	// maxDispatchers bounds the dispatchers of one connection: a node
	// running more control scripts at once gets sessions of their own for
	// the rest (an idle dispatcher holds one of sshd's MaxSessions, 10 by
	// default).
	maxDispatchers = 2
	// maxDispatchedScript bounds a request (it is one shell variable of
	// the dispatcher's while it runs); a larger script, a big uploaded file,
	// goes through a session of its own.
	maxDispatchedScript = 64 << 10
	// maxControlOutput bounds what a control script may answer through a
	// dispatcher (heddle's own report: two tails and a few lines); more is
	// a broken node, and the dispatcher is ended.
	maxControlOutput = 1 << 20
)

// dispatchers is a connection's set of dispatchers of one kind (through
// sudo or not).
type dispatchers struct {
	mu       sync.Mutex
	idle     []*dispatcher
	busy     int
	disabled bool // one could not be started: sessions of their own, always
	// pending is closed when a PrestartDispatcher's start is done.
	pending chan struct{}
	// command overrides dispatcherCommand (tests: one that cannot start).
	command string
}

// connDispatchers are a connection's dispatchers, by kind.
type connDispatchers struct{ login, sudo dispatchers }

// dispatchers is the set c's control scripts use; nil: none.
func (c *Client) dispatchers() *dispatchers {
	switch {
	case c.disp == nil || c.noDispatch:
		return nil
	case c.sudo:
		return &c.disp.sudo
	}
	return &c.disp.login
}

// PrestartDispatcher starts, in the background, the dispatcher that a view
// of this connection serving t (As) will use, and returns a function that
// waits (up to ctx) until it is ready or failed. The static provider's
// confirm calls it as soon as it has logged in, so that sudo and the
// dispatcher's start overlap its key edit instead of following it in the
// node's bootstrap. A failure is not reported: the first control script
// tries again, or falls back to sessions of their own.
func (c *Client) PrestartDispatcher(t Target) (wait func(ctx context.Context)) {
	noop := func(context.Context) {}
	if c.disp == nil || c.noDispatch {
		return noop
	}
	sudo := t.User != "root" && !t.NoSudo
	ds := &c.disp.login
	if sudo {
		ds = &c.disp.sudo
	}
	ds.mu.Lock()
	if ds.disabled || ds.pending != nil || len(ds.idle) > 0 || ds.busy >= maxDispatchers {
		ds.mu.Unlock()
		return noop
	}
	ds.busy++
	pending := make(chan struct{})
	ds.pending = pending
	ds.mu.Unlock()
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), handshakeTimeout)
		defer cancel()
		d, err := c.startDispatcher(ctx, ds, sudo)
		ds.mu.Lock()
		ds.busy--
		var refused *dispatcherRefused
		switch {
		case err == nil:
			ds.idle = append(ds.idle, d)
		case errors.As(err, &refused):
			ds.disabled = true
		}
		ds.pending = nil
		ds.mu.Unlock()
		close(pending)
	}()
	return func(ctx context.Context) {
		select {
		case <-pending:
		case <-ctx.Done():
		}
	}
}

// dispatcherCommand is the command that starts a dispatcher.
func dispatcherCommand(sudo bool) string {
	if sudo {
		return "sudo -n -- /bin/sh -s"
	}
	return "/bin/sh -s"
}

// acquire returns an idle dispatcher, a new one, or nil: then the caller
// runs the script in a session of its own.
func (c *Client) acquireDispatcher(ctx context.Context) *dispatcher {
	ds := c.dispatchers()
	if ds == nil {
		return nil
	}
	ds.mu.Lock()
	if pending := ds.pending; pending != nil && len(ds.idle) == 0 {
		// One is starting (PrestartDispatcher): wait for it rather than
		// start a second.
		ds.mu.Unlock()
		select {
		case <-pending:
		case <-ctx.Done():
			return nil
		}
		ds.mu.Lock()
	}
	for len(ds.idle) > 0 {
		d := ds.idle[len(ds.idle)-1]
		ds.idle = ds.idle[:len(ds.idle)-1]
		select {
		case <-d.done: // ended while idle (killed on the node)
			go d.retire() // closes its session
			continue
		default:
		}
		ds.busy++
		ds.mu.Unlock()
		return d
	}
	if ds.disabled || ds.busy >= maxDispatchers {
		ds.mu.Unlock()
		return nil
	}
	ds.busy++
	ds.mu.Unlock()
	d, err := c.startDispatcher(ctx, ds, c.sudo)
	if err != nil {
		ds.mu.Lock()
		ds.busy--
		var refused *dispatcherRefused
		if errors.As(err, &refused) {
			ds.disabled = true
		}
		ds.mu.Unlock()
		return nil
	}
	return d
}

// releaseDispatcher hands d back, or retires it when it is no longer fit.
func (c *Client) releaseDispatcher(d *dispatcher, fit bool) {
	ds := c.dispatchers()
	ds.mu.Lock()
	ds.busy--
	if fit {
		ds.idle = append(ds.idle, d)
	}
	ds.mu.Unlock()
	if !fit {
		d.retire()
	}
}

// dispatcherRefused: the node would not run a dispatcher (sudo asked for a
// password, the shell failed): it is not tried again on this connection.
type dispatcherRefused struct{ err error }

func (e *dispatcherRefused) Error() string { return e.err.Error() }

// startDispatcher opens a session and starts a dispatcher in it, returning
// once it said it is ready.
func (c *Client) startDispatcher(ctx context.Context, ds *dispatchers, sudo bool) (*dispatcher, error) {
	sess, err := c.newSession(ctx)
	if err != nil {
		return nil, err
	}
	d := &dispatcher{sess: sess, done: make(chan struct{})}
	stdin, err1 := sess.StdinPipe()
	stdout, err2 := sess.StdoutPipe()
	stderr, err3 := sess.StderrPipe()
	if err := errors.Join(err1, err2, err3); err != nil {
		_ = sess.Close()
		return nil, err
	}
	d.stdin, d.stdout, d.stderr = stdin, bufio.NewReader(stdout), bufio.NewReader(stderr)
	ds.mu.Lock()
	command := ds.command
	ds.mu.Unlock()
	if command == "" {
		command = dispatcherCommand(sudo)
	}
	if err := sess.Start(command); err != nil {
		_ = sess.Close()
		return nil, err
	}
	go func() {
		_ = sess.Wait()
		close(d.done)
	}()
	// A few hundred bytes, well inside the channel's window: the write
	// does not wait on the node. (Not in a goroutine: a channel's Write
	// and CloseWrite must not run at once.)
	if _, err := io.WriteString(stdin, dispatcherPreamble); err != nil {
		_ = sess.Close() // it ended at once: as good as refused
		return nil, &dispatcherRefused{err: err}
	}
	ready := make(chan error, 1)
	go func() {
		line, err := d.stdout.ReadString('\n')
		if err == nil && strings.TrimSuffix(line, "\n") != dispatcherReady {
			err = fmt.Errorf("unexpected first line %q", line)
		}
		ready <- err
	}()
	select {
	case err = <-ready:
	case <-ctx.Done():
		err = ctx.Err()
	}
	if err != nil {
		d.retire()
		if ctx.Err() == nil {
			return nil, &dispatcherRefused{err: err}
		}
		return nil, err
	}
	return d, nil
}

// retire ends d: SIGTERM to its process group, then the session closed.
func (d *dispatcher) retire() {
	d.ended.Do(func() {
		// No stdin.Close: a request's write may still be under way, and
		// x/crypto/ssh's CloseWrite races with Write; closing the session
		// ends the dispatcher's stdin all the same.
		_ = d.sess.Signal(ssh.SIGTERM)
		select {
		case <-d.done:
		case <-time.After(killGrace):
		}
		_ = d.sess.Close()
	})
}

// errDispatcherEnded: the dispatcher's session ended before it answered.
var errDispatcherEnded = errors.New("the node's dispatcher (a root shell kept open on this connection) ended before it answered; whether the script ran is unknown")

// runDispatched runs script in d and copies its output to stdout and stderr.
// An error other than *ExitError means d is no longer fit for use.
func (c *Client) runDispatched(ctx context.Context, d *dispatcher, script string, stdout, stderr io.Writer) (Result, error) {
	start := time.Now()
	res := Result{ExitCode: -1}
	var nonce [16]byte
	if _, err := rand.Read(nonce[:]); err != nil {
		return res, err
	}
	end := hex.EncodeToString(nonce[:])
	req := "heddle_req=" + quote(script) + "\nheddle_run " + end + "\n"
	type answer struct {
		code int
		err  error
	}
	outDone, errDone := make(chan answer, 1), make(chan error, 1)
	go func() {
		code, err := readFramed(d.stdout, end+" ", stdout, maxControlOutput)
		outDone <- answer{code, err}
	}()
	go func() {
		_, err := readFramed(d.stderr, end, stderr, maxControlOutput)
		errDone <- err
	}()
	written := make(chan error, 1)
	go func() {
		_, err := io.WriteString(d.stdin, req)
		written <- err
	}()
	var out answer
	var errErr error
	gotOut, gotErr := false, false
	for !gotOut || !gotErr {
		select {
		case out = <-outDone:
			gotOut = true
		case errErr = <-errDone:
			gotErr = true
		case <-ctx.Done():
			d.retire()
			if !gotOut {
				<-outDone
			}
			if !gotErr {
				<-errDone
			}
			<-written
			res.Duration = time.Since(start)
			return res, &TimeoutError{Node: c.target.Node, Address: c.target.Address, Op: "run", After: res.Duration, Err: ctx.Err()}
		}
	}
	<-written
	res.Duration = time.Since(start)
	if err := errors.Join(out.err, errErr); err != nil {
		return res, c.transport("dispatch", err)
	}
	res.ExitCode = out.code
	if out.code != 0 {
		return res, &ExitError{Node: c.target.Node, Address: c.target.Address, Code: out.code}
	}
	return res, nil
}

// readFramed copies r to w up to a line that is marker (followed, on
// stdout, by the exit status) after a newline of the dispatcher's own,
// and returns the status. More than limit bytes, or the stream ending
// first, is an error.
func readFramed(r *bufio.Reader, marker string, w io.Writer, limit int) (int, error) {
	held, n := false, 0 // held: a newline not yet copied, perhaps the frame's
	for {
		line, err := r.ReadSlice('\n')
		if held && err == nil && bytes.HasPrefix(line, []byte(marker)) {
			rest := strings.TrimSuffix(string(line[len(marker):]), "\n")
			if rest == "" {
				return 0, nil
			}
			if code, cerr := strconv.Atoi(rest); cerr == nil && strings.HasSuffix(marker, " ") {
				return code, nil
			}
		}
		if held {
			_, _ = w.Write([]byte{'\n'})
			n++
		}
		held = false
		if len(line) > 0 && line[len(line)-1] == '\n' && err == nil {
			_, _ = w.Write(line[:len(line)-1])
			held = true
		} else {
			_, _ = w.Write(line)
		}
		n += len(line)
		if n > limit {
			return -1, fmt.Errorf("the control script answered more than %d bytes", limit)
		}
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			return -1, errDispatcherEnded
		}
	}
}

// control runs one of heddle's control scripts as root: through a
// dispatcher when the connection has one (or can start one) and script
// fits, otherwise in a session of its own (wrap's line, with stdin). inline
// is the script as a dispatcher runs it: the same work with stdin's
// content part of the text ("" when stdin is nil: script itself).
func (c *Client) control(ctx context.Context, script, inline string, stdin io.Reader, stdout, stderr io.Writer) (Result, error) {
	if inline == "" {
		inline = script
	}
	if len(inline) <= maxDispatchedScript && strings.IndexByte(inline, 0) < 0 {
		if d := c.acquireDispatcher(ctx); d != nil {
			res, err := c.runDispatched(ctx, d, inline, stdout, stderr)
			var exit *ExitError
			c.releaseDispatcher(d, err == nil || errors.As(err, &exit))
			return res, err
		}
	}
	line, err := wrap(script, c.sudo)
	if err != nil {
		return Result{ExitCode: -1}, err
	}
	return c.exec(ctx, line, stdin, stdout, stderr)
}

// RunControl runs a short script of heddle's own (no stdin; its output kept
// as tails with secrets redacted, as Run keeps them) through the
// connection's dispatcher, starting one if there is none: the automator's
// bootstrap uses it, so that the node's first action finds the dispatcher
// ready. Without a dispatcher it is Run. Errors as Run's.
func (c *Client) RunControl(ctx context.Context, script string, secrets []string) (Result, error) {
	if strings.IndexByte(script, 0) >= 0 {
		return Result{ExitCode: -1}, errors.New("sshexec: the script holds a NUL byte")
	}
	stdout, stderr := newTailBuffer(TailLimit, secrets), newTailBuffer(TailLimit, secrets)
	res, err := c.control(ctx, script, "", nil, stdout, stderr)
	res.Stdout, res.Stderr = stdout.tail(secrets), stderr.tail(secrets)
	return res, err
}
