package lambdaemu

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// The Runtime API's paths (version 2018-06-01).
const (
	pathNext      = "/2018-06-01/runtime/invocation/next"
	pathInvocById = "/2018-06-01/runtime/invocation/{id}/"
	pathInitError = "/2018-06-01/runtime/init/error"
)

// maxErrorBody bounds what a runtime may post as an error document.
const maxErrorBody = 1 << 20

// invocation is one event handed to an environment.
type invocation struct {
	id       string
	payload  []byte
	deadline time.Time
	answer   chan answer
}

// answer is how an invocation ended.
type answer struct {
	payload       []byte
	functionError string
	errorType     string
	dead          bool // the environment cannot be reused
	// undelivered: the process ended before its runtime took the event
	// (it had exited after its last answer, as aws-lambda-go does when the
	// Runtime API refuses an answer over 6 MB); no runtime saw the event,
	// so the pool hands it to another environment.
	undelivered bool
}

// initError is a runtime's report on /init/error.
type initError struct {
	errorType string
	document  []byte
}

func (e *initError) Error() string { return "init error: " + e.errorType + ": " + string(e.document) }

// environment is one execution environment: a process of the function's
// binary and the Runtime API server it talks to.
type environment struct {
	fn      Function
	cmd     *exec.Cmd
	srv     *http.Server
	started time.Time
	onExit  func(*environment)

	readyOnce sync.Once
	ready     chan struct{} // closed at the first /next
	readyAt   time.Time
	initErr   chan *initError

	pending chan invocation // the next event, taken by /next
	mu      sync.Mutex
	current *invocation // the one being run, nil between them

	exited chan struct{} // closed when the process has ended
	killed atomic.Bool   // ended by the pool, not by itself
}

// startEnvironment starts a process of fn's binary with its own Runtime
// API server; onExit is called if the process ends by itself.
func startEnvironment(fn Function, onExit func(*environment)) (*environment, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("lambdaemu: function %s: the Runtime API's listener: %w", fn.Name, err)
	}
	e := &environment{fn: fn, onExit: onExit, ready: make(chan struct{}), initErr: make(chan *initError, 1),
		pending: make(chan invocation), exited: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+pathNext, e.next)
	mux.HandleFunc("POST "+pathInvocById+"response", e.response)
	mux.HandleFunc("POST "+pathInvocById+"error", e.invocationError)
	mux.HandleFunc("POST "+pathInitError, e.initError)
	e.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = e.srv.Serve(ln) }()

	e.cmd = exec.Command(fn.Path)
	e.cmd.Env = append(lambdaEnv(fn, ln.Addr().String()), fn.Env...)
	e.cmd.Stdout, e.cmd.Stderr = fn.Logs, fn.Logs
	e.cmd.SysProcAttr = procAttr()
	e.cmd.WaitDelay = time.Second
	e.started = time.Now()
	if err := e.cmd.Start(); err != nil {
		_ = e.srv.Close()
		return nil, fmt.Errorf("lambdaemu: function %s: starting %s: %w", fn.Name, fn.Path, err)
	}
	go e.watch()
	return e, nil
}

// lambdaEnv is what Lambda itself puts in a provided runtime's environment.
func lambdaEnv(fn Function, runtimeAPI string) []string {
	return []string{
		"AWS_LAMBDA_RUNTIME_API=" + runtimeAPI,
		"AWS_LAMBDA_FUNCTION_NAME=" + fn.Name,
		"AWS_LAMBDA_FUNCTION_VERSION=$LATEST",
		"AWS_LAMBDA_FUNCTION_MEMORY_SIZE=" + strconv.Itoa(fn.MemoryMB),
		"AWS_LAMBDA_LOG_GROUP_NAME=/aws/lambda/" + fn.Name,
		"AWS_LAMBDA_LOG_STREAM_NAME=" + time.Now().UTC().Format("2006/01/02") + "/[$LATEST]" + newRequestID()[:8],
		"AWS_REGION=" + fn.Region,
		"AWS_DEFAULT_REGION=" + fn.Region,
		"_HANDLER=bootstrap",
		"TZ=:UTC",
		"LANG=en_US.UTF-8",
		"PATH=" + os.Getenv("PATH"),
	}
}

// watch waits for the process to end.
func (e *environment) watch() {
	_ = e.cmd.Wait()
	// Counted before anyone waiting on exited hears of it.
	if !e.killed.Load() {
		e.onExit(e)
	}
	close(e.exited)
	_ = e.srv.Close()
}

func (e *environment) pid() int { return e.cmd.Process.Pid }

func (e *environment) alive() bool {
	select {
	case <-e.exited:
		return false
	default:
		return !e.killed.Load()
	}
}

// kill ends the process (and its group) and waits for it.
func (e *environment) kill() {
	select {
	case <-e.exited: // ended by itself: counted as such
		return
	default:
	}
	e.killed.Store(true)
	_ = syscall.Kill(-e.cmd.Process.Pid, syscall.SIGKILL)
	<-e.exited
}

// waitReady waits for the first /next and returns the init phase's length.
func (e *environment) waitReady(timeout time.Duration) (time.Duration, error) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-e.ready:
		return e.readyAt.Sub(e.started), nil
	case ie := <-e.initErr:
		return time.Since(e.started), ie
	case <-e.exited:
		select { // a runtime that reported an init error then exited
		case ie := <-e.initErr:
			return time.Since(e.started), ie
		default:
		}
		return time.Since(e.started), &initError{errorType: ErrorTypeExit,
			document: errorDocument(ErrorTypeExit, fmt.Sprintf("Runtime exited during init: %v", e.cmd.ProcessState))}
	case <-t.C:
		return timeout, &initError{errorType: ErrorTypeTimeout,
			document: errorDocument(ErrorTypeTimeout, fmt.Sprintf("Init timed out after %.2f seconds", timeout.Seconds()))}
	}
}

// invoke hands inv to the runtime and waits for its answer, the timeout or
// the process's end.
func (e *environment) invoke(inv invocation, timeout time.Duration) answer {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case e.pending <- inv:
	case <-e.exited:
		a := e.exitAnswer(inv)
		a.undelivered = true
		return a
	case <-t.C:
		return timedOut(inv, timeout)
	}
	select {
	case a := <-inv.answer:
		return a
	case <-e.exited:
		return e.exitAnswer(inv)
	case <-t.C:
		return timedOut(inv, timeout)
	}
}

func timedOut(inv invocation, timeout time.Duration) answer {
	return answer{functionError: "Unhandled", errorType: ErrorTypeTimeout, dead: true,
		payload: errorDocument(ErrorTypeTimeout, fmt.Sprintf("RequestId: %s Error: Task timed out after %.2f seconds", inv.id, timeout.Seconds()))}
}

func (e *environment) exitAnswer(inv invocation) answer {
	return answer{functionError: "Unhandled", errorType: ErrorTypeExit, dead: true,
		payload: errorDocument(ErrorTypeExit, fmt.Sprintf("RequestId: %s Error: Runtime exited with error: %v", inv.id, e.cmd.ProcessState))}
}

// next is GET /runtime/invocation/next: it blocks until there is an event.
func (e *environment) next(w http.ResponseWriter, r *http.Request) {
	e.readyOnce.Do(func() { e.readyAt = time.Now(); close(e.ready) })
	var inv invocation
	select {
	case inv = <-e.pending:
	case <-r.Context().Done():
		return
	case <-e.exited:
		return
	}
	e.mu.Lock()
	e.current = &inv
	e.mu.Unlock()
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Lambda-Runtime-Aws-Request-Id", inv.id)
	h.Set("Lambda-Runtime-Deadline-Ms", strconv.FormatInt(inv.deadline.UnixMilli(), 10))
	h.Set("Lambda-Runtime-Invoked-Function-Arn", e.fn.ARN())
	h.Set("Lambda-Runtime-Trace-Id", "Root=1-"+strconv.FormatInt(time.Now().Unix(), 16)+"-"+inv.id[:8]+";Sampled=0")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(inv.payload)
}

// take returns the invocation id names and stops it being current; nil
// (after answering the runtime) when id is not the one being run.
func (e *environment) take(w http.ResponseWriter, r *http.Request) *invocation {
	id := r.PathValue("id")
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.current == nil || e.current.id != id {
		runtimeError(w, http.StatusBadRequest, "InvalidRequestID", "Invalid request ID: "+id)
		return nil
	}
	inv := e.current
	e.current = nil
	return inv
}

// response is POST /runtime/invocation/{id}/response.
func (e *environment) response(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxResponse+1))
	if err != nil {
		runtimeError(w, http.StatusBadRequest, "InvalidPayload", "reading the response: "+err.Error())
		return
	}
	inv := e.take(w, r)
	if inv == nil {
		return
	}
	if len(body) > MaxResponse {
		// Lambda refuses the answer; the runtime is told, the caller gets
		// the error.
		runtimeError(w, http.StatusRequestEntityTooLarge, "RequestEntityTooLarge",
			fmt.Sprintf("Response payload size exceeded maximum allowed payload size (%d bytes).", MaxResponse))
		inv.answer <- answer{functionError: "Unhandled", errorType: ErrorTypeResponseSize,
			payload: errorDocument(ErrorTypeResponseSize, fmt.Sprintf("Response payload size exceeded maximum allowed payload size (%d bytes).", MaxResponse))}
		return
	}
	accepted(w)
	inv.answer <- answer{payload: body}
}

// invocationError is POST /runtime/invocation/{id}/error.
func (e *environment) invocationError(w http.ResponseWriter, r *http.Request) {
	doc, errorType := readErrorDocument(r)
	inv := e.take(w, r)
	if inv == nil {
		return
	}
	accepted(w)
	inv.answer <- answer{functionError: "Unhandled", errorType: errorType, payload: doc}
}

// initError is POST /runtime/init/error.
func (e *environment) initError(w http.ResponseWriter, r *http.Request) {
	doc, errorType := readErrorDocument(r)
	select {
	case <-e.ready:
		runtimeError(w, http.StatusForbidden, "InvalidStateTransition", "the runtime has already initialized")
		return
	default:
	}
	accepted(w)
	select {
	case e.initErr <- &initError{errorType: errorType, document: doc}:
	default:
	}
}

// readErrorDocument reads a runtime's error post: the body is the error
// document, Lambda-Runtime-Function-Error-Type its type when the body has
// none.
func readErrorDocument(r *http.Request) ([]byte, string) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, maxErrorBody))
	var doc struct {
		ErrorType string `json:"errorType"`
	}
	errorType := r.Header.Get("Lambda-Runtime-Function-Error-Type")
	if json.Unmarshal(body, &doc) == nil && doc.ErrorType != "" {
		errorType = doc.ErrorType
	}
	if errorType == "" {
		errorType = ErrorTypeUnknown
	}
	if !json.Valid(body) {
		body = errorDocument(errorType, string(body))
	}
	return body, errorType
}

func accepted(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusAccepted)
	_, _ = w.Write([]byte(`{"status":"OK"}`))
}

func runtimeError(w http.ResponseWriter, status int, errorType, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(errorDocument(errorType, message))
}
