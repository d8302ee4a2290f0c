package shell

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heddle-io/heddle/internal/automator"
	"github.com/heddle-io/heddle/internal/catalog"
	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/sshexec"
	"github.com/heddle-io/heddle/internal/sshexec/sshtest"
	"github.com/stretchr/testify/require"
)

func TestRunGivesTheScriptItsContext(t *testing.T) {
	t.Parallel()
	eachBackend(t, 1, func(t *testing.T, b backend) {
		sh := newShell(t, Config{})
		dir := workDir(t)
		req := request(b.targets[0], dir, map[string]string{
			FieldScript: `echo "action=$HEDDLE_ACTION service=$HEDDLE_SERVICE node=$HEDDLE_NODE_ID num=$HEDDLE_NODE_NUM"
echo "port field=$HEDDLE_FIELD_ZK_PORT"
echo "args=$# first=$1 second=$2"
echo "uid=$(id -u) pwd=$(pwd)"
grep -o '"clusterId":"c1"' "$HEDDLE_CONTEXT"
grep -o '"port":2181' "$HEDDLE_CONTEXT"
grep -o 'cfg-secret-123' "$HEDDLE_CONTEXT"
ls -l "$HEDDLE_CONTEXT" | cut -c1-10
echo to-stderr >&2`,
			"zk.port": "2181",
			FieldArgs: `--flag 'two words'`,
		})
		out := sh.Run(runCtx(t, 30*time.Second), req)
		require.NoError(t, out.Err, "stderr: %s", out.Stderr.Text)
		require.Equal(t, 0, out.ExitCode)
		stdout := out.Stdout.Text
		require.Contains(t, stdout, "action=install service=zookeeper node=c1-1000 num=1000\n")
		require.Contains(t, stdout, "port field=2181\n")
		require.Contains(t, stdout, "args=2 first=--flag second=two words\n")
		if b.sudo || os.Geteuid() == 0 {
			require.Contains(t, stdout, "uid=0 ", "actions run as root (through sudo when the login user is not root)")
		}
		require.Contains(t, stdout, "pwd="+dir+"\n")
		require.Contains(t, stdout, `"clusterId":"c1"`)
		require.Contains(t, stdout, `"port":2181`)
		require.Contains(t, stdout, "-rw-------")
		require.NotContains(t, stdout, "cfg-secret-123", "secrets are redacted from the output")
		require.Contains(t, stdout, sshexec.Redacted)
		require.Equal(t, "to-stderr\n", out.Stderr.Text)
		require.Empty(t, out.HostKey, "the host key was pinned already")

		// The context file is gone: it held the config.
		requireNoTaskFiles(t, dir)
	})
}

func TestRunFailingExitStatus(t *testing.T) {
	t.Parallel()
	eachBackend(t, 1, func(t *testing.T, b backend) {
		sh := newShell(t, Config{})
		out := sh.Run(runCtx(t, 30*time.Second), request(b.targets[0], workDir(t), map[string]string{
			FieldScript: "echo partial; echo 'cannot reach the quorum' >&2; exit 3",
		}))
		var exit *sshexec.ExitError
		require.ErrorAs(t, out.Err, &exit)
		require.Equal(t, 3, exit.Code)
		require.Equal(t, 3, out.ExitCode)
		require.ErrorContains(t, out.Err, "install of zookeeper on node c1-1000")
		require.Equal(t, "partial\n", out.Stdout.Text)
		require.Equal(t, "cannot reach the quorum\n", out.Stderr.Text)
	})
}

func TestRunTimeout(t *testing.T) {
	t.Parallel()
	eachBackend(t, 1, func(t *testing.T, b backend) {
		sh := newShell(t, Config{})
		start := time.Now()
		out := sh.Run(runCtx(t, 1500*time.Millisecond), request(b.targets[0], workDir(t), map[string]string{
			FieldScript: "echo started; sleep 60; echo never",
		}))
		var timeout *sshexec.TimeoutError
		require.ErrorAs(t, out.Err, &timeout)
		require.Equal(t, -1, out.ExitCode)
		require.Equal(t, "started\n", out.Stdout.Text)
		require.Less(t, time.Since(start), 30*time.Second, "the sleep was stopped, not waited out")
	})
}

func TestChangedHostKeyFailsNamingBothFingerprints(t *testing.T) {
	t.Parallel()
	eachBackend(t, 1, func(t *testing.T, b backend) {
		sh := newShell(t, Config{})
		target := b.targets[0]
		actual, err := sshexec.ParsePublicKey(target.HostKey)
		require.NoError(t, err)
		impostor := sshtest.NewHostKey(t).PublicKey()
		target.HostKey = sshexec.FormatPublicKey(impostor)
		out := sh.Run(runCtx(t, 30*time.Second), request(target, workDir(t), map[string]string{FieldScript: "echo must-not-run"}))
		var hk *sshexec.HostKeyError
		require.ErrorAs(t, out.Err, &hk)
		require.Equal(t, "c1-1000", hk.Node)
		require.Contains(t, out.Err.Error(), sshexec.Fingerprint(impostor))
		require.Contains(t, out.Err.Error(), sshexec.Fingerprint(actual))
		require.Empty(t, out.Stdout.Text)
	})
}

func TestFirstContactPinsTheHostKey(t *testing.T) {
	t.Parallel()
	b := inProcess(t, 1)
	sh := newShell(t, Config{})
	target := b.targets[0]
	target.HostKey = ""
	out := sh.Bootstrap(runCtx(t, 30*time.Second), request(target, workDir(t), nil))
	require.NoError(t, out.Err)
	require.Equal(t, sshexec.FormatPublicKey(b.servers[0].HostKey.PublicKey()), out.HostKey)
	require.Contains(t, out.Stdout.Text, "heddle: bootstrapped as ")
}

func TestHostKeyChangedOnTheSameAddress(t *testing.T) {
	t.Parallel()
	b := inProcess(t, 1)
	sh := newShell(t, Config{})
	target := b.targets[0]
	old := b.servers[0].HostKey.PublicKey()
	ok := sh.Run(runCtx(t, 30*time.Second), request(target, workDir(t), map[string]string{FieldScript: "true"}))
	require.NoError(t, ok.Err)

	// The node is rebuilt behind the same address: a new host key. The
	// pooled connection dies with the old server's connections.
	rebuilt := sshtest.NewHostKey(t)
	b.servers[0].ReplaceHostKey(rebuilt)
	b.servers[0].DropConnections()
	out := sh.Run(runCtx(t, 30*time.Second), request(target, workDir(t), map[string]string{FieldScript: "echo must-not-run"}))
	var hk *sshexec.HostKeyError
	require.ErrorAs(t, out.Err, &hk)
	require.Equal(t, sshexec.Fingerprint(old), hk.Pinned)
	require.Equal(t, sshexec.Fingerprint(rebuilt.PublicKey()), hk.Presented)
	require.ErrorContains(t, out.Err, "node c1-1000")
}

func TestUnreachableNode(t *testing.T) {
	t.Parallel()
	b := inProcess(t, 1)
	target := b.targets[0]
	target.Address = "127.0.0.1:1"
	out := newShell(t, Config{}).Run(runCtx(t, 30*time.Second), request(target, workDir(t), map[string]string{FieldScript: "true"}))
	var unreachable *sshexec.UnreachableError
	require.ErrorAs(t, out.Err, &unreachable)
	require.Equal(t, -1, out.ExitCode)
}

func TestOutputLargerThanTheTail(t *testing.T) {
	t.Parallel()
	eachBackend(t, 1, func(t *testing.T, b backend) {
		sh := newShell(t, Config{})
		// 100,000 bytes of 'x', the secret near the end, more after it.
		out := sh.Run(runCtx(t, 30*time.Second), request(b.targets[0], workDir(t), map[string]string{
			FieldScript: `head -c 100000 /dev/zero | tr '\0' x; echo; echo "password is cfg-secret-123 ok"; head -c 5000 /dev/zero | tr '\0' y >&2`,
		}))
		require.NoError(t, out.Err)
		require.True(t, out.Stdout.Truncated)
		require.Equal(t, int64(100000+1+len("password is cfg-secret-123 ok\n")), out.Stdout.Size)
		require.LessOrEqual(t, len(out.Stdout.Text), sshexec.TailLimit)
		require.True(t, strings.HasSuffix(out.Stdout.Text, "password is "+sshexec.Redacted+" ok\n"))
		require.False(t, out.Stderr.Truncated)
		require.Len(t, out.Stderr.Text, 5000)
	})
}

func TestScriptsWithAnInterpreterLineAndLargeScripts(t *testing.T) {
	t.Parallel()
	eachBackend(t, 1, func(t *testing.T, b backend) {
		sh := newShell(t, Config{})
		shebang := sh.Run(runCtx(t, 30*time.Second), request(b.targets[0], workDir(t), map[string]string{
			FieldScript: "#!/bin/sh -e\necho before\nfalse\necho not-reached\n",
		}))
		require.Equal(t, 1, shebang.ExitCode, "the #! line's -e applies")
		require.Equal(t, "before\n", shebang.Stdout.Text)

		// Larger than the inline limit: uploaded first, then run.
		big := "#!/bin/sh\n# " + strings.Repeat("padding ", inlineLimit/8+100) + "\necho big script ran \"$1\"\n"
		out := sh.Run(runCtx(t, 30*time.Second), request(b.targets[0], workDir(t), map[string]string{FieldScript: big, FieldArgs: "arg1"}))
		require.NoError(t, out.Err, "stderr: %s", out.Stderr.Text)
		require.Equal(t, "big script ran arg1\n", out.Stdout.Text)
	})
}

func TestScriptThatContainsAHereDocLookalike(t *testing.T) {
	t.Parallel()
	b := inProcess(t, 1)
	sh := newShell(t, Config{})
	out := sh.Run(runCtx(t, 30*time.Second), request(b.targets[0], workDir(t), map[string]string{
		FieldScript: "cat <<'EOF'\nHEDDLE_SCRIPT_\n'quoted' \"double\" $HOME `x`\nEOF",
	}))
	require.NoError(t, out.Err, out.Stderr.Text)
	require.Equal(t, "HEDDLE_SCRIPT_\n'quoted' \"double\" $HOME `x`\n", out.Stdout.Text)
}

func TestDetachedRun(t *testing.T) {
	t.Parallel()
	eachBackend(t, 1, func(t *testing.T, b backend) {
		sh := newShell(t, Config{PollInterval: 100 * time.Millisecond})
		dir := workDir(t)
		req := request(b.targets[0], dir, map[string]string{
			FieldScript: "echo detached $HEDDLE_ACTION; grep -c zookeeper \"$HEDDLE_CONTEXT\" >/dev/null && echo has-context; echo cfg-secret-123 >&2; sleep 1; exit 4",
		})
		req.Timeout = time.Hour // above the threshold: detached
		out := sh.Run(runCtx(t, 30*time.Second), req)
		var exit *sshexec.ExitError
		require.ErrorAs(t, out.Err, &exit)
		require.Equal(t, 4, out.ExitCode)
		require.Equal(t, "detached install\nhas-context\n", out.Stdout.Text)
		require.Equal(t, sshexec.Redacted+"\n", out.Stderr.Text)
		requireNoTaskFiles(t, dir)
	})
}

func TestDetachedRunStoppedAtTheTimeout(t *testing.T) {
	t.Parallel()
	eachBackend(t, 1, func(t *testing.T, b backend) {
		sh := newShell(t, Config{PollInterval: 100 * time.Millisecond})
		dir := workDir(t)
		marker := filepath.Join(t.TempDir(), "marker")
		req := request(b.targets[0], dir, map[string]string{
			FieldScript: "sleep 3; touch " + marker,
			FieldDetach: "true",
		})
		out := sh.Run(runCtx(t, 800*time.Millisecond), req)
		var timeout *sshexec.TimeoutError
		require.ErrorAs(t, out.Err, &timeout)
		time.Sleep(3 * time.Second)
		require.NoFileExists(t, marker, "the detached script was stopped")
	})
}

func TestDetachedRunLostWhenItsDirectoryVanishes(t *testing.T) {
	t.Parallel()
	b := inProcess(t, 1)
	sh := newShell(t, Config{PollInterval: 100 * time.Millisecond})
	dir := workDir(t)
	req := request(b.targets[0], dir, map[string]string{
		// The script moves its own run directory away (atomically, so no
		// poll sees it half removed), as a reboot into a
		// fresh /tmp would.
		FieldScript: `sleep 0.5; d=$(dirname "$HEDDLE_CONTEXT"); mv "$d/run" "$d/gone"; sleep 1`,
		FieldDetach: "true",
	})
	out := sh.Run(runCtx(t, 30*time.Second), req)
	var lost *sshexec.LostError
	require.ErrorAs(t, out.Err, &lost)
	// Which reason depends on where the move lands within one poll's
	// reads; every one of them fails the attempt.
	require.Contains(t, []string{sshexec.LostMissing, sshexec.LostRebooted, sshexec.LostVanished}, lost.Reason)
	require.ErrorContains(t, out.Err, "install of zookeeper on node c1-1000")
	require.Equal(t, -1, out.ExitCode)
}

func TestScriptResources(t *testing.T) {
	t.Parallel()
	b := inProcess(t, 1)
	scripts := newScripts(t)
	sh := newShell(t, Config{Scripts: scripts})
	ctx := runCtx(t, 30*time.Second)
	put := func(content string) int {
		stored, _, err := scripts.Put(ctx, "acme", &domain.Script{Meta: domain.Meta{Name: "install-zk"}, Content: content}, "")
		require.NoError(t, err)
		return stored.EntityMeta().Version
	}
	require.Equal(t, 1, put("echo version one"))
	require.Equal(t, 2, put("echo version two"))

	for _, tt := range []struct {
		version, want string
	}{{"", "version two\n"}, {"1", "version one\n"}, {"2", "version two\n"}} {
		out := sh.Run(ctx, request(b.targets[0], workDir(t), map[string]string{FieldScriptResource: "install-zk", FieldScriptVersion: tt.version}))
		require.NoError(t, out.Err)
		require.Equal(t, tt.want, out.Stdout.Text)
	}
	missing := sh.Run(ctx, request(b.targets[0], workDir(t), map[string]string{FieldScriptResource: "install-zk", FieldScriptVersion: "3"}))
	require.ErrorIs(t, missing.Err, catalog.ErrNotFound)

	// Another tenant's resources are out of reach.
	req := request(b.targets[0], workDir(t), map[string]string{FieldScriptResource: "install-zk"})
	req.Context.Tenant = "other"
	require.ErrorIs(t, sh.Run(ctx, req).Err, catalog.ErrNotFound)

	// A deleted script's pinned versions still run (a cluster planned with
	// one keeps it); its latest is gone.
	require.NoError(t, scripts.Delete(ctx, "acme", domain.KindScript, "install-zk", ""))
	out := sh.Run(ctx, request(b.targets[0], workDir(t), map[string]string{FieldScriptResource: "install-zk", FieldScriptVersion: "1"}))
	require.NoError(t, out.Err)
	require.Equal(t, "version one\n", out.Stdout.Text)
	latest := sh.Run(ctx, request(b.targets[0], workDir(t), map[string]string{FieldScriptResource: "install-zk"}))
	require.ErrorIs(t, latest.Err, catalog.ErrNotFound)

	none := newShell(t, Config{}).Run(ctx, request(b.targets[0], workDir(t), map[string]string{FieldScriptResource: "install-zk"}))
	require.ErrorContains(t, none.Err, "no script store")
}

func TestManyNodesAtOnce(t *testing.T) {
	t.Parallel()
	eachBackend(t, 50, func(t *testing.T, b backend) {
		sh := newShell(t, Config{})
		ctx := runCtx(t, 60*time.Second)
		dir := workDir(t)
		outs := make([]automator.Output, len(b.targets))
		var wg sync.WaitGroup
		for i, target := range b.targets {
			wg.Add(1)
			go func() {
				defer wg.Done()
				outs[i] = sh.Run(ctx, request(target, dir, map[string]string{FieldScript: "echo $HEDDLE_NODE_ID"}))
			}()
		}
		wg.Wait()
		for i, out := range outs {
			require.NoError(t, out.Err, "node %d", i)
			require.Equal(t, b.targets[i].Node+"\n", out.Stdout.Text)
		}
	})
}

func TestValidateAction(t *testing.T) {
	t.Parallel()
	sh := newShell(t, Config{})
	tests := []struct {
		name   string
		fields map[string]string
		want   map[string]string // field -> code
	}{
		{"inline", map[string]string{FieldScript: "echo %host.self%"}, nil},
		{"resource", map[string]string{FieldScriptResource: "install-zk", FieldScriptVersion: "3", FieldDetach: "true"}, nil},
		{"no script", map[string]string{"args": "x"}, map[string]string{"fields.script": domain.CodeRequired}},
		{"both", map[string]string{FieldScript: "x", FieldScriptResource: "y"}, map[string]string{"fields.script_resource": domain.CodeConflict}},
		{"bad version", map[string]string{FieldScriptResource: "y", FieldScriptVersion: "latest"}, map[string]string{"fields.script_version": domain.CodeInvalid}},
		{"version without resource", map[string]string{FieldScript: "x", FieldScriptVersion: "1"}, map[string]string{"fields.script_version": domain.CodeInvalid}},
		{"bad detach", map[string]string{FieldScript: "x", FieldDetach: "yes"}, map[string]string{"fields.detach": domain.CodeInvalid}},
		{"bad macro", map[string]string{FieldScript: "echo %host.service.%", "conf": "%nope%"}, map[string]string{"fields.script": domain.CodeInvalid, "fields.conf": domain.CodeInvalid}},
		{"bad resource name", map[string]string{FieldScriptResource: "../x"}, map[string]string{"fields.script_resource": domain.CodeInvalid}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := map[string]string{}
			for _, p := range sh.ValidateAction(tt.fields) {
				got[p.Field] = p.Code
				require.NotEmpty(t, p.Message)
			}
			if tt.want == nil {
				tt.want = map[string]string{}
			}
			require.Equal(t, tt.want, got)
		})
	}
}

func TestAttemptBaseIsSafeAndDistinct(t *testing.T) {
	t.Parallel()
	seen := map[string]string{}
	for _, id := range []string{"install:zk:c1-1000", "install_zk_c1-1000", "rollback:delete:c1-1000", "../../etc", ".hidden", "", strings.Repeat("a", 200)} {
		d := attemptBase("/var/tmp/heddle", automator.TaskContext{JobID: "job/1", TaskID: id, Attempt: 2})
		require.True(t, strings.HasPrefix(d, "/var/tmp/heddle/tasks/"), d)
		require.Equal(t, filepath.Clean(d), d)
		for _, part := range strings.Split(d, "/") {
			require.NotContains(t, []string{".", ".."}, part, d)
		}
		prev, dup := seen[d]
		require.False(t, dup, "%q and %q share %s", prev, id, d)
		seen[d] = id
	}
}

// requireNoTaskFiles checks that no attempt left files behind.
func requireNoTaskFiles(t testing.TB, dir string) {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(dir, "tasks"))
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	require.Empty(t, names, "the attempt's files are removed once its result is read")
}

func TestPlainScriptsRoundTrip(t *testing.T) {
	t.Parallel()
	// Bodies that would break a careless wrapper: quotes, a lone
	// parenthesis, exit, a syntax error, set -e.
	for _, tt := range []struct {
		body, stdout string
		status       int
	}{
		{`echo "it's" 'quoted' \$HOME`, "it's quoted $HOME\n", 0},
		{"echo one; exit 3; echo two", "one\n", 3},
		{"echo )", "", 2},
		{"set -e\nfalse\necho no", "", 1},
		{"case x in x) echo matched;; esac", "matched\n", 0},
		{"printf '%s|' \"$@\"", "a|b c|", 0},
	} {
		script, err := syncScript(tt.body, "/unused", false)
		require.NoError(t, err)
		cmd := exec.Command("/bin/sh", "-c", script)
		cmd.Env = []string{"HEDDLE_WORK_DIR=/", "HEDDLE_CONTEXT=/nonexistent/context.json", `HEDDLE_ARGS=a 'b c'`, "PATH=/usr/bin:/bin"}
		out, err := cmd.Output()
		status := 0
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			status = exit.ExitCode()
		}
		require.Equal(t, tt.status, status, tt.body)
		require.Equal(t, tt.stdout, string(out), tt.body)
	}
}

// TestDetachedStartAndCheck: Start returns at once with the action
// Pending; Checks (each a separate call, as the engine's polls are) finish
// it; a Check whose context has ended stops it. A synchronous action runs
// to its end in Start.
func TestDetachedStartFinishesAQuickActionInPlace(t *testing.T) {
	t.Parallel()
	eachBackend(t, 1, func(t *testing.T, b backend) {
		sh := newShell(t, Config{PollInterval: time.Hour, DetachAfter: time.Second, QuickWait: 5 * time.Second})
		dir := workDir(t)
		req := request(b.targets[0], dir, map[string]string{FieldScript: "sleep 0.2; echo quick"})
		req.Timeout = time.Minute // over the threshold: detached
		out := sh.Start(runCtx(t, 30*time.Second), req)
		require.NoError(t, out.Err)
		require.False(t, out.Pending, "an action that ends within QuickWait needs no poll through the queue")
		require.Equal(t, "quick\n", out.Stdout.Text)
		requireNoTaskFiles(t, dir)

		req = request(b.targets[0], dir, map[string]string{FieldScript: "sleep 30"})
		req.Timeout, req.Context.Attempt = time.Minute, 2
		sh = newShell(t, Config{PollInterval: time.Hour, DetachAfter: time.Second, QuickWait: 300 * time.Millisecond})
		out = sh.Start(runCtx(t, 30*time.Second), req)
		require.True(t, out.Pending, "a longer one is handed to the polls after QuickWait")
		require.Equal(t, time.Hour, out.PollAfter)
		ended, cancel := context.WithCancel(context.Background())
		cancel()
		out = sh.Check(ended, req)
		require.Error(t, out.Err, "a check past the deadline stops it")

		// The engine expects this action to take longer than QuickWait (it
		// did before): no wait in place, though this run would end within it.
		req = request(b.targets[0], dir, map[string]string{FieldScript: "sleep 0.2; echo quick"})
		req.Timeout, req.Context.Attempt, req.Expect = time.Minute, 3, 10*time.Second
		sh = newShell(t, Config{PollInterval: time.Hour, DetachAfter: time.Second, QuickWait: 5 * time.Second})
		out = sh.Start(runCtx(t, 30*time.Second), req)
		require.NoError(t, out.Err)
		require.True(t, out.Pending, "a run expected to outlast QuickWait is handed to the polls at once")
		checks := 0
		for out.Pending {
			time.Sleep(50 * time.Millisecond)
			out = sh.Check(runCtx(t, 30*time.Second), req)
			checks++
			require.Less(t, checks, 1000)
		}
		require.NoError(t, out.Err)
		require.Equal(t, "quick\n", out.Stdout.Text)
	})
}

func TestDetachedStartAndCheck(t *testing.T) {
	t.Parallel()
	eachBackend(t, 1, func(t *testing.T, b backend) {
		// QuickWait < 0: Start hands every detached run to the polls at once.
		sh := newShell(t, Config{PollInterval: 20 * time.Millisecond, DetachAfter: time.Second, QuickWait: -1})
		dir := workDir(t)
		req := request(b.targets[0], dir, map[string]string{FieldScript: "sleep 0.3; echo done detached; exit 3"})
		req.Timeout = time.Minute // over the threshold
		out := sh.Start(runCtx(t, 30*time.Second), req)
		require.NoError(t, out.Err)
		require.True(t, out.Pending)
		require.Equal(t, 20*time.Millisecond, out.PollAfter)
		checks := 0
		for out.Pending {
			time.Sleep(out.PollAfter)
			out = sh.Check(runCtx(t, 30*time.Second), req)
			checks++
			require.Less(t, checks, 1000)
		}
		var exit *sshexec.ExitError
		require.ErrorAs(t, out.Err, &exit)
		require.Equal(t, 3, out.ExitCode)
		require.Equal(t, "done detached\n", out.Stdout.Text)
		requireNoTaskFiles(t, dir)

		marker := filepath.Join(t.TempDir(), "marker")
		req = request(b.targets[0], dir, map[string]string{FieldScript: "sleep 2; touch " + marker, FieldDetach: "true"})
		req.Context.Attempt = 2
		out = sh.Start(runCtx(t, 30*time.Second), req)
		require.True(t, out.Pending)
		ended, cancel := context.WithCancel(context.Background())
		cancel()
		out = sh.Check(ended, req)
		var timeout *sshexec.TimeoutError
		require.ErrorAs(t, out.Err, &timeout)
		require.False(t, out.Pending)

		req = request(b.targets[0], dir, map[string]string{FieldScript: "echo sync"})
		req.Timeout = 500 * time.Millisecond // under the threshold
		out = sh.Start(runCtx(t, 30*time.Second), req)
		require.NoError(t, out.Err)
		require.False(t, out.Pending)
		require.Equal(t, "sync\n", out.Stdout.Text)
		time.Sleep(2500 * time.Millisecond)
		require.NoFileExists(t, marker, "the detached script was stopped")
	})
}
