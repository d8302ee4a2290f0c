package planner

import (
	"errors"
	"time"

	"github.com/heddle-io/heddle/internal/domain"
)

// ErrInvalidRequest wraps every error caused by a Request that does not
// describe a valid operation (as opposed to a *CycleError in the catalog).
var ErrInvalidRequest = errors.New("planner: invalid request")

// ClusterConfigKey is the ConfigReferences key for the cluster config. Every
// task reads the cluster config, so what it refers to counts as referred to by
// every service.
const ClusterConfigKey = ""

// Request is everything the planner needs for one operation.
type Request struct {
	Operation domain.Operation
	// Old is the cluster's layout before the operation (empty for create).
	Old []domain.Node
	// New is the layout after it. Operations that do not change the layout
	// (reconfigure, start, stop, restart, rolling-restart) accept an empty New,
	// meaning "the same as Old"; delete requires it empty.
	New []domain.Node
	// Services holds the definition of every service on either layout, as the
	// cluster resolved them (for sync-template: the new versions).
	Services map[string]*domain.Service
	// Selected names the services a reconfigure, start, stop, restart or
	// rolling-restart acts on; empty means all. Start adds what the selection
	// needs at runtime, stop and restart what depends on it at runtime.
	Selected []string
	// Restart makes reconfiguration stop and start the reconfigured services
	// and what depends on them at runtime (reconfigure, expand, shrink,
	// add-services, remove-services, sync-template).
	Restart bool
	// StopOn maps a node of Old to services a repair in place stops there
	// whatever the node's record says: heddle stopped them, and they run
	// (serviceRunning drift). The record's "stopped" would make the stop
	// look needless; here it is the point.
	StopOn map[string][]string
	// Force makes delete and shrink delete nodes without stopping and removing
	// their services first.
	Force bool
	// BatchSize is how many nodes a rolling restart restarts at once (0 means 1).
	BatchSize int
	// ConfigReferences maps a service to the services its action fields refer
	// to through macros (%host.service.S%, %ip.service.S[i]%, %num.service.S%,
	// ...), and ClusterConfigKey to those the cluster config refers to. Names
	// may be provided names. Nil means unknown: every service is taken to refer
	// to every service. See the package documentation for how it is used.
	ConfigReferences map[string][]string
	// Limits bounds the graph's shape; zero fields take the defaults.
	Limits Limits
}

// Limits bound the shape of a plan so that the engine can settle any task's
// completion, and count down its dependents, in one store transaction.
type Limits struct {
	// MaxDependsOn bounds the dependencies of any task (default 32).
	MaxDependsOn int
	// MaxDependents bounds the tasks that depend on any one task (default 32).
	MaxDependents int
	// MaxDirectEdges is the most edges a dependency between two groups of
	// tasks may add directly; above it the groups are joined through one join
	// task (default 16).
	MaxDirectEdges int
}

// Default limits. 32 dependents keep a completion (the task, its dependents'
// counters, the job's progress) well inside DynamoDB's 100-item transactions.
const (
	DefaultMaxDependsOn   = 32
	DefaultMaxDependents  = 32
	DefaultMaxDirectEdges = 16
)

func (l Limits) withDefaults() Limits {
	if l.MaxDependsOn < 2 {
		l.MaxDependsOn = DefaultMaxDependsOn
	}
	if l.MaxDependents < 2 {
		l.MaxDependents = DefaultMaxDependents
	}
	if l.MaxDirectEdges < 1 {
		l.MaxDirectEdges = DefaultMaxDirectEdges
	}
	return l
}

// Timeouts of the node-level actions, which no service defines. Creating a
// node asks the provider for it (EC2 returns once the instance is
// requested); confirming waits for the boot, SSH and the host key; bootstrap
// copies the automator's resources; delete waits for the provider to report
// the node gone. Each stays under the engine's long-task threshold (13
// minutes), so node actions run on the worker Lambda, not on Fargate.
const (
	CreateTimeout    = domain.Duration(12 * time.Minute)
	ConfirmTimeout   = domain.Duration(10 * time.Minute)
	BootstrapTimeout = domain.Duration(10 * time.Minute)
	DeleteTimeout    = domain.Duration(10 * time.Minute)
)

// nodeActionTimeout returns the timeout of a node-level action.
func nodeActionTimeout(a domain.Action) domain.Duration {
	switch a {
	case domain.ActionCreate:
		return CreateTimeout
	case domain.ActionConfirm:
		return ConfirmTimeout
	case domain.ActionBootstrap:
		return BootstrapTimeout
	default:
		return DeleteTimeout
	}
}
