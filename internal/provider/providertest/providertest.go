// Package providertest gives tests of the provisioning plugins the real
// OpenSSH servers that scripts/sshd-hosts.sh runs (their addresses, pinned
// host keys, login user and client key) and Settle, which drives a
// provider's Confirm or Delete through its polls as the dispatcher would.
package providertest

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/heddle-io/heddle/internal/provider"
	"github.com/heddle-io/heddle/internal/sshexec"
	"golang.org/x/crypto/ssh"
)

// Host is one OpenSSH server.
type Host struct {
	Address string // host:port
	HostKey string // authorized_keys form
}

// OpenSSH is the set of servers and the login they accept.
type OpenSSH struct {
	Hosts  []Host
	User   string // not root, with passwordless sudo
	Key    ssh.Signer
	KeyPEM []byte
}

// HowTo is the sentence a test prints when the servers are missing.
const HowTo = `start them with: scripts/sshd-hosts.sh start 50 && eval "$(scripts/sshd-hosts.sh env)"`

// StartOpenSSH returns the servers named by HEDDLE_SSH_HOSTS, HEDDLE_SSH_USER,
// HEDDLE_SSH_KEY and HEDDLE_SSH_KNOWN_HOSTS. Without them the test is
// skipped, except under CI=true, where it fails: CI must exercise real
// OpenSSH.
func StartOpenSSH(t testing.TB) OpenSSH {
	t.Helper()
	hosts := os.Getenv("HEDDLE_SSH_HOSTS")
	if hosts == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true but HEDDLE_SSH_HOSTS is unset: " + HowTo)
		}
		t.Skip("HEDDLE_SSH_HOSTS is unset, so the OpenSSH tests are skipped; " + HowTo)
	}
	pem, err := os.ReadFile(os.Getenv("HEDDLE_SSH_KEY"))
	if err != nil {
		t.Fatalf("HEDDLE_SSH_KEY: %v (%s)", err, HowTo)
	}
	key, err := sshexec.ParsePrivateKey(pem)
	if err != nil {
		t.Fatal(err)
	}
	known := knownHosts(t, os.Getenv("HEDDLE_SSH_KNOWN_HOSTS"))
	out := OpenSSH{User: os.Getenv("HEDDLE_SSH_USER"), Key: key, KeyPEM: pem}
	for _, addr := range strings.Split(hosts, ",") {
		hk, ok := known[addr]
		if !ok {
			t.Fatalf("no known host key for %s in HEDDLE_SSH_KNOWN_HOSTS (%s)", addr, HowTo)
		}
		out.Hosts = append(out.Hosts, Host{Address: addr, HostKey: hk})
	}
	return out
}

// knownHosts maps "host:port" to the key of lines "[host]:port type base64".
func knownHosts(t testing.TB, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("HEDDLE_SSH_KNOWN_HOSTS: %v (%s)", err, HowTo)
	}
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 3 {
			continue
		}
		hp := strings.Replace(strings.TrimPrefix(fields[0], "["), "]", "", 1)
		out[hp] = fields[1] + " " + fields[2]
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// Settle calls check (a provider's Confirm or Delete) as the engine's polls
// would: each call with the previous answer's Poll, after its Again, until
// an answer is done or an error, or ctx ends. It returns the last answer
// and how many calls were made.
func Settle(ctx context.Context, req provider.Request, check func(context.Context, provider.Request) (provider.Progress, error)) (provider.Progress, int, error) {
	req.Poll = ""
	for calls := 1; ; calls++ {
		p, err := check(ctx, req)
		if err != nil || !p.Pending() {
			return p, calls, err
		}
		t := time.NewTimer(p.Again)
		select {
		case <-ctx.Done():
			t.Stop()
			return p, calls, fmt.Errorf("still pending after %d calls (%s): %w", calls, p.Waiting, ctx.Err())
		case <-t.C:
		}
		req.Poll = p.Poll
	}
}

// Once makes one check (a provider's Confirm or Delete) of a node that is
// there at once (a local node, a registered host) and requires it to be
// the last: such a node never asks to be polled.
func Once(t testing.TB, ctx context.Context, req provider.Request, check func(context.Context, provider.Request) (provider.Progress, error)) (provider.Node, error) {
	t.Helper()
	p, err := check(ctx, req)
	if err == nil && p.Pending() {
		t.Fatalf("node %s asked to be checked again: %s", req.Node.ID, p.Waiting)
	}
	return p.Node, err
}

// ClaimDir holds one lock file per OpenSSH test host. The servers are one
// machine and one login shared by every test (and every engineer's) running
// at once; a test whose services listen on the hosts' addresses (a static
// pool running the demo catalog) claims the hosts it uses with an flock on
// the host's file, so two such tests never put services on one address.
// The kernel drops the lock when the process ends, however it ends. The
// directory is fixed (not TMPDIR) so that every claimer sees the same one.
// scripts/demo-static.sh claims hosts the same way (flock -n).
func ClaimDir() string { return "/tmp/heddle-sshd-claims" }

// ClaimFile is the lock file of the host at address (host:port).
func ClaimFile(address string) string {
	return filepath.Join(ClaimDir(), strings.NewReplacer(":", "_", "/", "_").Replace(address)+".lock")
}

// Claim takes n hosts no other test holds, waiting (up to wait) while too
// few are free, and releases them when the test ends. A test that cannot
// get them in time fails: the hosts are there, only busy.
func (o OpenSSH) Claim(t testing.TB, n int, wait time.Duration) []Host {
	t.Helper()
	if n > len(o.Hosts) {
		t.Fatalf("%d OpenSSH hosts are needed, %d run (%s)", n, len(o.Hosts), HowTo)
	}
	if err := os.MkdirAll(ClaimDir(), 0o777); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(wait)
	var held []*os.File
	release := func() {
		for _, f := range held {
			_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
			_ = f.Close()
		}
		held = nil
	}
	for {
		var got []Host
		for _, h := range o.Hosts {
			if len(got) == n {
				break
			}
			f, err := os.OpenFile(ClaimFile(h.Address), os.O_CREATE|os.O_RDWR, 0o666)
			if err != nil {
				release()
				t.Fatal(err)
			}
			if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
				_ = f.Close()
				continue
			}
			held = append(held, f)
			got = append(got, h)
		}
		if len(got) == n {
			t.Cleanup(release)
			return got
		}
		release()
		if time.Now().After(deadline) {
			t.Fatalf("only %d of the %d OpenSSH hosts needed are free of other tests' claims (%s) after %s", len(got), n, ClaimDir(), wait)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// Inventory is an Ansible YAML inventory of hosts, logging in as o's user
// with the key file HEDDLE_SSH_KEY names: what `heddle hosts import` reads.
func (o OpenSSH) Inventory(t testing.TB, hosts []Host) string {
	t.Helper()
	var inv strings.Builder
	inv.WriteString("all:\n  vars:\n    ansible_user: " + o.User + "\n    ansible_ssh_private_key_file: " + os.Getenv("HEDDLE_SSH_KEY") + "\n  hosts:\n")
	for i, h := range hosts {
		host, port, ok := strings.Cut(h.Address, ":")
		if !ok {
			t.Fatalf("host address %q has no port", h.Address)
		}
		fmt.Fprintf(&inv, "    sshd-%d:\n      ansible_host: %s\n      ansible_port: %s\n", i, host, port)
	}
	return inv.String()
}

// NodeHomes is a directory of the test's own for a static provider's
// node_homes, instead of the machine-wide /var/tmp/heddle-nodes that
// another test, run or demo may hold, or may have made with an owner the
// servers' login user cannot write as. The servers log in as their own
// user, so the path to it is opened to every user (as /tmp is); it goes
// with the test's temporary directory.
func NodeHomes(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	homes := filepath.Join(dir, "nodes")
	for _, step := range []func() error{
		func() error { return os.Chmod(filepath.Dir(dir), 0o755) },
		func() error { return os.Chmod(dir, 0o755) },
		func() error { return os.Mkdir(homes, 0o777) },
		func() error { return os.Chmod(homes, 0o777) }, // past the umask
	} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	return homes
}
