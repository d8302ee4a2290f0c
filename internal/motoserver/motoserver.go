// Package motoserver starts and stops moto_server, the third-party AWS
// emulator (the one LocalStack grew from), on a free loopback port, for the
// tests that hold heddle's AWS code against it and for make local-aws.
//
// moto is a Python package, and a machine may have several interpreters:
// Debian's /usr/bin/python3 (which .ci/run may install for the local
// provider's nodes) next to the pyenv one that has moto. Python finds the
// one that imports moto, aws-sam-translator and boto3, so every caller runs
// the server and heddle's scripts under the same interpreter: the server is
// `python -m moto.server`, never whichever `moto_server` comes first on PATH.
package motoserver

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
)

// Region and Account are moto's defaults: every ARN it makes names them.
const (
	Region  = "us-east-1"
	Account = "123456789012"
)

// probe is what an interpreter must import for heddle's uses of moto.
const probe = "import moto, moto.server, samtranslator, boto3"

var (
	pythonOnce sync.Once
	pythonPath string
	pythonErr  error
)

// Python is the interpreter that imports moto, aws-sam-translator and
// boto3: $HEDDLE_PYTHON if set (and then only it), else the first that does
// among the one behind `moto_server` on PATH (through pyenv when it is a
// pyenv shim), python3 on PATH, pyenv's shims and /usr/bin/python3. The
// error says what was tried and how to fix it.
func Python() (string, error) {
	pythonOnce.Do(func() { pythonPath, pythonErr = findPython() })
	return pythonPath, pythonErr
}

func findPython() (string, error) {
	if p := os.Getenv("HEDDLE_PYTHON"); p != "" {
		if err := imports(p); err != nil {
			return "", fmt.Errorf("HEDDLE_PYTHON=%s cannot %q: %w", p, probe, err)
		}
		return p, nil
	}
	var tried []string
	for _, p := range candidates() {
		if p == "" || contains(tried, p) {
			continue
		}
		tried = append(tried, p)
		if imports(p) == nil {
			return executable(p), nil
		}
	}
	return "", fmt.Errorf("no Python interpreter imports moto, aws-sam-translator and boto3 (tried %s): "+
		"install them (pip install 'moto[server]==5.2.1' aws-sam-translator==1.110.0) or set HEDDLE_PYTHON "+
		"to an interpreter that has them", strings.Join(tried, ", "))
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// candidates lists interpreters in the order they are tried.
func candidates() []string {
	var out []string
	if ms, err := exec.LookPath("moto_server"); err == nil {
		// A pyenv shim is a shell script; pyenv names the real entry point.
		if real, err := exec.Command("pyenv", "which", "moto_server").Output(); err == nil {
			ms = strings.TrimSpace(string(real))
		}
		if py := shebang(ms); py != "" {
			out = append(out, py)
		}
		out = append(out, filepath.Join(filepath.Dir(ms), "python3"))
	}
	if py, err := exec.LookPath("python3"); err == nil {
		out = append(out, py)
	}
	root := os.Getenv("PYENV_ROOT")
	if root == "" {
		if home, err := os.UserHomeDir(); err == nil {
			root = filepath.Join(home, ".pyenv")
		}
	}
	if root != "" {
		out = append(out, filepath.Join(root, "shims", "python3"))
	}
	return append(out, "/usr/local/bin/python3", "/usr/bin/python3")
}

// shebang is the interpreter a script's #! line names, if it is a Python.
func shebang(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	line, _ := bufio.NewReader(f).ReadString('\n')
	line = strings.TrimSpace(strings.TrimPrefix(line, "#!"))
	fields := strings.Fields(line)
	if len(fields) == 0 || !strings.Contains(filepath.Base(fields[0]), "python") {
		return ""
	}
	return fields[0]
}

// executable is the interpreter p runs: a pyenv shim chooses its Python
// by the directory it runs in, so callers get the one that was checked.
func executable(p string) string {
	out, err := exec.Command(p, "-c", "import sys; print(sys.executable)").Output()
	if exe := strings.TrimSpace(string(out)); err == nil && exe != "" {
		return exe
	}
	return p
}

func imports(python string) error {
	cmd := exec.Command(python, "-c", probe)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%w: %s", err, lastLine(out))
	}
	return nil
}

func lastLine(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return lines[len(lines)-1]
}

// Server is one running moto_server.
type Server struct {
	// URL is its endpoint, http://127.0.0.1:<port>, for every service.
	URL string

	cmd  *exec.Cmd
	done chan struct{}
	mu   sync.Mutex
	logs strings.Builder
}

// running is the line werkzeug prints once it listens, with the port the
// kernel chose for -p 0.
var running = regexp.MustCompile(`Running on (http://127\.0\.0\.1:\d+)`)

// accessLog matches werkzeug's line for a request answered 2xx.
var accessLog = regexp.MustCompile(`^127\.0\.0\.1 - - \[[^]]*\] "[^"]*" 2\d\d `)

// Start runs moto_server on a port the kernel chooses (so concurrent runs
// never collide) and returns once it answers. The process dies with the
// caller (Pdeathsig) and with Stop; log, if not nil, gets its output.
func Start(ctx context.Context, log io.Writer) (*Server, error) {
	python, err := Python()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(python, "-m", "moto.server", "-H", "127.0.0.1", "-p", "0")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, fmt.Errorf("moto_server's output: %w", err)
	}
	cmd.Stdout = cmd.Stderr // both end in the pipe: werkzeug writes to stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting moto_server with %s: %w", python, err)
	}
	s := &Server{cmd: cmd, done: make(chan struct{})}
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			if m := running.FindStringSubmatch(line); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
			if accessLog.MatchString(line) {
				continue // a successful request: noise in a failure's log
			}
			s.mu.Lock()
			if s.logs.Len() < 1<<20 {
				s.logs.WriteString(line + "\n")
			}
			s.mu.Unlock()
			if log != nil {
				fmt.Fprintln(log, line)
			}
		}
		_ = cmd.Wait()
		close(s.done)
	}()
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	select {
	case s.URL = <-found:
	case <-s.done:
		return nil, fmt.Errorf("moto_server exited before listening: %s", s.Logs())
	case <-ctx.Done():
		s.Stop()
		return nil, fmt.Errorf("moto_server did not listen within a minute: %w; its output: %s", ctx.Err(), s.Logs())
	}
	if err := s.waitReady(ctx); err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

// waitReady polls moto's own API until it answers.
func (s *Server) waitReady(ctx context.Context) error {
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.URL+"/moto-api/data.json", nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("moto_server at %s does not answer: %w", s.URL, errors.Join(ctx.Err(), err))
		case <-s.done:
			return fmt.Errorf("moto_server exited: %s", s.Logs())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Logs is what the server printed (its first megabyte).
func (s *Server) Logs() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.logs.String()
}

// Stop kills the server (and anything it started) and waits for it.
func (s *Server) Stop() {
	if s.cmd.Process != nil {
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	}
	<-s.done
}

// AWSConfig is an SDK configuration that sends every service's calls to
// this server, in moto's region, with credentials moto accepts.
func (s *Server) AWSConfig() aws.Config {
	return aws.Config{
		Region:       Region,
		BaseEndpoint: aws.String(s.URL),
		Credentials:  credentials.NewStaticCredentialsProvider("moto", "moto", ""),
	}
}
