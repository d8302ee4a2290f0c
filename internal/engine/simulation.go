package engine

import (
	"context"
	"fmt"
	"strconv"
	"time"
)

// Params the simulation executor reads from a task.
const (
	SimDuration     = "sim.duration"     // how long each attempt takes (a Go duration)
	SimFailAttempts = "sim.failAttempts" // attempts 1..n fail
)

// Simulation is the executor for engine tests and benchmarks: it touches no
// node, sleeps for the duration the task carries and fails the attempts it is
// told to. It is never registered for real providers or automators.
type Simulation struct{}

// Execute sleeps, then succeeds or fails as the task's params say.
func (Simulation) Execute(ctx context.Context, a Attempt) Result {
	if d, err := time.ParseDuration(a.Task.Params[SimDuration]); err == nil && d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return Result{Err: ctx.Err(), ExitCode: -1}
		case <-t.C:
		}
	}
	if n, err := strconv.Atoi(a.Task.Params[SimFailAttempts]); err == nil && a.Task.Attempt <= n {
		return Result{Err: fmt.Errorf("simulated failure of attempt %d", a.Task.Attempt), ExitCode: 1, Stderr: "simulated failure\n"}
	}
	return Result{Stdout: "simulated " + string(a.Task.Action) + "\n"}
}
