// Package sshtest runs a small SSH server inside a test process, built on
// golang.org/x/crypto/ssh, so that code speaking SSH can be tested where no
// OpenSSH server runs. It does what the shell automator needs of a node and
// what OpenSSH's sshd does for it: public-key login, "exec" requests run by
// /bin/sh -c as the test process's user in a new session (sshd calls setsid
// too), stdin, stdout, stderr, exit-status and exit-signal replies, and
// "signal" requests delivered to the command's whole process group.
package sshtest

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"golang.org/x/crypto/ssh"
)

// Server is a running in-process SSH server.
type Server struct {
	Addr    string
	HostKey ssh.Signer
	// Logins counts successful authentications, so tests can see whether a
	// connection was reused.
	Logins atomic.Int64

	listener   net.Listener
	authorized []byte
	keysFile   atomic.Pointer[string]
	config     *ssh.ServerConfig
	mu         sync.Mutex
	conns      map[net.Conn]bool
	wg         sync.WaitGroup
}

// NewHostKey generates an ed25519 host key.
func NewHostKey(t testing.TB) ssh.Signer {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	s, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Start listens on addr ("127.0.0.1:0" for any port) with hostKey (nil: a
// new one) and accepts the authorized key for any user name. The server is
// closed when the test ends.
func Start(t testing.TB, addr string, hostKey ssh.Signer, authorized ssh.PublicKey) *Server {
	t.Helper()
	if hostKey == nil {
		hostKey = NewHostKey(t)
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{Addr: l.Addr().String(), listener: l, conns: map[net.Conn]bool{}, authorized: authorized.Marshal()}
	s.ReplaceHostKey(hostKey)
	s.wg.Add(1)
	go s.serve()
	t.Cleanup(s.Close)
	return s
}

// ReplaceHostKey makes later connections see hostKey, as when a node is
// rebuilt behind the same address. Tests use it rather than a second server
// on the same port, which another test may have taken in between.
func (s *Server) ReplaceHostKey(hostKey ssh.Signer) {
	config := &ssh.ServerConfig{
		PublicKeyCallback: func(_ ssh.ConnMetadata, key ssh.PublicKey) (*ssh.Permissions, error) {
			if bytes.Equal(key.Marshal(), s.authorized) || s.inKeysFile(key) {
				return nil, nil
			}
			return nil, errors.New("key not authorized")
		},
	}
	config.AddHostKey(hostKey)
	s.mu.Lock()
	s.HostKey, s.config = hostKey, config
	s.mu.Unlock()
}

// AuthorizeKeysIn makes the server also accept every key listed in the
// authorized_keys file at path, read at each login, as sshd reads the
// login's ~/.ssh/authorized_keys: keys a test's code installs there log in.
func (s *Server) AuthorizeKeysIn(path string) { s.keysFile.Store(&path) }

func (s *Server) inKeysFile(key ssh.PublicKey) bool {
	p := s.keysFile.Load()
	if p == nil {
		return false
	}
	data, err := os.ReadFile(*p)
	for err == nil && len(data) > 0 {
		var k ssh.PublicKey
		k, _, _, data, err = ssh.ParseAuthorizedKey(data)
		if err == nil && bytes.Equal(k.Marshal(), key.Marshal()) {
			return true
		}
	}
	return false
}

// Close stops listening and drops every connection.
func (s *Server) Close() {
	_ = s.listener.Close()
	s.DropConnections()
	s.wg.Wait()
}

// DropConnections cuts every open connection, as a network failure would.
func (s *Server) DropConnections() {
	s.mu.Lock()
	for c := range s.conns {
		_ = c.Close()
	}
	s.mu.Unlock()
}

func (s *Server) serve() {
	defer s.wg.Done()
	for {
		c, err := s.listener.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		s.conns[c] = true
		s.mu.Unlock()
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.handle(c)
			s.mu.Lock()
			delete(s.conns, c)
			s.mu.Unlock()
		}()
	}
}

func (s *Server) handle(c net.Conn) {
	defer c.Close()
	s.mu.Lock()
	config := s.config
	s.mu.Unlock()
	_, chans, reqs, err := ssh.NewServerConn(c, config)
	if err != nil {
		return
	}
	s.Logins.Add(1)
	go ssh.DiscardRequests(reqs)
	var sessions sync.WaitGroup
	for nc := range chans {
		if nc.ChannelType() != "session" {
			_ = nc.Reject(ssh.UnknownChannelType, "only sessions")
			continue
		}
		ch, creqs, err := nc.Accept()
		if err != nil {
			continue
		}
		sessions.Add(1)
		go func() {
			defer sessions.Done()
			session(ch, creqs)
		}()
	}
	sessions.Wait()
}

// session serves one session channel: one exec, any number of signals.
func session(ch ssh.Channel, reqs <-chan *ssh.Request) {
	defer ch.Close()
	var cmd *exec.Cmd
	exited := make(chan struct{})
	for {
		var req *ssh.Request
		select {
		case req = <-reqs:
		case <-exited:
			reportExit(ch, cmd)
			return
		}
		if req == nil {
			if cmd != nil {
				// The client closed the channel: like sshd, leave the
				// command to its fate once it has been reaped.
				<-exited
			}
			return
		}
		switch {
		case req.Type == "exec" && cmd == nil:
			var payload struct{ Command string }
			if ssh.Unmarshal(req.Payload, &payload) != nil {
				_ = req.Reply(false, nil)
				continue
			}
			cmd = exec.Command("/bin/sh", "-c", payload.Command)
			cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
			cmd.Stdout, cmd.Stderr = ch, ch.Stderr()
			stdin, err := cmd.StdinPipe()
			if err == nil {
				err = cmd.Start()
			}
			if err != nil {
				_ = req.Reply(false, nil)
				return
			}
			_ = req.Reply(true, nil)
			go func() {
				_, _ = io.Copy(stdin, ch)
				_ = stdin.Close()
			}()
			go func() {
				_ = cmd.Wait()
				close(exited)
			}()
		case req.Type == "signal" && cmd != nil:
			var payload struct{ Signal string }
			if ssh.Unmarshal(req.Payload, &payload) == nil {
				if sig, ok := signals[payload.Signal]; ok {
					_ = syscall.Kill(-cmd.Process.Pid, sig)
				}
			}
			if req.WantReply {
				_ = req.Reply(true, nil)
			}
		default:
			// env, pty-req, shell, subsystem (no sftp here) are refused.
			if req.WantReply {
				_ = req.Reply(false, nil)
			}
		}
	}
}

var signals = map[string]syscall.Signal{
	"TERM": syscall.SIGTERM, "KILL": syscall.SIGKILL, "INT": syscall.SIGINT,
	"HUP": syscall.SIGHUP, "QUIT": syscall.SIGQUIT, "USR1": syscall.SIGUSR1, "USR2": syscall.SIGUSR2,
}

func reportExit(ch ssh.Channel, cmd *exec.Cmd) {
	ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if ws.Signaled() {
		name := "KILL"
		for n, s := range signals {
			if s == ws.Signal() {
				name = n
			}
		}
		_, _ = ch.SendRequest("exit-signal", false, ssh.Marshal(struct {
			Signal     string
			CoreDumped bool
			Message    string
			Lang       string
		}{Signal: name}))
		return
	}
	_, _ = ch.SendRequest("exit-status", false, ssh.Marshal(struct{ Status uint32 }{uint32(ws.ExitStatus())}))
}
