package main

import (
	"bufio"
	"bytes"
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/demotest"
)

// The README's "To run heddle yourself" steps, run exactly as written: the
// same commands, flags and defaults (the server on 127.0.0.1:7070 with its
// data in .heddle), from a fresh working directory. The defaults name a
// fixed port, which another heddle on this machine may hold, so the steps
// run in a network namespace of their own (root: CI and `make test` have
// it), where 127.0.0.1:7070 and the local nodes' 127.42.x.y addresses are
// this test's alone.

const readmeNetnsEnv = "HEDDLE_TEST_README_NETNS"

// readmeSteps returns the shell lines of the README's block that follows
// marker, without comments.
func readmeSteps(t *testing.T, marker string) []string {
	t.Helper()
	data, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	text := string(data)
	at := strings.Index(text, marker)
	require.GreaterOrEqual(t, at, 0, "the README has %q", marker)
	block := text[at:]
	start := strings.Index(block, "```sh\n")
	require.GreaterOrEqual(t, start, 0)
	block = block[start+len("```sh\n"):]
	block = block[:strings.Index(block, "```")]
	var steps []string
	for _, line := range strings.Split(block, "\n") {
		if i := strings.Index(line, " #"); i >= 0 {
			line = line[:i]
		}
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			steps = append(steps, line)
		}
	}
	return steps
}

func TestReadmeRunHeddleYourself(t *testing.T) {
	if testing.Short() {
		t.Skip("builds heddle and runs a cluster")
	}
	if os.Getenv(readmeNetnsEnv) == "" {
		if err := exec.Command("unshare", "--net", "--", "true").Run(); err != nil {
			t.Skipf("needs a network namespace of its own (root with CAP_SYS_ADMIN; make test runs as root): %v", err)
		}
		// Run this test again inside a new network namespace.
		work := t.TempDir()
		t.Cleanup(func() { demotest.KillProcessesUnder(work) })
		ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "unshare", "--net", "--", os.Args[0], "-test.run", "^TestReadmeRunHeddleYourself$", "-test.v")
		cmd.Env = append(os.Environ(), readmeNetnsEnv+"="+work)
		// Its own process group, ended as a whole: a server the steps
		// started must not outlive a timeout.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
		require.Contains(t, string(out), "--- PASS: TestReadmeRunHeddleYourself")
		return
	}
	runReadmeSteps(t, os.Getenv(readmeNetnsEnv))
}

func runReadmeSteps(t *testing.T, work string) {
	out, err := exec.Command("ip", "link", "set", "lo", "up").CombinedOutput()
	require.NoError(t, err, "%s", out)
	t.Cleanup(func() { demotest.KillProcessesUnder(work) })

	// A fresh working directory that has what a checkout has, and no
	// bin/ or .heddle/ of its own.
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	entries, err := os.ReadDir(root)
	require.NoError(t, err)
	for _, e := range entries {
		switch e.Name() {
		case ".git", "bin", ".heddle", "dist":
			continue
		}
		require.NoError(t, os.Symlink(filepath.Join(root, e.Name()), filepath.Join(work, e.Name())))
	}
	// The user's environment, less anything that would move a default.
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "HEDDLE_") {
			env = append(env, kv)
		}
	}
	env = append(env, "HEDDLE_CONFIG="+filepath.Join(work, "no-cli-config.yaml"))

	keyPattern := regexp.MustCompile(`hdl_[A-Za-z0-9_-]{43}`)
	var key, clusterID, jobID string
	var server *exec.Cmd
	var serverLog lockedBuffer
	t.Cleanup(func() {
		if server != nil && server.Process != nil {
			_ = server.Process.Signal(syscall.SIGINT)
			done := make(chan struct{})
			go func() { _ = server.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				_ = server.Process.Kill()
				<-done
			}
		}
		if t.Failed() {
			t.Logf("server output:\n%s", lastLines(serverLog.String(), 40))
		}
	})
	run := func(line string) string {
		t.Helper()
		cmd := exec.Command("bash", "-c", line)
		cmd.Dir, cmd.Env = work, append(env, "HEDDLE_KEY="+key)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s:\n%s", line, out)
		return string(out)
	}
	steps := readmeSteps(t, "To run heddle yourself:")
	require.Contains(t, steps, "bin/heddle server")
	for _, line := range steps {
		line = strings.NewReplacer("CLUSTER_ID", clusterID, "JOB_ID", jobID).Replace(line)
		t.Logf("$ %s", line)
		switch {
		case line == "bin/heddle server":
			server = exec.Command("bash", "-c", "exec "+line)
			server.Dir, server.Env = work, env
			// Dies with this test process, whatever ends it.
			server.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
			pr, pw, err := os.Pipe()
			require.NoError(t, err)
			server.Stdout, server.Stderr = pw, pw
			require.NoError(t, server.Start())
			pw.Close()
			keys := make(chan string, 1)
			go func() {
				sc := bufio.NewScanner(pr)
				for sc.Scan() {
					serverLog.WriteString(sc.Text() + "\n")
					if k := keyPattern.FindString(sc.Text()); k != "" && strings.Contains(sc.Text(), "export HEDDLE_KEY=") {
						select {
						case keys <- k:
						default:
						}
					}
				}
			}()
			select {
			case key = <-keys:
			case <-time.After(time.Minute):
				t.Fatalf("the server printed no superadmin key:\n%s", serverLog.String())
			}
			waitAnswers(t, "http://127.0.0.1:7070/v1/status")
		case strings.HasPrefix(line, "export HEDDLE_KEY="):
			// The key the step before printed (kept in key).
			require.NotEmpty(t, key)
		default:
			out := run(line)
			if k := keyPattern.FindString(out); k != "" {
				key = k
			}
			if m := regexp.MustCompile(`(?m)^cluster\s+(\S+)`).FindStringSubmatch(out); m != nil && clusterID == "" && strings.Contains(line, "--wait") {
				clusterID = m[1]
				if m := regexp.MustCompile(`(?m)^job\s+(\S+)`).FindStringSubmatch(out); m != nil {
					jobID = m[1]
				}
			}
			if strings.HasPrefix(line, "bin/heddle clusters show") {
				require.Contains(t, out, "ACTIVE", "the cluster is ACTIVE:\n%s", out)
			}
		}
	}
	require.NotEmpty(t, clusterID, "a create ran")
	require.Contains(t, run("bin/heddle clusters show "+clusterID), "TERMINATED")
	runFailing := func(line string) string {
		t.Helper()
		cmd := exec.Command("bash", "-c", line)
		cmd.Dir, cmd.Env = work, append(env, "HEDDLE_KEY="+key)
		out, err := cmd.CombinedOutput()
		require.Error(t, err, "%s is refused:\n%s", line, out)
		return string(out)
	}
	runReadmeStaticPools(t, work, func(home string) { env = append(env, "HOME="+home) }, run, runFailing)
	info, err := os.Stat(filepath.Join(work, ".heddle", "heddle.db"))
	require.NoError(t, err, "the default data directory holds the store")
	require.True(t, info.Mode().IsRegular())
}

// lockedBuffer is the server's output, written by the goroutine that reads
// it and read by the test.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) WriteString(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b.WriteString(s)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func waitAnswers(t *testing.T, url string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		resp, err := testHTTP.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not answer: %v", url, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
