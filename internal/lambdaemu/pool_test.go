package lambdaemu

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/stretchr/testify/require"
)

// The test binary is also the functions under test: with testRuntimeVar
// set it is a bootstrap on aws-lambda-go's runtime client, as heddle's own
// functions are.
const testRuntimeVar = "LAMBDAEMU_TEST_RUNTIME"

func TestMain(m *testing.M) {
	switch os.Getenv(testRuntimeVar) {
	case "":
		os.Exit(m.Run())
	case "init-error":
		// What a runtime does when it cannot start: report, then exit.
		url := "http://" + os.Getenv("AWS_LAMBDA_RUNTIME_API") + pathInitError
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"errorMessage":"HEDDLE_TABLE is not set","errorType":"Config.Missing"}`))
		req.Header.Set("Lambda-Runtime-Function-Error-Type", "Config.Missing")
		if resp, err := testHTTP.Do(req); err == nil {
			resp.Body.Close()
		}
		os.Exit(1)
	default:
		lambda.Start(testHandler)
	}
}

// testEvent says what the test function does with one invocation.
type testEvent struct {
	Mode  string `json:"mode"` // echo, sleep, exit, big, fail
	Sleep string `json:"sleep,omitempty"`
	Size  int    `json:"size,omitempty"`
}

type testAnswer struct {
	PID        int    `json:"pid"`
	DeadlineMs int64  `json:"deadlineMs"`
	RequestID  string `json:"requestId"`
	ARN        string `json:"arn"`
	Name       string `json:"name"`
	Env        string `json:"env"`
	Big        string `json:"big,omitempty"`
}

func testHandler(ctx context.Context, ev testEvent) (testAnswer, error) {
	lc, _ := lambdacontext.FromContext(ctx)
	deadline, _ := ctx.Deadline()
	a := testAnswer{PID: os.Getpid(), DeadlineMs: deadline.UnixMilli(), RequestID: lc.AwsRequestID,
		ARN: lc.InvokedFunctionArn, Name: lambdacontext.FunctionName, Env: os.Getenv("FROM_TEMPLATE")}
	switch ev.Mode {
	case "sleep":
		d, _ := time.ParseDuration(ev.Sleep)
		time.Sleep(d)
	case "exit":
		os.Exit(3)
	case "big":
		a.Big = strings.Repeat("x", ev.Size)
	case "fail":
		return a, errors.New("the action failed")
	}
	return a, nil
}

type fixture struct {
	t    *testing.T
	pool *Pool
}

func setup(t *testing.T, fn Function) *fixture {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	if fn.Name == "" {
		fn.Name = "heddle-test-fn"
	}
	fn.Path = exe
	if fn.Timeout == 0 {
		fn.Timeout = 30 * time.Second
	}
	mode := "handler"
	for _, kv := range fn.Env {
		if v, ok := strings.CutPrefix(kv, testRuntimeVar+"="); ok {
			mode = v
		}
	}
	if mode == "handler" {
		fn.Env = append(fn.Env, testRuntimeVar+"=handler")
	}
	fn.Env = append(fn.Env, "FROM_TEMPLATE=yes")
	p, err := NewPool(fn)
	require.NoError(t, err)
	t.Cleanup(p.Close)
	return &fixture{t: t, pool: p}
}

func (f *fixture) invoke(ev testEvent) (Result, testAnswer) {
	f.t.Helper()
	payload, err := json.Marshal(ev)
	require.NoError(f.t, err)
	r, err := f.pool.Invoke(context.Background(), payload)
	require.NoError(f.t, err)
	var a testAnswer
	if r.FunctionError == "" {
		require.NoError(f.t, json.Unmarshal(r.Payload, &a), "answer %s", r.Payload)
	}
	return r, a
}

func TestColdThenWarm(t *testing.T) {
	t.Parallel()
	f := setup(t, Function{Name: "heddle-test-api", Timeout: 20 * time.Second, MemoryMB: 256})
	before := time.Now()
	r1, a1 := f.invoke(testEvent{Mode: "echo"})
	require.Empty(t, r1.FunctionError, "%s", r1.Payload)
	require.True(t, r1.ColdStart)
	require.Positive(t, r1.Init)
	require.Equal(t, a1.PID, r1.PID)
	require.Equal(t, "heddle-test-api", a1.Name)
	require.Equal(t, "yes", a1.Env, "the function's own environment reaches the process")
	require.Equal(t, "arn:aws:lambda:us-east-1:000000000000:function:heddle-test-api", a1.ARN)
	require.Len(t, a1.RequestID, 36)
	// Lambda-Runtime-Deadline-Ms is the function's timeout from the event's hand-over.
	require.GreaterOrEqual(t, a1.DeadlineMs, before.Add(20*time.Second).UnixMilli())
	require.LessOrEqual(t, a1.DeadlineMs, time.Now().Add(20*time.Second).UnixMilli())

	r2, a2 := f.invoke(testEvent{Mode: "echo"})
	require.False(t, r2.ColdStart, "an idle environment is reused")
	require.Equal(t, a1.PID, a2.PID)
	require.NotEqual(t, a1.RequestID, a2.RequestID)

	s := f.pool.Stats()
	require.Equal(t, int64(2), s.Invocations)
	require.Equal(t, int64(1), s.ColdStarts)
	require.Equal(t, r1.BilledMs+r2.BilledMs, s.BilledMs)
	require.GreaterOrEqual(t, r1.BilledMs, r1.Init.Milliseconds(), "a cold start bills its init")
	require.Equal(t, 1, s.Environments)
	require.Empty(t, f.pool.BusyPIDs(), "an environment between invocations is idle")
}

func TestOneInvocationPerEnvironment(t *testing.T) {
	t.Parallel()
	f := setup(t, Function{})
	const n = 3
	pids := make(chan int, n)
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			r, a := f.invoke(testEvent{Mode: "sleep", Sleep: "300ms"})
			require.Empty(t, r.FunctionError)
			pids <- a.PID
		})
	}
	wg.Wait()
	close(pids)
	seen := map[int]bool{}
	for pid := range pids {
		seen[pid] = true
	}
	require.Len(t, seen, n, "concurrent invocations each get an environment of their own")
	require.Equal(t, int64(n), f.pool.Stats().ColdStarts)
}

func TestConcurrencyCapThrottles(t *testing.T) {
	t.Parallel()
	f := setup(t, Function{Concurrency: 1})
	started := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		close(started)
		f.invoke(testEvent{Mode: "sleep", Sleep: "2s"})
	}()
	<-started
	require.Eventually(t, func() bool { return len(f.pool.BusyPIDs()) == 1 }, 10*time.Second, 10*time.Millisecond)
	_, err := f.pool.Invoke(context.Background(), []byte(`{"mode":"echo"}`))
	require.ErrorIs(t, err, ErrThrottled)
	<-done
}

func TestTimeoutKillsTheEnvironment(t *testing.T) {
	t.Parallel()
	f := setup(t, Function{Timeout: 2 * time.Second})
	_, warm := f.invoke(testEvent{Mode: "echo"})
	r, _ := f.invoke(testEvent{Mode: "sleep", Sleep: "1m"})
	require.Equal(t, "Unhandled", r.FunctionError)
	require.Equal(t, ErrorTypeTimeout, r.ErrorType)
	require.Contains(t, string(r.Payload), "Task timed out after 2.00 seconds")
	require.Error(t, syscall.Kill(warm.PID, 0), "the timed-out process is gone")
	r, a := f.invoke(testEvent{Mode: "echo"})
	require.True(t, r.ColdStart, "the next invocation starts a new environment")
	require.NotEqual(t, warm.PID, a.PID)
	require.Equal(t, int64(1), f.pool.Stats().Timeouts)
}

func TestCrashAndKillRestart(t *testing.T) {
	t.Parallel()
	f := setup(t, Function{})
	r, _ := f.invoke(testEvent{Mode: "exit"})
	require.Equal(t, "Unhandled", r.FunctionError)
	require.Equal(t, ErrorTypeExit, r.ErrorType)
	require.Contains(t, string(r.Payload), "exit status 3")

	r, a := f.invoke(testEvent{Mode: "echo"})
	require.True(t, r.ColdStart)
	// kill -9 of an idle environment: the next invocation gets a new one.
	require.Equal(t, a.PID, f.pool.KillIdle())
	require.Zero(t, f.pool.KillIdle(), "no idle environment left")
	require.Eventually(t, func() bool { return len(f.pool.PIDs()) == 0 }, 10*time.Second, 10*time.Millisecond)
	r, b := f.invoke(testEvent{Mode: "echo"})
	require.Empty(t, r.FunctionError)
	require.True(t, r.ColdStart)
	require.NotEqual(t, a.PID, b.PID)

	// kill -9 during an invocation fails that invocation.
	got := make(chan Result, 1)
	go func() { r, _ := f.invoke(testEvent{Mode: "sleep", Sleep: "1m"}); got <- r }()
	time.Sleep(200 * time.Millisecond) // let the event reach the process; either way it fails
	for _, pid := range f.pool.PIDs() {
		require.NoError(t, syscall.Kill(pid, syscall.SIGKILL))
	}
	r = <-got
	require.Equal(t, ErrorTypeExit, r.ErrorType)
	require.Contains(t, string(r.Payload), "signal: killed")
	require.Equal(t, int64(3), f.pool.Stats().Crashes, "an exit, a kill when idle, a kill when busy")
}

func TestFunctionErrorKeepsTheEnvironment(t *testing.T) {
	t.Parallel()
	f := setup(t, Function{})
	r, _ := f.invoke(testEvent{Mode: "fail"})
	require.Equal(t, "Unhandled", r.FunctionError)
	require.Equal(t, "errorString", r.ErrorType, "the type aws-lambda-go reports")
	require.Contains(t, string(r.Payload), "the action failed")
	pid := r.PID
	r, a := f.invoke(testEvent{Mode: "echo"})
	require.False(t, r.ColdStart)
	require.Equal(t, pid, a.PID)
}

func TestResponseOverSixMB(t *testing.T) {
	t.Parallel()
	f := setup(t, Function{})
	r, a := f.invoke(testEvent{Mode: "big", Size: MaxResponse - 4096})
	require.Empty(t, r.FunctionError, "just under 6 MB passes")
	require.Len(t, a.Big, MaxResponse-4096)
	r, _ = f.invoke(testEvent{Mode: "big", Size: MaxResponse})
	require.Equal(t, "Unhandled", r.FunctionError)
	require.Equal(t, ErrorTypeResponseSize, r.ErrorType)
	require.Contains(t, string(r.Payload), strconv.Itoa(MaxResponse))
	// aws-lambda-go's runtime exits when the Runtime API refuses its
	// answer; the next event goes to a new environment, not to the one
	// that is ending (whose runtime never asks for it).
	r, a = f.invoke(testEvent{Mode: "echo"})
	require.Empty(t, r.FunctionError, "%s", r.Payload)
	require.True(t, r.ColdStart)
	require.NotZero(t, a.PID)
}

func TestInitError(t *testing.T) {
	t.Parallel()
	f := setup(t, Function{Env: []string{testRuntimeVar + "=init-error"}})
	for range 2 {
		r, _ := f.invoke(testEvent{Mode: "echo"})
		require.Equal(t, "Unhandled", r.FunctionError)
		require.Equal(t, "Config.Missing", r.ErrorType)
		require.Contains(t, string(r.Payload), "HEDDLE_TABLE is not set")
		require.True(t, r.ColdStart, "a failed init is never reused")
	}
	require.Empty(t, f.pool.PIDs())
}

func TestRuntimeAPIRefusesAStrangeRequestID(t *testing.T) {
	t.Parallel()
	env := &environment{}
	w := &recorder{header: http.Header{}}
	req, _ := http.NewRequest(http.MethodPost, "/", bytes.NewReader(nil))
	req.SetPathValue("id", "not-current")
	require.Nil(t, env.take(w, req))
	require.Equal(t, http.StatusBadRequest, w.status)
	require.Contains(t, w.body.String(), "InvalidRequestID")
}

func TestNewPoolRefusesBadFunctions(t *testing.T) {
	t.Parallel()
	for _, fn := range []Function{{}, {Name: "f"}, {Name: "f", Path: "/nonexistent/bootstrap", Timeout: time.Second}, {Name: "f", Path: os.Args[0]}} {
		_, err := NewPool(fn)
		require.Error(t, err, fmt.Sprintf("%+v", fn))
	}
}

type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header         { return r.header }
func (r *recorder) Write(b []byte) (int, error) { return r.body.Write(b) }
func (r *recorder) WriteHeader(s int)           { r.status = s }
