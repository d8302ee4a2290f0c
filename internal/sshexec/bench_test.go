package sshexec

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
)

// fanOut runs fn for every target at once and returns the wall time.
func fanOut(b *testing.B, targets []Target, fn func(i int, t Target) error) time.Duration {
	b.Helper()
	var wg sync.WaitGroup
	errs := make([]error, len(targets))
	start := time.Now()
	for i, t := range targets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = fn(i, t)
		}()
	}
	wg.Wait()
	took := time.Since(start)
	for i, err := range errs {
		if err != nil {
			b.Fatalf("host %d: %v", i, err)
		}
	}
	return took
}

// minimalRun is the floor: dial, run, close, nothing else (no host key
// check, no output kept).
func minimalRun(t Target) error {
	c, err := ssh.Dial("tcp", t.Address, &ssh.ClientConfig{
		User: t.User, Auth: []ssh.AuthMethod{ssh.PublicKeys(t.Key)}, HostKeyCallback: ssh.InsecureIgnoreHostKey(),
	})
	if err != nil {
		return err
	}
	defer c.Close()
	s, err := c.NewSession()
	if err != nil {
		return err
	}
	defer s.Close()
	return s.Run("sleep 1")
}

// heddleRun is what the automator does for one action: dial with the pinned
// host key, save the task's context from stdin, run the script with its
// environment, keep redacted output tails, close.
func heddleRun(i int, t Target, contextDoc []byte, base string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := Dial(ctx, t)
	if err != nil {
		return err
	}
	defer c.Close()
	res, err := c.Run(ctx, Command{
		Script:      `sleep 1; echo done`,
		Env:         map[string]string{"HEDDLE_TASK": fmt.Sprint("task-", i), "HEDDLE_CONTEXT": fmt.Sprintf("%s/%d/context.json", base, i)},
		Stdin:       bytes.NewReader(contextDoc),
		SaveStdinTo: fmt.Sprintf("%s/%d/context.json", base, i),
		Secrets:     []string{"bench-secret-value"},
	})
	if err == nil && res.Stdout.Text != "done\n" {
		err = fmt.Errorf("unexpected output %q", res.Stdout.Text)
	}
	return err
}

// psshRun times Debian's parallel-ssh on the same hosts, same key, same
// pinned host keys, when it is installed.
func psshRun(b *testing.B, targets []Target) (time.Duration, bool) {
	bin, err := exec.LookPath("parallel-ssh")
	if err != nil {
		return 0, false
	}
	dir := b.TempDir()
	var hosts strings.Builder
	for _, t := range targets {
		hosts.WriteString(t.Address + "\n")
	}
	hostsFile := filepath.Join(dir, "hosts")
	if err := os.WriteFile(hostsFile, []byte(hosts.String()), 0o600); err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(bin, "-h", hostsFile, "-l", targets[0].User, "-p", fmt.Sprint(len(targets)), "-t", "60",
		"-x", "-i "+os.Getenv("HEDDLE_SSH_KEY")+" -o UserKnownHostsFile="+os.Getenv("HEDDLE_SSH_KNOWN_HOSTS")+" -o StrictHostKeyChecking=yes -o BatchMode=yes",
		"sleep 1")
	start := time.Now()
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("parallel-ssh: %v\n%s", err, out)
	}
	return time.Since(start), true
}

// BenchmarkFanOut50SleepOne runs `sleep 1` on 50 OpenSSH hosts at once, each
// iteration once with every variant in turn, and reports each variant's
// mean wall time and heddle's ratio to the minimal x/crypto/ssh program.
// Needs 50 servers: scripts/sshd-hosts.sh start 50; eval "$(... env)".
//
//	go test -run '^$' -bench FanOut50 -benchtime 5x ./internal/sshexec/
func BenchmarkFanOut50SleepOne(b *testing.B) {
	backend := opensshBackend(b)
	if len(backend.targets) < 50 {
		b.Skipf("%d OpenSSH hosts; the benchmark needs 50", len(backend.targets))
	}
	targets := backend.targets[:50]
	noSudo := make([]Target, len(targets))
	for i, t := range targets {
		t.NoSudo = true
		noSudo[i] = t
	}
	b.Cleanup(func() {
		for _, t := range targets {
			if c, err := Dial(context.Background(), t); err == nil {
				_, _ = c.Run(context.Background(), Command{Script: "rm -rf /tmp/heddle-bench-root /tmp/heddle-bench-" + t.User})
				_ = c.Close()
			}
		}
	})
	contextDoc := []byte(`{"cluster":{"id":"c-bench","nodes":50},"service":"bench","action":"start","secret":"bench-secret-value"}`)
	var minimal, heddle, heddleNoSudo, pssh time.Duration
	psshRuns := 0
	b.ReportAllocs()
	for b.Loop() {
		minimal += fanOut(b, targets, func(_ int, t Target) error { return minimalRun(t) })
		heddle += fanOut(b, targets, func(i int, t Target) error { return heddleRun(i, t, contextDoc, "/tmp/heddle-bench-root") })
		heddleNoSudo += fanOut(b, noSudo, func(i int, t Target) error {
			t.Node += "-nosudo"
			return heddleRun(i, t, contextDoc, "/tmp/heddle-bench-"+t.User)
		})
		if d, ok := psshRun(b, targets); ok {
			pssh += d
			psshRuns++
		}
	}
	n := float64(b.N)
	b.ReportMetric(minimal.Seconds()/n, "minimal-s")
	b.ReportMetric(heddle.Seconds()/n, "heddle-sudo-s")
	b.ReportMetric(heddleNoSudo.Seconds()/n, "heddle-nosudo-s")
	b.ReportMetric(heddle.Seconds()/minimal.Seconds(), "ratio-sudo")
	b.ReportMetric(heddleNoSudo.Seconds()/minimal.Seconds(), "ratio-nosudo")
	if psshRuns > 0 {
		b.ReportMetric(pssh.Seconds()/float64(psshRuns), "pssh-s")
	}
}
