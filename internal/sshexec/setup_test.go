package sshexec

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/heddle-io/heddle/internal/sshexec/sshtest"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"
)

// backend is a set of SSH servers the same tests run against: in-process
// servers always, real OpenSSH servers when scripts/sshd-hosts.sh started
// them.
type backend struct {
	name    string
	targets []Target // host keys pinned
	// servers is set for in-process servers, index-aligned with targets.
	servers []*sshtest.Server
	// rootLogin: commands run as root without sudo.
	rootLogin bool
}

// eachBackend runs fn against every available backend, as parallel subtests.
// Without HEDDLE_SSH_HOSTS the OpenSSH backend is skipped, unless CI=true:
// CI must exercise real OpenSSH.
func eachBackend(t *testing.T, servers int, fn func(t *testing.T, b backend)) {
	t.Helper()
	t.Run("inprocess", func(t *testing.T) {
		t.Parallel()
		fn(t, inProcessBackend(t, servers))
	})
	t.Run("openssh", func(t *testing.T) {
		t.Parallel()
		fn(t, opensshBackend(t))
	})
}

func testKey(t testing.TB) (ssh.Signer, KeyPair) {
	t.Helper()
	kp, err := GenerateKeyPair()
	require.NoError(t, err)
	signer, err := ParsePrivateKey(kp.PrivateKey)
	require.NoError(t, err)
	return signer, kp
}

func inProcessBackend(t testing.TB, n int) backend {
	t.Helper()
	signer, _ := testKey(t)
	b := backend{name: "inprocess", rootLogin: os.Geteuid() == 0}
	user := "root"
	if !b.rootLogin {
		user = "tester" // the in-process server runs commands as the test process anyway
	}
	for i := range n {
		s := sshtest.Start(t, "127.0.0.1:0", nil, signer.PublicKey())
		b.servers = append(b.servers, s)
		b.targets = append(b.targets, Target{
			Node: fmt.Sprintf("local-%d", i), Address: s.Addr, User: user, Key: signer,
			HostKey: FormatPublicKey(s.HostKey.PublicKey()), NoSudo: !b.rootLogin,
		})
	}
	return b
}

func opensshBackend(t testing.TB) backend {
	t.Helper()
	hosts := os.Getenv("HEDDLE_SSH_HOSTS")
	if hosts == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true but HEDDLE_SSH_HOSTS is unset: run scripts/sshd-hosts.sh start N and eval its env")
		}
		t.Skip("HEDDLE_SSH_HOSTS is unset: eval \"$(scripts/sshd-hosts.sh env)\" to test against OpenSSH")
	}
	keyPEM, err := os.ReadFile(os.Getenv("HEDDLE_SSH_KEY"))
	require.NoError(t, err)
	signer, err := ParsePrivateKey(keyPEM)
	require.NoError(t, err)
	known := readKnownHosts(t, os.Getenv("HEDDLE_SSH_KNOWN_HOSTS"))
	b := backend{name: "openssh"}
	for i, addr := range strings.Split(hosts, ",") {
		pinned, ok := known[addr]
		require.True(t, ok, "no known host key for %s", addr)
		b.targets = append(b.targets, Target{
			Node: fmt.Sprintf("openssh-%d", i), Address: addr,
			User: os.Getenv("HEDDLE_SSH_USER"), Key: signer, HostKey: pinned,
		})
	}
	return b
}

// readKnownHosts maps "host:port" to the authorized_keys form of its key
// from lines "[host]:port type base64".
func readKnownHosts(t testing.TB, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
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
	require.NoError(t, sc.Err())
	return out
}

func dial(t testing.TB, target Target) *Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := Dial(ctx, target)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// scratch is a fresh directory path on the node under /tmp, removed when
// the test ends.
func scratch(t testing.TB, c *Client) string {
	t.Helper()
	var b [6]byte
	_, _ = rand.Read(b[:])
	dir := "/tmp/heddle-sshexec-test/" + hex.EncodeToString(b[:])
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = c.RemoveDetached(ctx, dir)
	})
	return dir
}

func run(t testing.TB, c *Client, cmd Command) (Result, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return c.Run(ctx, cmd)
}

func mustRun(t testing.TB, c *Client, script string) string {
	t.Helper()
	res, err := run(t, c, Command{Script: script})
	require.NoError(t, err, "stderr: %s", res.Stderr.Text)
	return res.Stdout.Text
}
