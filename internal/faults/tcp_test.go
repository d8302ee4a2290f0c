package faults_test

import (
	"bufio"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"

	"github.com/heddle-io/heddle/internal/faults"
	"github.com/heddle-io/heddle/internal/provider/providertest"
)

// TestTCPProxyOverOpenSSH: SSH to a real OpenSSH host through the proxy; a
// stall holds a command's answer until it ends, a drop cuts a running
// command's session, and the proxy accepts new connections after it.
func TestTCPProxyOverOpenSSH(t *testing.T) {
	t.Parallel()
	hosts := providertest.StartOpenSSH(t)
	h := hosts.Hosts[0]
	p, err := faults.NewTCPProxy("ssh", h.Address)
	require.NoError(t, err)
	t.Cleanup(p.Close)
	hostKey, _, _, _, err := ssh.ParseAuthorizedKey([]byte(h.HostKey))
	require.NoError(t, err)
	cfg := &ssh.ClientConfig{User: hosts.User, Auth: []ssh.AuthMethod{ssh.PublicKeys(hosts.Key)},
		HostKeyCallback: ssh.FixedHostKey(hostKey), Timeout: 30 * time.Second}
	dial := func() *ssh.Client {
		c, err := ssh.Dial("tcp", p.Addr(), cfg)
		require.NoError(t, err)
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	type result struct {
		out []byte
		err error
	}
	run := func(c *ssh.Client, cmd string) <-chan result {
		done := make(chan result, 1)
		go func() {
			sess, err := c.NewSession()
			if err != nil {
				done <- result{err: err}
				return
			}
			defer sess.Close()
			out, err := sess.Output(cmd)
			done <- result{out, err}
		}()
		return done
	}
	wait := func(done <-chan result) result {
		select {
		case r := <-done:
			return r
		case <-time.After(time.Minute):
			t.Fatal("no answer a minute after the fault ended")
			return result{}
		}
	}

	c := dial()
	r := wait(run(c, "echo before"))
	require.NoError(t, r.err)
	require.Equal(t, "before\n", string(r.out))

	// A stall holds the answer for as long as it lasts, and loses nothing.
	resume, err := p.Stall()
	require.NoError(t, err)
	done := run(c, "echo held")
	select {
	case r := <-done:
		t.Fatalf("answered through a stall: %q %v", r.out, r.err)
	case <-time.After(300 * time.Millisecond):
	}
	resume()
	r = wait(done)
	require.NoError(t, r.err)
	require.Equal(t, "held\n", string(r.out))

	// A drop ends a running command's session with an error.
	sess, err := c.NewSession()
	require.NoError(t, err)
	stdout, err := sess.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, sess.Start("echo ready; sleep 60; echo finished"))
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "ready\n", line)
	require.NoError(t, p.Drop())
	waited := make(chan error, 1)
	go func() { waited <- sess.Wait() }()
	select {
	case err := <-waited:
		require.Error(t, err, "the session was cut")
	case <-time.After(30 * time.Second):
		t.Fatal("the session outlived the drop by 30 s")
	}

	// New connections go through again.
	r = wait(run(dial(), "echo after"))
	require.NoError(t, r.err)
	require.Equal(t, "after\n", string(r.out))
	require.Equal(t, map[faults.Kind]int64{faults.Drop: 1, faults.Stall: 1}, p.Counts())
}
