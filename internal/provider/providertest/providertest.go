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
	"strings"
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
