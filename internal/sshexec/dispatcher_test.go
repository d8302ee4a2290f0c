package sshexec

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// runControl is RunControl with a 30 s bound.
func runControl(t *testing.T, c *Client, script string) (Result, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return c.RunControl(ctx, script, nil)
}

// dispatcherPID is the pid of the dispatcher shell that runs c's next
// control script ($$ in a subshell is its shell's), or of the session's
// shell without one.
func dispatcherPID(t *testing.T, c *Client) string {
	t.Helper()
	res, err := runControl(t, c, "echo $$")
	require.NoError(t, err, "stderr: %s", res.Stderr.Text)
	return strings.TrimSpace(res.Stdout.Text)
}

// TestDispatcherRunsControlScripts: control scripts run one after another
// in one long-lived shell, as root (through sudo -n where the login is not
// root), with their output, errors and exit status back exact, and a
// script's output that does not end in a newline kept as it is.
func TestDispatcherRunsControlScripts(t *testing.T) {
	t.Parallel()
	eachBackend(t, 1, func(t *testing.T, b backend) {
		c := dial(t, b.targets[0])
		first := dispatcherPID(t, c)
		require.Equal(t, first, dispatcherPID(t, c), "the second script ran in the same dispatcher")

		res, err := runControl(t, c, `printf 'no newline'; printf 'err\n\n' >&2; exit 7`)
		var exit *ExitError
		require.ErrorAs(t, err, &exit)
		require.Equal(t, 7, exit.Code)
		require.Equal(t, 7, res.ExitCode)
		require.Equal(t, "no newline", res.Stdout.Text)
		require.Equal(t, "err\n\n", res.Stderr.Text)

		res, err = runControl(t, c, ``)
		require.NoError(t, err)
		require.Empty(t, res.Stdout.Text)
		require.Empty(t, res.Stderr.Text)

		// A script that reads stdin gets nothing (not the next request).
		res, err = runControl(t, c, `cat; echo "read: $(cat | wc -c)"`)
		require.NoError(t, err)
		require.Equal(t, "read: 0\n", res.Stdout.Text)

		if !b.rootLogin && b.name == "openssh" {
			res, err = runControl(t, c, "id -u")
			require.NoError(t, err)
			require.Equal(t, "0\n", res.Stdout.Text, "through sudo")
		}
		require.Equal(t, first, dispatcherPID(t, c), "failures of a script leave the dispatcher in use")

		// Scripts that arrive together: one runs in the dispatcher, the
		// other in a second one or a session of its own, and both answer.
		outs := make(chan string, 2)
		for i := range 2 {
			go func() {
				res, err := runControl(t, c, fmt.Sprintf("sleep 0.3; echo %d", i))
				if err != nil {
					outs <- err.Error()
					return
				}
				outs <- res.Stdout.Text
			}()
		}
		got := []string{<-outs, <-outs}
		require.ElementsMatch(t, []string{"0\n", "1\n"}, got)
	})
}

// TestDispatcherTimeoutEndsTheProcessGroup: a control script whose context
// ends is stopped with everything it started (its dispatcher's process
// group gets SIGTERM, as a session's command does), the error says it timed
// out, and the next script runs in a new dispatcher.
func TestDispatcherTimeoutEndsTheProcessGroup(t *testing.T) {
	t.Parallel()
	eachBackend(t, 1, func(t *testing.T, b backend) {
		c := dial(t, b.targets[0])
		dir := scratch(t, c)
		first := dispatcherPID(t, c)
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		res, err := c.RunControl(ctx, fmt.Sprintf(`mkdir -p %s; echo $$ > %[1]s/pids; sleep 60 & echo $! >> %[1]s/pids; (sleep 60; echo never) & echo $! >> %[1]s/pids; echo waiting; wait`, dir), nil)
		var timeout *TimeoutError
		require.ErrorAs(t, err, &timeout)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.Equal(t, -1, res.ExitCode)
		// Every process is gone soon after: the dispatcher and the script's
		// children (the signal went to the group).
		out := mustRun(t, c, fmt.Sprintf(`for i in $(seq 100); do alive=; for p in $(cat %s/pids); do [ -d /proc/$p ] && alive=$p; done; [ -z "$alive" ] && { echo gone; exit 0; }; sleep 0.05; done; echo "still running: $alive"`, dir))
		require.Equal(t, "gone\n", out)
		second := dispatcherPID(t, c)
		require.NotEqual(t, first, second, "a new dispatcher")
		require.Equal(t, second, dispatcherPID(t, c))
	})
}

// TestDispatcherKilled: a dispatcher killed while it runs a script fails
// that script with a reason that says so (whether it ran is unknown, so
// it is not retried), and the next script starts another; one killed while
// idle is replaced before it is used.
func TestDispatcherKilled(t *testing.T) {
	t.Parallel()
	eachBackend(t, 1, func(t *testing.T, b backend) {
		c := dial(t, b.targets[0])
		first := dispatcherPID(t, c)
		res, err := runControl(t, c, `echo started; kill -KILL $$; sleep 0.2`)
		var tr *TransportError
		require.ErrorAs(t, err, &tr)
		require.Equal(t, "dispatch", tr.Op)
		require.ErrorContains(t, err, "dispatcher")
		require.ErrorContains(t, err, "ended before it answered")
		require.Equal(t, -1, res.ExitCode)
		require.Equal(t, "started\n", res.Stdout.Text)

		second := dispatcherPID(t, c)
		require.NotEqual(t, first, second)

		// Killed while idle, from a session of its own.
		ds := c.dispatchers()
		ds.mu.Lock()
		require.Len(t, ds.idle, 1)
		idle := ds.idle[0]
		ds.mu.Unlock()
		mustRun(t, c, "kill -KILL "+second)
		select {
		case <-idle.done:
		case <-time.After(10 * time.Second):
			t.Fatal("the killed dispatcher's session did not end")
		}
		third := dispatcherPID(t, c)
		require.NotEqual(t, second, third)
	})
}

// TestDispatcherOutputOverTheCap: a control script that answers more than
// maxControlOutput fails with a reason and ends its dispatcher; the next
// one works. (An action's own output is kept as a tail of TailLimit; see
// TestDetachedLargeOutput.)
func TestDispatcherOutputOverTheCap(t *testing.T) {
	t.Parallel()
	eachBackend(t, 1, func(t *testing.T, b backend) {
		c := dial(t, b.targets[0])
		first := dispatcherPID(t, c)
		n := maxControlOutput/1000 + 10
		res, err := runControl(t, c, `i=0; while [ $i -lt `+strconv.Itoa(n)+` ]; do printf '%0999d\n' $i; i=$((i+1)); done`)
		var tr *TransportError
		require.ErrorAs(t, err, &tr)
		require.ErrorContains(t, err, "answered more than")
		require.True(t, res.Stdout.Truncated, "the output is kept as a tail")
		require.NotEqual(t, first, dispatcherPID(t, c))
	})
}

// TestDispatcherThatCannotStart: a node where the dispatcher does not
// start (here a command that exits at once, as sudo does when it wants a
// password) runs control scripts and detached commands in sessions of their
// own, as before, and is not asked again.
func TestDispatcherThatCannotStart(t *testing.T) {
	t.Parallel()
	eachBackend(t, 1, func(t *testing.T, b backend) {
		c := dial(t, b.targets[0])
		ds := c.dispatchers()
		ds.command = "echo 'sudo: a password is required' >&2; exit 1"
		res, err := runControl(t, c, "echo ok")
		require.NoError(t, err, "stderr: %s", res.Stderr.Text)
		require.Equal(t, "ok\n", res.Stdout.Text)
		ds.mu.Lock()
		require.True(t, ds.disabled)
		require.Empty(t, ds.idle)
		ds.mu.Unlock()
		require.NotEqual(t, dispatcherPID(t, c), dispatcherPID(t, c), "each in a session of its own")

		base := scratch(t, c)
		s, err := c.StartAndWait(context.Background(), Detached{
			Dir: base + "/run", Script: `cat "$F"`, Env: map[string]string{"F": base + "/data"},
			Files: []File{{Path: base + "/data", Data: []byte("data")}}, Wait: 5 * time.Second,
		})
		require.NoError(t, err)
		require.Equal(t, Exited, s.Status.State)
		require.Equal(t, "data", s.Status.Stdout.Text)
	})
}

// TestPrestartDispatcher: a connection made as the login user (the static
// provider's confirm) starts the dispatcher a view of it through sudo will
// use (As), and that view's first control script runs in it.
func TestPrestartDispatcher(t *testing.T) {
	t.Parallel()
	eachBackend(t, 1, func(t *testing.T, b backend) {
		login := b.targets[0]
		login.NoSudo = true
		c := dial(t, login)
		served := b.targets[0]
		served.Node += "-served"
		wait := c.PrestartDispatcher(served)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		wait(ctx)
		view, err := c.As(served)
		require.NoError(t, err)
		ds := view.dispatchers()
		ds.mu.Lock()
		require.Len(t, ds.idle, 1, "started and idle")
		ds.mu.Unlock()
		pid := dispatcherPID(t, view)
		ds.mu.Lock()
		require.Len(t, ds.idle, 1, "the same one, handed back")
		ds.mu.Unlock()
		require.Equal(t, pid, dispatcherPID(t, view))
		if b.name == "openssh" {
			res, err := runControl(t, view, "id -u")
			require.NoError(t, err)
			require.Equal(t, "0\n", res.Stdout.Text, "the view's, through sudo")
			res, err = runControl(t, c, "id -u")
			require.NoError(t, err)
			require.NotEqual(t, "0\n", res.Stdout.Text, "the login's own, without")
		}
	})
}

// FuzzReadFramed: whatever a control script prints (any bytes, any line
// lengths, with or without a final newline) comes back exact, followed by
// the status the dispatcher appended; a stream cut before its frame is an
// error.
func FuzzReadFramed(f *testing.F) {
	f.Add([]byte(""), 0)
	f.Add([]byte("\n"), 1)
	f.Add([]byte("no newline"), 7)
	f.Add([]byte("state=exited\ncode=0\n--\n\n\n"), 255)
	f.Add([]byte(strings.Repeat("x", 5000)+"\n"+strings.Repeat("y", 4097)), 3)
	const marker = "0123456789abcdef0123456789abcdef"
	f.Fuzz(func(t *testing.T, out []byte, code int) {
		if code < 0 || strings.Contains(string(out), marker) {
			t.Skip()
		}
		stream := string(out) + "\n" + marker + " " + strconv.Itoa(code) + "\n" + "next request's answer"
		var got strings.Builder
		r := bufio.NewReaderSize(strings.NewReader(stream), 64)
		status, err := readFramed(r, marker+" ", &got, maxControlOutput)
		require.NoError(t, err)
		require.Equal(t, code, status)
		require.Equal(t, string(out), got.String())
		rest, _ := io.ReadAll(r)
		require.Equal(t, "next request's answer", string(rest), "nothing past the frame is read")

		got.Reset()
		_, err = readFramed(bufio.NewReaderSize(strings.NewReader(string(out)+"\n"+marker[:10]), 64), marker+" ", &got, maxControlOutput)
		require.ErrorIs(t, err, errDispatcherEnded)
	})
}
