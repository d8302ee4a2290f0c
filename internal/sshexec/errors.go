package sshexec

import (
	"fmt"
	"time"
)

// HostKeyError: the node presented a host key other than the one pinned on
// first contact. Either the node was replaced or someone is in the middle;
// heddle never connects through it.
type HostKeyError struct {
	Node    string
	Address string
	// Pinned and Presented are SHA256 fingerprints ("SHA256:..."), as
	// ssh-keygen -l prints them, so a person can compare them with the node.
	Pinned    string
	Presented string
}

func (e *HostKeyError) Error() string {
	return fmt.Sprintf("sshexec: host key of node %s at %s changed: pinned %s, presented %s; refusing to connect (if the node was rebuilt, clear its pinned key)",
		e.Node, e.Address, e.Pinned, e.Presented)
}

// UnreachableError: no TCP connection to the node (refused, no route, or the
// dial timed out). Nothing ran.
type UnreachableError struct {
	Node    string
	Address string
	Err     error
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("sshexec: node %s at %s is unreachable: %v", e.Node, e.Address, e.Err)
}

func (e *UnreachableError) Unwrap() error { return e.Err }

// TransportError: the SSH layer failed after the TCP connection was made:
// handshake, authentication, opening a session, or the connection dropped
// while a command ran (so whether it finished is unknown). Op says which.
type TransportError struct {
	Node    string
	Address string
	Op      string // "handshake", "authenticate", "session" or "run"
	Err     error
}

func (e *TransportError) Error() string {
	return fmt.Sprintf("sshexec: node %s at %s: %s failed: %v", e.Node, e.Address, e.Op, e.Err)
}

func (e *TransportError) Unwrap() error { return e.Err }

// TimeoutError: the context ended before the operation did. A running
// command was sent SIGTERM (its whole process group) and its session closed;
// the Result holds the output seen until then.
type TimeoutError struct {
	Node    string
	Address string
	Op      string // "connect", "session" or "run"
	After   time.Duration
	Err     error // the context's error: context.DeadlineExceeded or context.Canceled
}

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("sshexec: node %s at %s: %s stopped after %s: %v", e.Node, e.Address, e.Op, e.After.Round(time.Millisecond), e.Err)
}

func (e *TimeoutError) Unwrap() error { return e.Err }

// ExitError: the command ran and failed. Signal is set (and Code is -1) when
// it was killed by a signal.
type ExitError struct {
	Node    string
	Address string
	Code    int
	Signal  string
}

func (e *ExitError) Error() string {
	if e.Signal != "" {
		return fmt.Sprintf("sshexec: node %s at %s: command killed by signal %s", e.Node, e.Address, e.Signal)
	}
	return fmt.Sprintf("sshexec: node %s at %s: command exited with status %d", e.Node, e.Address, e.Code)
}

// LostError: a detached command can no longer be followed: its directory is
// gone, the node rebooted, or its process ended without recording a status.
type LostError struct {
	Node    string
	Address string
	Dir     string
	Reason  string
}

func (e *LostError) Error() string {
	return fmt.Sprintf("sshexec: node %s at %s: detached command in %s lost: %s", e.Node, e.Address, e.Dir, e.Reason)
}
