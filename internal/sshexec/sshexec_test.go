package sshexec

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heddle-io/heddle/internal/sshexec/sshtest"
	"github.com/stretchr/testify/require"
)

func TestRunSuccess(t *testing.T) {
	t.Parallel()
	eachBackend(t, 1, func(t *testing.T, b backend) {
		c := dial(t, b.targets[0])
		value := "it's \"quoted\" $HOME `x` \\ and\nnewline"
		res, err := run(t, c, Command{
			Script: `printf '%s|' "$VALUE" "$EMPTY"; cat; echo; echo warn >&2`,
			Env:    map[string]string{"VALUE": value, "EMPTY": ""},
			Stdin:  strings.NewReader("from stdin"),
		})
		require.NoError(t, err)
		require.Equal(t, 0, res.ExitCode)
		require.Equal(t, value+"||from stdin\n", res.Stdout.Text)
		require.Equal(t, "warn\n", res.Stderr.Text)
		require.False(t, res.Stdout.Truncated)
		require.EqualValues(t, len(res.Stdout.Text), res.Stdout.Size)
	})
}

func TestRunFailingExitStatus(t *testing.T) {
	t.Parallel()
	eachBackend(t, 1, func(t *testing.T, b backend) {
		c := dial(t, b.targets[0])
		res, err := run(t, c, Command{Script: "echo partial; echo 'it broke' >&2; exit 3"})
		var exit *ExitError
		require.ErrorAs(t, err, &exit)
		require.Equal(t, 3, exit.Code)
		require.Equal(t, b.targets[0].Node, exit.Node)
		require.Equal(t, 3, res.ExitCode)
		require.Equal(t, "partial\n", res.Stdout.Text)
		require.Equal(t, "it broke\n", res.Stderr.Text)
	})
}

func TestRunTimeoutStopsTheCommand(t *testing.T) {
	t.Parallel()
	eachBackend(t, 1, func(t *testing.T, b backend) {
		c := dial(t, b.targets[0])
		dir := scratch(t, c)
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		// The script and a child of it record their pids, then wait.
		res, err := c.Run(ctx, Command{Script: fmt.Sprintf(`mkdir -p %s; echo $$ > %[1]s/pids; sleep 60 & echo $! >> %[1]s/pids; echo waiting; wait`, dir)})
		var timeout *TimeoutError
		require.ErrorAs(t, err, &timeout)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.Equal(t, "run", timeout.Op)
		require.Equal(t, -1, res.ExitCode)
		require.Equal(t, "waiting\n", res.Stdout.Text)
		// Both processes are gone soon after (the signal went to the group).
		out := mustRun(t, c, fmt.Sprintf(`for i in $(seq 100); do alive=; for p in $(cat %s/pids); do [ -d /proc/$p ] && alive=$p; done; [ -z "$alive" ] && { echo gone; exit 0; }; sleep 0.05; done; echo "still running: $alive"`, dir))
		require.Equal(t, "gone\n", out)
		// The connection is still usable.
		require.Equal(t, "ok\n", mustRun(t, c, "echo ok"))
	})
}

func TestHostKeyMismatchNamesBothFingerprints(t *testing.T) {
	t.Parallel()
	eachBackend(t, 1, func(t *testing.T, b backend) {
		target := b.targets[0]
		real, err := ParsePublicKey(target.HostKey)
		require.NoError(t, err)
		_, other := testKey(t)
		target.HostKey = other.AuthorizedKey
		otherKey, err := ParsePublicKey(other.AuthorizedKey)
		require.NoError(t, err)

		_, err = Dial(context.Background(), target)
		var hk *HostKeyError
		require.ErrorAs(t, err, &hk)
		require.Equal(t, target.Node, hk.Node)
		require.Equal(t, target.Address, hk.Address)
		require.Equal(t, Fingerprint(otherKey), hk.Pinned)
		require.Equal(t, Fingerprint(real), hk.Presented)
		require.Contains(t, err.Error(), hk.Pinned)
		require.Contains(t, err.Error(), hk.Presented)
		require.Contains(t, err.Error(), target.Node)
		require.True(t, strings.HasPrefix(hk.Presented, "SHA256:"))
	})
}

func TestHostKeyChangedOnTheSameAddress(t *testing.T) {
	t.Parallel()
	signer, _ := testKey(t)
	first := sshtest.Start(t, "127.0.0.1:0", nil, signer.PublicKey())
	target := Target{Node: "n1", Address: first.Addr, User: "root", Key: signer, NoSudo: true}

	// First contact pins the key the node presents.
	c, err := Dial(context.Background(), target)
	require.NoError(t, err)
	pinned, ok := c.NewlyPinned()
	require.True(t, ok)
	require.Equal(t, FormatPublicKey(first.HostKey.PublicKey()), pinned)
	require.NoError(t, c.Close())

	// The node is replaced by one with another key on the same address.
	firstKey := first.HostKey
	secondKey := sshtest.NewHostKey(t)
	first.DropConnections()
	first.ReplaceHostKey(secondKey)
	target.HostKey = pinned
	_, err = Dial(context.Background(), target)
	var hk *HostKeyError
	require.ErrorAs(t, err, &hk)
	require.Equal(t, Fingerprint(firstKey.PublicKey()), hk.Pinned)
	require.Equal(t, Fingerprint(secondKey.PublicKey()), hk.Presented)

	// With the right key pinned, nothing is newly pinned.
	target.HostKey = FormatPublicKey(secondKey.PublicKey())
	c, err = Dial(context.Background(), target)
	require.NoError(t, err)
	_, ok = c.NewlyPinned()
	require.False(t, ok)
	require.NoError(t, c.Close())
}

func TestUnreachableHost(t *testing.T) {
	t.Parallel()
	// A port that was just free: nothing listens on it.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	signer, _ := testKey(t)
	_, err = Dial(context.Background(), Target{Node: "gone", Address: addr, User: "root", Key: signer})
	var un *UnreachableError
	require.ErrorAs(t, err, &un)
	require.Equal(t, "gone", un.Node)
	require.Contains(t, err.Error(), addr)
}

func TestWrongClientKeyFailsAuthentication(t *testing.T) {
	t.Parallel()
	eachBackend(t, 1, func(t *testing.T, b backend) {
		target := b.targets[0]
		target.Key, _ = testKey(t)
		_, err := Dial(context.Background(), target)
		var tr *TransportError
		require.ErrorAs(t, err, &tr)
		require.Equal(t, "authenticate", tr.Op)
	})
}

func TestOutputLargerThanTailIsCutAndRedacted(t *testing.T) {
	t.Parallel()
	eachBackend(t, 1, func(t *testing.T, b backend) {
		c := dial(t, b.targets[0])
		const secret = "s3cr3t-TOKEN-value"
		// 40,000 numbered lines (~400 KB), with the secret on a line every
		// 997 lines, so it lands across write boundaries and near the cut.
		script := `i=0; while [ $i -lt 40000 ]; do
			if [ $((i % 997)) -eq 0 ]; then echo "line $i $SECRET"; else echo "line $i"; fi
			i=$((i + 1)); done; echo "tail $SECRET" >&2`
		res, err := run(t, c, Command{Script: script, Env: map[string]string{"SECRET": secret}, Secrets: []string{secret}})
		require.NoError(t, err)
		require.True(t, res.Stdout.Truncated)
		require.Greater(t, res.Stdout.Size, int64(300_000))
		require.NotContains(t, res.Stdout.Text, secret)
		require.NotContains(t, res.Stdout.Text, "TOKEN")
		require.Contains(t, res.Stdout.Text, "line 39880 "+Redacted+"\n")
		require.True(t, strings.HasSuffix(res.Stdout.Text, "line 39999\n"))
		require.LessOrEqual(t, len(res.Stdout.Text), TailLimit)
		require.Equal(t, "tail "+Redacted+"\n", res.Stderr.Text)
		require.Contains(t, res.Stdout.String(), "earlier bytes not kept]")
	})
}

func TestUploadWithoutScp(t *testing.T) {
	t.Parallel()
	eachBackend(t, 1, func(t *testing.T, b backend) {
		c := dial(t, b.targets[0])
		dir := scratch(t, c)
		data := make([]byte, 0, 512)
		for i := range 512 {
			data = append(data, byte(i))
		}
		ctx := context.Background()
		path := dir + "/a b/it's/file.bin"
		require.NoError(t, c.Upload(ctx, File{Path: path, Data: data, Mode: 0o640}))
		out := mustRun(t, c, fmt.Sprintf("od -An -v -tx1 %s | tr -d ' \\n'; echo; stat -c %%a %[1]s; stat -c %%a %s", quote(path), quote(dir+"/a b")))
		lines := strings.Split(out, "\n")
		require.Equal(t, fmt.Sprintf("%x", data), lines[0])
		require.Equal(t, "640", lines[1])
		require.Equal(t, "700", lines[2])

		// Replacing works, and an empty file is a file.
		require.NoError(t, c.Upload(ctx, File{Path: path, Data: nil}))
		require.Equal(t, "0 600\n", mustRun(t, c, "stat -c '%s %a' "+quote(path)))
		require.Error(t, c.Upload(ctx, File{Path: "relative/path", Data: data}))
		require.Error(t, c.Upload(ctx, File{Path: "/tmp/../etc/x", Data: data}))
	})
}

func TestContextSavedFromStdinInTheSameSession(t *testing.T) {
	t.Parallel()
	eachBackend(t, 1, func(t *testing.T, b backend) {
		c := dial(t, b.targets[0])
		dir := scratch(t, c)
		path := dir + "/task/context.json"
		doc := `{"cluster":{"id":"c-1"},"secret":"x'y"}`
		res, err := run(t, c, Command{
			Script:      `stat -c %a "$CTX"; cat "$CTX"; cat`, // the second cat reads /dev/null
			Env:         map[string]string{"CTX": path},
			Stdin:       strings.NewReader(doc),
			SaveStdinTo: path,
		})
		require.NoError(t, err, res.Stderr.Text)
		require.Equal(t, "600\n"+doc, res.Stdout.Text)
	})
}

func TestSudoWhenNotRoot(t *testing.T) {
	t.Parallel()
	line, err := wrap("id -u", true)
	require.NoError(t, err)
	require.Equal(t, "sudo -n -- /bin/sh -c "+quote(sudoRelay)+" heddle 'id -u'", line)
	line, err = wrap("echo 'a'", false)
	require.NoError(t, err)
	require.Equal(t, `/bin/sh -c 'echo '\''a'\'''`, line)

	eachBackend(t, 1, func(t *testing.T, b backend) {
		target := b.targets[0]
		c := dial(t, target)
		require.Equal(t, target.User != "root" && !target.NoSudo, c.sudo)
		if b.name != "openssh" {
			return
		}
		// The OpenSSH test user is not root and has passwordless sudo.
		require.Equal(t, "0\n", mustRun(t, c, "id -u"))
		target.NoSudo = true
		plain := dial(t, target)
		require.NotEqual(t, "0\n", mustRun(t, plain, "id -u"))
	})
}

func TestDetachedRunAndPoll(t *testing.T) {
	t.Parallel()
	eachBackend(t, 1, func(t *testing.T, b backend) {
		c := dial(t, b.targets[0])
		dir := scratch(t, c) + "/task-1"
		ctx := context.Background()
		d := Detached{
			Dir:    dir,
			Script: `echo "out $TOKEN"; echo err >&2; sleep 1; exit 4`,
			Env:    map[string]string{"TOKEN": "hunter2"},
		}
		started, err := c.StartDetached(ctx, d)
		require.NoError(t, err)
		require.True(t, started)
		// A retried start does not start it twice.
		started, err = c.StartDetached(ctx, d)
		require.NoError(t, err)
		require.False(t, started)

		st, err := c.Poll(ctx, dir, []string{"hunter2"})
		require.NoError(t, err)
		require.Equal(t, Running, st.State)
		require.NoError(t, st.Err())

		st = pollUntilDone(t, c, dir, []string{"hunter2"})
		require.Equal(t, Exited, st.State)
		require.Equal(t, 4, st.ExitCode)
		require.Equal(t, "out "+Redacted+"\n", st.Stdout.Text)
		require.Equal(t, "err\n", st.Stderr.Text)
		var exit *ExitError
		require.ErrorAs(t, st.Err(), &exit)
		require.Equal(t, 4, exit.Code)

		// The script file is not readable by others, and nothing secret was
		// on a command line.
		require.Equal(t, "600\n", mustRun(t, c, "stat -c %a "+quote(dir+"/script")))
	})
}

func TestDetachedLargeOutput(t *testing.T) {
	t.Parallel()
	eachBackend(t, 1, func(t *testing.T, b backend) {
		c := dial(t, b.targets[0])
		dir := scratch(t, c) + "/big"
		const secret = "0123456789-secret-0123456789"
		_, err := c.StartDetached(context.Background(), Detached{Dir: dir, Script: `i=0; while [ $i -lt 5000 ]; do echo "$i $S"; i=$((i+1)); done`, Env: map[string]string{"S": secret}})
		require.NoError(t, err)
		st := pollUntilDone(t, c, dir, []string{secret})
		require.NoError(t, st.Err())
		require.True(t, st.Stdout.Truncated)
		require.NotContains(t, st.Stdout.Text, "secret")
		require.True(t, strings.HasSuffix(st.Stdout.Text, "4999 "+Redacted+"\n"), st.Stdout.Text[len(st.Stdout.Text)-100:])
	})
}

func TestDetachedLost(t *testing.T) {
	t.Parallel()
	eachBackend(t, 1, func(t *testing.T, b backend) {
		c := dial(t, b.targets[0])
		base := scratch(t, c)
		ctx := context.Background()
		start := func(name string) string {
			dir := base + "/" + name
			_, err := c.StartDetached(ctx, Detached{Dir: dir, Script: "sleep 60"})
			require.NoError(t, err)
			t.Cleanup(func() { _ = c.StopDetached(context.Background(), dir) })
			return dir
		}
		tests := []struct {
			name   string
			breaks string // shell run on the node against $D
			reason string
		}{
			{"missing", `kill -s TERM -- -$(cat "$D/pid"); while [ ! -f "$D/status" ]; do sleep 0.02; done; rm -rf "$D"`, LostMissing},
			{"rebooted", `echo 00000000-0000-0000-0000-000000000000 > "$D/boot_id"`, LostRebooted},
			{"vanished", `kill -s KILL -- -$(cat "$D/pid")`, LostVanished},
		}
		for _, tt := range tests {
			dir := start(tt.name)
			mustRun(t, c, "D="+quote(dir)+"; "+tt.breaks)
			// A killed process may take a moment to be reaped.
			var st Status
			for range 100 {
				var err error
				st, err = c.Poll(ctx, dir, nil)
				require.NoError(t, err)
				if st.State != Running {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
			require.Equal(t, Lost, st.State, tt.name)
			require.Equal(t, tt.reason, st.Reason)
			var lost *LostError
			require.ErrorAs(t, st.Err(), &lost)
			require.Equal(t, dir, lost.Dir)
		}
	})
}

func TestStopDetached(t *testing.T) {
	t.Parallel()
	eachBackend(t, 1, func(t *testing.T, b backend) {
		c := dial(t, b.targets[0])
		dir := scratch(t, c) + "/long"
		ctx := context.Background()
		_, err := c.StartDetached(ctx, Detached{Dir: dir, Script: "sleep 60"})
		require.NoError(t, err)
		require.NoError(t, c.StopDetached(ctx, dir))
		st := pollUntilDone(t, c, dir, nil)
		require.Equal(t, Exited, st.State)
		require.Equal(t, 128+15, st.ExitCode)
		require.NoError(t, c.RemoveDetached(ctx, dir))
		st, err = c.Poll(ctx, dir, nil)
		require.NoError(t, err)
		require.Equal(t, LostMissing, st.Reason)
	})
}

// TestStopBeforeTheStartStartsNothing: a stop that reaches the node before
// a start still on its way (the start's caller gave up, its session goes
// on) leaves the start nothing to run. (A stop that lands during the start
// is TestDetachedStartCutByTheDeadlineLeavesNothingRunning in
// automator/shell.)
func TestStopBeforeTheStartStartsNothing(t *testing.T) {
	t.Parallel()
	eachBackend(t, 1, func(t *testing.T, b backend) {
		c := dial(t, b.targets[0])
		base := scratch(t, c)
		ctx := context.Background()
		marker := base + "/ran"

		early := base + "/early"
		require.NoError(t, c.StopDetached(ctx, early))
		_, err := c.StartDetached(ctx, Detached{Dir: early, Script: "touch " + quote(marker)})
		var exit *ExitError
		require.ErrorAs(t, err, &exit, "the directory a stop took holds no command to start")
		require.ErrorContains(t, err, "holds no started command")

		out := mustRun(t, c, "if [ -e "+quote(marker)+" ]; then echo ran; else echo nothing; fi")
		require.Equal(t, "nothing\n", out)
	})
}

func pollUntilDone(t *testing.T, c *Client, dir string, secrets []string) Status {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		st, err := c.Poll(ctx, dir, secrets)
		require.NoError(t, err)
		if st.State != Running {
			return st
		}
		select {
		case <-ctx.Done():
			t.Fatal("detached command still running")
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func TestFiftyHostsAtOnce(t *testing.T) {
	t.Parallel()
	eachBackend(t, 50, func(t *testing.T, b backend) {
		pool := NewPool()
		defer pool.Close()
		var wg sync.WaitGroup
		errs := make([]error, 50)
		outs := make([]string, 50)
		for i := range 50 {
			target := b.targets[i%len(b.targets)]
			wg.Add(1)
			go func() {
				defer wg.Done()
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				defer cancel()
				// Separate connections even when hosts repeat: a per-run key.
				res, err := pool.Run(ctx, target, Command{Script: "echo $N; sleep 0.2", Env: map[string]string{"N": strconv.Itoa(i)}})
				errs[i], outs[i] = err, res.Stdout.Text
			}()
		}
		wg.Wait()
		for i := range 50 {
			require.NoError(t, errs[i], "run %d", i)
			require.Equal(t, strconv.Itoa(i)+"\n", outs[i])
		}
	})
}

func TestPoolReusesAndReplacesConnections(t *testing.T) {
	t.Parallel()
	b := inProcessBackend(t, 1)
	target, server := b.targets[0], b.servers[0]
	pool := NewPool()
	defer pool.Close()
	ctx := context.Background()
	for range 3 {
		res, err := pool.Run(ctx, target, Command{Script: "echo hi"})
		require.NoError(t, err)
		require.Equal(t, "hi\n", res.Stdout.Text)
	}
	require.EqualValues(t, 1, server.Logins.Load())

	// The connection breaks between tasks: the next run redials.
	server.DropConnections()
	require.Eventually(t, func() bool {
		c, err := pool.Client(ctx, target)
		return err == nil && c.Alive()
	}, 5*time.Second, 10*time.Millisecond)
	res, err := pool.Run(ctx, target, Command{Script: "echo again"})
	require.NoError(t, err)
	require.Equal(t, "again\n", res.Stdout.Text)
	require.EqualValues(t, 2, server.Logins.Load())

	// A target pinning another key is refused the pooled connection.
	_, other := testKey(t)
	wrong := target
	wrong.HostKey = other.AuthorizedKey
	_, err = pool.Run(ctx, wrong, Command{Script: "true"})
	var hk *HostKeyError
	require.ErrorAs(t, err, &hk)

	pool.Close()
	_, err = pool.Client(ctx, target)
	require.True(t, errors.Is(err, errPoolClosed))
}

func TestConnectionLostMidRun(t *testing.T) {
	t.Parallel()
	b := inProcessBackend(t, 1)
	c := dial(t, b.targets[0])
	go func() {
		time.Sleep(200 * time.Millisecond)
		b.servers[0].DropConnections()
	}()
	_, err := run(t, c, Command{Script: "echo started; sleep 5"})
	var tr *TransportError
	require.ErrorAs(t, err, &tr)
	require.Equal(t, "run", tr.Op)
	require.Eventually(t, func() bool { return !c.Alive() }, 5*time.Second, 10*time.Millisecond)
	_, err = run(t, c, Command{Script: "true"})
	require.ErrorAs(t, err, &tr)
	require.Equal(t, "session", tr.Op)
}

func TestCommandValidation(t *testing.T) {
	t.Parallel()
	b := inProcessBackend(t, 1)
	c := dial(t, b.targets[0])
	for _, cmd := range []Command{
		{Script: "true", Env: map[string]string{"1BAD": "x"}},
		{Script: "true", Env: map[string]string{"A-B": "x"}},
		{Script: "true", Env: map[string]string{"OK": "nul\x00"}},
		{Script: "nul\x00"},
		{Script: strings.Repeat("#", maxScript+1)},
		{Script: "true", SaveStdinTo: "relative"},
		{Script: "true", SaveStdinTo: "/tmp/new\nline"},
	} {
		_, err := run(t, c, cmd)
		require.Error(t, err)
		require.True(t, strings.HasPrefix(err.Error(), "sshexec: "), err.Error())
	}
}

// TestPoolAdoptsAConnectionOfTheSameLogin: a connection logged in with one
// key serves, through As and Adopt, a target naming another key of the
// same login, with no second login; As refuses another host, user or host
// key; Adopt keeps a live connection the pool already holds.
func TestPoolAdoptsAConnectionOfTheSameLogin(t *testing.T) {
	t.Parallel()
	b := inProcessBackend(t, 1)
	first, server := b.targets[0], b.servers[0]
	ctx := context.Background()
	c, err := Dial(ctx, first)
	require.NoError(t, err)

	otherKey, _ := testKey(t)
	endpoint := first
	endpoint.Node, endpoint.Key = "endpoint", otherKey // not authorized on the server: only the adopted connection gets in

	for name, bad := range map[string]func(*Target){
		"no pinned key": func(tg *Target) { tg.HostKey = "" },
		"another user":  func(tg *Target) { tg.User = "someone-else" },
		"another host":  func(tg *Target) { tg.Address = "127.0.0.1:1" },
	} {
		tg := endpoint
		bad(&tg)
		_, err := c.As(tg)
		require.Error(t, err, name)
	}
	_, wrongHost := testKey(t)
	tg := endpoint
	tg.HostKey = wrongHost.AuthorizedKey
	_, err = c.As(tg)
	var hk *HostKeyError
	require.ErrorAs(t, err, &hk, "the handshake saw another host key than the target pins")

	view, err := c.As(endpoint)
	require.NoError(t, err)
	_, fresh := view.NewlyPinned()
	require.False(t, fresh, "the view checks the pinned key; nothing to pin")
	pool := NewPool()
	defer pool.Close()
	pool.Adopt(endpoint, view)
	res, err := pool.Run(ctx, endpoint, Command{Script: "echo adopted"})
	require.NoError(t, err)
	require.Equal(t, "adopted\n", res.Stdout.Text)
	require.EqualValues(t, 1, server.Logins.Load(), "the adopted connection served the run")

	// A second connection offered for the same target is closed: the pool
	// keeps its live one.
	c2, err := Dial(ctx, first)
	require.NoError(t, err)
	view2, err := c2.As(endpoint)
	require.NoError(t, err)
	pool.Adopt(endpoint, view2)
	require.Eventually(t, func() bool { return !c2.Alive() }, 5*time.Second, 10*time.Millisecond)
	got, err := pool.Client(ctx, endpoint)
	require.NoError(t, err)
	require.Same(t, view, got)

	// Forgotten, the target logs in with its own key, which the server
	// refuses.
	pool.Forget(endpoint)
	require.Eventually(t, func() bool { return !c.Alive() }, 5*time.Second, 10*time.Millisecond)
	_, err = pool.Run(ctx, endpoint, Command{Script: "true"})
	var te *TransportError
	require.ErrorAs(t, err, &te)
	require.Equal(t, "authenticate", te.Op)
}

// TestDialCutByTheCallersDeadlineIsATimeout: a reachable node dialed
// after the caller's time ran out (an action's deadline that passed while
// a loaded machine had not yet run the dial) is the caller giving up, a
// TimeoutError, not an unreachable node.
func TestDialCutByTheCallersDeadlineIsATimeout(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	signer, _ := testKey(t)
	ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Millisecond))
	defer cancel()
	_, err = Dial(ctx, Target{Node: "n", Address: l.Addr().String(), User: "root", Key: signer})
	var timeout *TimeoutError
	require.ErrorAs(t, err, &timeout)
	require.Equal(t, "connect", timeout.Op)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	var un *UnreachableError
	require.False(t, errors.As(err, &un), "not the node's fault: %v", err)
}
