package local

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"os/user"
	"sync"
	"syscall"
	"time"

	"golang.org/x/crypto/ssh"
)

// server is one node's SSH server.
type server struct {
	listener net.Listener
	config   *ssh.ServerConfig
	home     string
	env      []string

	mu     sync.Mutex
	conns  map[net.Conn]bool
	procs  map[*os.Process]bool
	closed bool
	wg     sync.WaitGroup
}

// handshakeTimeout bounds an unauthenticated connection, so idle or
// half-open clients cannot pile up.
const handshakeTimeout = 15 * time.Second

// defaultPath is the PATH commands get: heddle's own environment is not
// passed on.
const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

func newServer(l net.Listener, hostKey ssh.Signer, authorized ssh.PublicKey, home, user, marker string) *server {
	want := authorized.Marshal()
	config := &ssh.ServerConfig{
		PublicKeyCallback: func(_ ssh.ConnMetadata, key ssh.PublicKey) (*ssh.Permissions, error) {
			if bytes.Equal(key.Marshal(), want) {
				return nil, nil
			}
			return nil, errors.New("key not authorized")
		},
		MaxAuthTries: 3,
	}
	config.AddHostKey(hostKey)
	return &server{
		listener: l, config: config, home: home, conns: map[net.Conn]bool{}, procs: map[*os.Process]bool{},
		env: []string{"HOME=" + home, "USER=" + user, "LOGNAME=" + user, "SHELL=/bin/sh", "PATH=" + defaultPath, "LANG=C.UTF-8", marker},
	}
}

func (s *server) start() {
	s.wg.Add(1)
	go s.serve()
}

// close stops listening, cuts every connection and kills the commands still
// running (their process groups); it returns when every session has ended.
func (s *server) close() {
	s.mu.Lock()
	s.closed = true
	release(s.listener)
	for c := range s.conns {
		_ = c.Close()
	}
	for p := range s.procs {
		_ = syscall.Kill(-p.Pid, syscall.SIGKILL)
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// release stops ln listening at once, so that the node's address can be
// bound again as soon as close returns (a restarted provider takes it back
// straight away). Closing the descriptor is not enough: a fork anywhere in
// the process (every command a node runs is one) copies all descriptors
// into the child until it execs, and while the child holds that copy the
// socket stays in LISTEN and a new bind fails with "address already in
// use". shutdown(2) acts on the socket itself, whoever else holds a
// descriptor of it: on Linux it takes a listening socket out of LISTEN,
// and a SO_REUSEADDR bind (Go's listeners set it) then succeeds.
func release(ln net.Listener) {
	if tl, ok := ln.(*net.TCPListener); ok {
		if rc, err := tl.SyscallConn(); err == nil {
			_ = rc.Control(func(fd uintptr) { _ = syscall.Shutdown(int(fd), syscall.SHUT_RDWR) })
		}
	}
	_ = ln.Close()
}

// track records a started command so close can kill it; one started while
// the server closes is killed at once.
func (s *server) track(p *os.Process) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		_ = syscall.Kill(-p.Pid, syscall.SIGKILL)
		return
	}
	s.procs[p] = true
}

func (s *server) untrack(p *os.Process) {
	s.mu.Lock()
	delete(s.procs, p)
	s.mu.Unlock()
}

func (s *server) serve() {
	defer s.wg.Done()
	for {
		c, err := s.listener.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			_ = c.Close()
			return
		}
		s.conns[c] = true
		s.wg.Add(1)
		s.mu.Unlock()
		go func() {
			defer s.wg.Done()
			s.handle(c)
			s.mu.Lock()
			delete(s.conns, c)
			s.mu.Unlock()
		}()
	}
}

func (s *server) handle(c net.Conn) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(handshakeTimeout))
	_, chans, reqs, err := ssh.NewServerConn(c, s.config)
	if err != nil {
		return
	}
	_ = c.SetDeadline(time.Time{})
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
			s.session(ch, creqs)
		}()
	}
	sessions.Wait()
}

// session serves one session channel: one exec request (run by /bin/sh -c
// in a new session, as sshd does), and signals for its process group.
// Environment requests, terminals, shells and subsystems are refused: the
// automator needs none of them.
func (s *server) session(ch ssh.Channel, reqs <-chan *ssh.Request) {
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
				// The client went away: like sshd, the command is left to
				// finish on its own; wait so its pipes are released.
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
			cmd.Dir = s.home
			cmd.Env = s.env
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
			s.track(cmd.Process)
			go func() {
				_, _ = io.Copy(stdin, ch)
				_ = stdin.Close()
			}()
			go func() {
				_ = cmd.Wait()
				s.untrack(cmd.Process)
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
		for n, sig := range signals {
			if sig == ws.Signal() {
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

// currentUser is the name commands run as, for the login and USER.
func currentUser() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	if os.Geteuid() == 0 {
		return "root"
	}
	return "heddle"
}
