package provider

import "context"

// MachineState is what a provider says of a node's machine now.
type MachineState string

const (
	MachineRunning MachineState = "running" // there, and running (or starting)
	MachineStopped MachineState = "stopped" // there, stopped or stopping
	MachineGone    MachineState = "gone"    // terminated, or unknown to the provider
	// MachineUnknown: the provider cannot say now (its API throttled or
	// paced the call); the probe goes on over SSH alone.
	MachineUnknown MachineState = "unknown"
)

// Inspector is what a provider may also implement: one look at a node's
// machine, for a drift check. It changes nothing and waits for nothing; a
// provider that cannot tell (the local and static providers, whose
// machines heddle reaches only over SSH) does not implement it, and the
// drift probe relies on SSH alone.
type Inspector interface {
	Inspect(ctx context.Context, req Request) (MachineState, string, error)
}

// Modeled is what a provider whose nodes are models implements: no
// machine is behind their addresses (the latency provider's are in the
// benchmarking range), so nothing may dial them. A drift probe takes its
// Inspect answer as all there is to know.
type Modeled interface {
	Modeled()
}
