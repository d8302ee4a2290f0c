package main

import (
	"context"
	"math/rand/v2"
	"sync"

	"github.com/heddle-io/heddle/internal/lambdaemu"
)

// aliasName is template.yaml's AutoPublishAlias: every deploy publishes a
// version of each function and CodeDeploy moves this alias to it.
const aliasName = "live"

// alias is a function's alias "live" as CodeDeploy shifts it during a
// deploy: the current release's version, and while a deploy runs, the
// previous release's version taking a share of the invocations (the
// alias's AdditionalVersionWeights). The HTTP API, the janitor's schedule
// and the tenants' event source mappings invoke it, so a shift or a
// rollback moves the worker along with the API and the janitor.
type alias struct {
	fn       lambdaemu.Function // the alias's own name (<function>:live) and ARN
	current  *lambdaemu.Pool
	previous *lambdaemu.Pool // nil: no previous release runs

	mu     sync.Mutex
	weight float64 // the share of invocations the previous version takes
}

func newAlias(current, previous *lambdaemu.Pool) *alias {
	fn := current.Function()
	fn.Name += ":" + aliasName
	a := &alias{fn: fn, current: current, previous: previous}
	if previous != nil {
		// Before a deploy starts, the alias points at the running release.
		a.weight = 1
	}
	return a
}

// Function is the alias's configuration: its qualified name and ARN, and
// the timeout the mappings check against the queue's visibility.
func (a *alias) Function() lambdaemu.Function { return a.fn }

// shift gives the previous version weight (0 to 1) of the invocations.
func (a *alias) shift(weight float64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.previous != nil {
		a.weight = min(max(weight, 0), 1)
	}
}

func (a *alias) previousWeight() float64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.weight
}

// Invoke runs the invocation on the version the alias's weights pick.
func (a *alias) Invoke(ctx context.Context, payload []byte) (lambdaemu.Result, error) {
	return a.pick().Invoke(ctx, payload)
}

func (a *alias) pick() *lambdaemu.Pool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.previous != nil && a.weight > 0 && rand.Float64() < a.weight {
		return a.previous
	}
	return a.current
}
