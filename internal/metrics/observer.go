package metrics

import (
	"time"
)

// Outcomes of one task attempt.
const (
	AttemptSucceeded = "succeeded" // the action ended well
	AttemptRetried   = "retried"   // it failed and will run again
	AttemptFailed    = "failed"    // it failed for good
	AttemptParked    = "parked"    // it runs on without a worker; a later poll ends it
)

// JanitorPass is what one janitor pass did, by what (timed_out, resent, ...).
type JanitorPass map[string]int

// Observer receives measurements. Implementations must be safe for
// concurrent use and must not block: measuring never slows the work.
type Observer interface {
	// Request is one API request: its route pattern ("" for none), method,
	// status and how long the answer took.
	Request(method, route string, status int, took time.Duration)
	// Attempt is one run of an executor for a task (a poll of a parked
	// attempt counts as one): the worker time it took.
	Attempt(tenant, action, outcome string, took time.Duration)
	// Job is a job's end: its operation, final status and how long it ran.
	Job(tenant, operation, status string, took time.Duration)
	// Janitor is one pass of the janitor.
	Janitor(pass JanitorPass, took time.Duration)
	// Store is one store call (get, batch_get, write, transact, query, query_index)
	// and whether it failed on a condition.
	Store(call string, conflict bool)
}

// Nop measures nothing.
type Nop struct{}

func (Nop) Request(string, string, int, time.Duration)    {}
func (Nop) Attempt(string, string, string, time.Duration) {}
func (Nop) Job(string, string, string, time.Duration)     {}
func (Nop) Janitor(JanitorPass, time.Duration)            {}
func (Nop) Store(string, bool)                            {}

var _ Observer = Nop{}

// OrNop returns o, or Nop when o is nil.
func OrNop(o Observer) Observer {
	if o == nil {
		return Nop{}
	}
	return o
}
