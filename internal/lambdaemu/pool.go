package lambdaemu

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Lambda's limits that a Pool enforces.
const (
	// MaxResponse is the largest answer a synchronous invocation may give
	// (6 MB); a larger one fails with Function.ResponseSizeTooLarge.
	MaxResponse = 6 * 1024 * 1024
	// DefaultInitTimeout is how long an environment may take from its
	// process's start to its first /next (Lambda's init phase: 10 s).
	DefaultInitTimeout = 10 * time.Second
)

// Error types a Pool answers with, as Lambda names them.
const (
	ErrorTypeTimeout      = "Sandbox.Timedout"
	ErrorTypeExit         = "Runtime.ExitError"
	ErrorTypeInit         = "Runtime.InitError"
	ErrorTypeResponseSize = "Function.ResponseSizeTooLarge"
	ErrorTypeUnknown      = "Runtime.Unknown"
)

// Function is what a Pool runs: one Lambda function's configuration.
type Function struct {
	// Name is the function's name (AWS_LAMBDA_FUNCTION_NAME).
	Name string
	// Path is the bootstrap binary.
	Path string
	// Env is the function's environment variables (KEY=VALUE), what
	// template.yaml gives it; the Pool adds Lambda's own (AWS_LAMBDA_*).
	Env []string
	// Timeout ends an invocation (the function's Timeout).
	Timeout time.Duration
	// MemoryMB is AWS_LAMBDA_FUNCTION_MEMORY_SIZE and the billing's GB.
	MemoryMB int
	// Concurrency caps the environments (reserved concurrency); 0 is no cap.
	Concurrency int
	// InitTimeout bounds the init phase; 0 is DefaultInitTimeout.
	InitTimeout time.Duration
	// Region and AccountID make the function's ARN; us-east-1 and
	// 000000000000 when empty.
	Region, AccountID string
	// Logs receives the processes' stdout and stderr (CloudWatch Logs);
	// nil discards them.
	Logs io.Writer
}

// ARN is the function's ARN, as Lambda-Runtime-Invoked-Function-Arn gives it.
func (f Function) ARN() string {
	return fmt.Sprintf("arn:aws:lambda:%s:%s:function:%s", f.Region, f.AccountID, f.Name)
}

// Result is one invocation's outcome.
type Result struct {
	// Payload is the function's answer, or Lambda's error document
	// ({"errorMessage","errorType"}) when FunctionError is set.
	Payload []byte
	// FunctionError is "Unhandled" when the invocation failed (the
	// X-Amz-Function-Error header), empty when it succeeded.
	FunctionError string
	// ErrorType is the failure's errorType (one of the ErrorType*
	// constants, or what the runtime reported).
	ErrorType string
	// ColdStart says a new environment was started for it.
	ColdStart bool
	// Init is the cold start's init phase (process start to first /next).
	Init time.Duration
	// Duration is the invocation's run time (event handed over to answer).
	Duration time.Duration
	// BilledMs is what Lambda bills: duration, plus init on a cold start
	// (a custom runtime's init is billed), rounded up to the millisecond.
	BilledMs int64
	// PID is the process that ran it.
	PID int
}

// Stats counts a Pool's work since it was made.
type Stats struct {
	Invocations int64 `json:"invocations"`
	ColdStarts  int64 `json:"coldStarts"`
	Errors      int64 `json:"errors"`
	Timeouts    int64 `json:"timeouts"`
	Crashes     int64 `json:"crashes"` // processes that exited on their own or were killed
	BilledMs    int64 `json:"billedMs"`
	// GBSeconds is BilledMs times the memory, Lambda's billed compute.
	GBSeconds float64 `json:"gbSeconds"`
	// Environments is how many live now.
	Environments int `json:"environments"`
}

// ErrClosed is returned by Invoke on a closed Pool.
var ErrClosed = errors.New("lambdaemu: the pool is closed")

// ErrThrottled is returned when every environment is busy and the
// function's concurrency allows no more (Lambda's TooManyRequestsException).
var ErrThrottled = errors.New("lambdaemu: rate exceeded: the function's concurrency is in use")

// Pool runs one function's execution environments.
type Pool struct {
	fn Function

	mu     sync.Mutex
	idle   []*environment // most recently used last
	live   map[*environment]struct{}
	closed bool

	invocations, coldStarts, errs, timeouts, crashes, billedMs atomic.Int64
}

// NewPool returns a Pool for fn; it starts no process until the first
// invocation.
func NewPool(fn Function) (*Pool, error) {
	switch {
	case fn.Name == "":
		return nil, errors.New("lambdaemu: a function needs a name")
	case fn.Path == "":
		return nil, fmt.Errorf("lambdaemu: function %s: no bootstrap binary", fn.Name)
	case fn.Timeout <= 0:
		return nil, fmt.Errorf("lambdaemu: function %s: the timeout must be positive", fn.Name)
	}
	if _, err := os.Stat(fn.Path); err != nil {
		return nil, fmt.Errorf("lambdaemu: function %s: %w", fn.Name, err)
	}
	if fn.MemoryMB == 0 {
		fn.MemoryMB = 128
	}
	if fn.InitTimeout == 0 {
		fn.InitTimeout = DefaultInitTimeout
	}
	if fn.Region == "" {
		fn.Region = "us-east-1"
	}
	if fn.AccountID == "" {
		fn.AccountID = "000000000000"
	}
	if fn.Logs == nil {
		fn.Logs = io.Discard
	}
	return &Pool{fn: fn, live: map[*environment]struct{}{}}, nil
}

// Function returns the pool's function.
func (p *Pool) Function() Function { return p.fn }

// Invoke runs one invocation with payload (the event) and returns its
// result. A failed invocation is a Result with FunctionError set, not an
// error: error is for what keeps the invocation from running at all
// (ErrClosed, ErrThrottled, ctx ending while waiting for an environment).
// The invocation runs to its answer or its timeout even when ctx ends
// first, as on Lambda, where a caller that goes away does not stop it.
func (p *Pool) Invoke(ctx context.Context, payload []byte) (Result, error) {
	env, cold, err := p.acquire()
	if err != nil {
		return Result{}, err
	}
	p.invocations.Add(1)
	done := make(chan Result, 1)
	go func() { done <- p.run(env, cold, payload, 0) }()
	select {
	case r := <-done:
		return r, nil
	case <-ctx.Done():
		return Result{}, ctx.Err()
	}
}

// run runs one invocation on env and hands env back (or drops it).
func (p *Pool) run(env *environment, cold bool, payload []byte, redeliveries int) Result {
	r := Result{ColdStart: cold, PID: env.pid()}
	if cold {
		p.coldStarts.Add(1)
		init, err := env.waitReady(p.fn.InitTimeout)
		r.Init = init
		if err != nil {
			p.drop(env)
			return p.failed(r, err)
		}
	}
	req := invocation{id: newRequestID(), payload: payload, deadline: time.Now().Add(p.fn.Timeout), answer: make(chan answer, 1)}
	start := time.Now()
	a := env.invoke(req, p.fn.Timeout)
	r.Duration = time.Since(start)
	r.Payload, r.FunctionError, r.ErrorType = a.payload, a.functionError, a.errorType
	if a.dead {
		p.drop(env)
	} else {
		p.release(env)
	}
	if a.undelivered && redeliveries < maxRedeliveries {
		// The environment was idle but its process was ending: the event
		// goes to another environment, as Lambda routes an invocation only
		// to a runtime waiting for one.
		next, cold, err := p.acquire()
		if err == nil {
			return p.run(next, cold, payload, redeliveries+1)
		}
	}
	return p.account(r)
}

// maxRedeliveries bounds how often one invocation moves on to another
// environment because the one it was given had ended.
const maxRedeliveries = 3

// failed makes r an invocation that failed before it ran (init).
func (p *Pool) failed(r Result, err error) Result {
	var ie *initError
	if errors.As(err, &ie) {
		r.Payload, r.ErrorType = ie.document, ie.errorType
	} else {
		r.Payload, r.ErrorType = errorDocument(ErrorTypeInit, err.Error()), ErrorTypeInit
	}
	r.FunctionError = "Unhandled"
	return p.account(r)
}

// account counts r and fills in its billed time.
func (p *Pool) account(r Result) Result {
	r.BilledMs = int64(math.Ceil(float64(r.Duration+r.Init) / float64(time.Millisecond)))
	p.billedMs.Add(r.BilledMs)
	if r.FunctionError != "" {
		p.errs.Add(1)
	}
	if r.ErrorType == ErrorTypeTimeout {
		p.timeouts.Add(1)
	}
	return r
}

// acquire returns an idle environment (warm), or a new one (cold).
func (p *Pool) acquire() (*environment, bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, false, ErrClosed
	}
	for len(p.idle) > 0 {
		env := p.idle[len(p.idle)-1]
		p.idle = p.idle[:len(p.idle)-1]
		if env.alive() {
			return env, false, nil
		}
	}
	if p.fn.Concurrency > 0 && len(p.live) >= p.fn.Concurrency {
		return nil, false, ErrThrottled
	}
	env, err := startEnvironment(p.fn, p.onExit)
	if err != nil {
		return nil, false, err
	}
	p.live[env] = struct{}{}
	return env, true, nil
}

func (p *Pool) release(env *environment) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || !env.alive() {
		return
	}
	p.idle = append(p.idle, env)
}

// drop kills env and forgets it.
func (p *Pool) drop(env *environment) {
	env.kill()
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.live, env)
	p.idle = slices.DeleteFunc(p.idle, func(e *environment) bool { return e == env })
}

// onExit is told when an environment's process ends by itself.
func (p *Pool) onExit(env *environment) {
	p.crashes.Add(1)
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.live, env)
	p.idle = slices.DeleteFunc(p.idle, func(e *environment) bool { return e == env })
}

// PIDs lists the live environments' processes (for tests that kill them).
func (p *Pool) PIDs() []int {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]int, 0, len(p.live))
	for env := range p.live {
		out = append(out, env.pid())
	}
	slices.Sort(out)
	return out
}

// KillIdle kills one environment that is between invocations with SIGKILL,
// as a crash would, and returns its process id; 0 when none is idle. It is
// taken out of the pool first, so no invocation can be handed to it.
func (p *Pool) KillIdle() int {
	p.mu.Lock()
	if len(p.idle) == 0 {
		p.mu.Unlock()
		return 0
	}
	env := p.idle[0]
	p.idle = p.idle[1:]
	p.mu.Unlock()
	pid := env.pid()
	_ = syscall.Kill(pid, syscall.SIGKILL) // counted as a crash by onExit
	<-env.exited
	return pid
}

// BusyPIDs lists the processes running an invocation now.
func (p *Pool) BusyPIDs() []int {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]int, 0, len(p.live))
	for env := range p.live {
		if !slices.Contains(p.idle, env) {
			out = append(out, env.pid())
		}
	}
	slices.Sort(out)
	return out
}

// Stats returns the pool's counts.
func (p *Pool) Stats() Stats {
	p.mu.Lock()
	live := len(p.live)
	p.mu.Unlock()
	billed := p.billedMs.Load()
	return Stats{Invocations: p.invocations.Load(), ColdStarts: p.coldStarts.Load(), Errors: p.errs.Load(),
		Timeouts: p.timeouts.Load(), Crashes: p.crashes.Load(), BilledMs: billed,
		GBSeconds: float64(billed) / 1000 * float64(p.fn.MemoryMB) / 1024, Environments: live}
}

// Close kills every environment's process and waits for them; invocations
// in flight fail.
func (p *Pool) Close() {
	p.mu.Lock()
	p.closed = true
	envs := make([]*environment, 0, len(p.live))
	for env := range p.live {
		envs = append(envs, env)
	}
	p.live, p.idle = map[*environment]struct{}{}, nil
	p.mu.Unlock()
	for _, env := range envs {
		env.kill()
	}
}

// errorDocument is Lambda's error answer.
func errorDocument(errorType, message string) []byte {
	b, _ := json.Marshal(struct {
		ErrorMessage string `json:"errorMessage"`
		ErrorType    string `json:"errorType"`
	}{message, errorType})
	return b
}

func newRequestID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	h := hex.EncodeToString(b)
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}
