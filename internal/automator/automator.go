package automator

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/sshexec"
)

// Automator carries out actions on nodes. Implementations are safe for
// concurrent use.
type Automator interface {
	// Bootstrap prepares a node for the automator's actions; it runs once
	// per node, after the provider confirmed it.
	Bootstrap(ctx context.Context, req Request) Output
	// Run carries out one service action to its end: the exit status
	// decides success.
	Run(ctx context.Context, req Request) Output
	// ValidateAction checks a service action's fields when the service is
	// written, with paths under "fields".
	ValidateAction(fields map[string]string) domain.Problems
}

// Detacher is an Automator that can hand a long action back to its caller
// while it runs on the node, so that nobody waits on it: the engine parks
// the task's attempt and calls Check again later (engine.Result.PollAfter).
type Detacher interface {
	Automator
	// Start begins an action. One the automator runs synchronously runs to
	// its end, as Run would; a detached one is started on the node (or
	// found started: Start is idempotent per attempt) and Start returns at
	// once with Output.Pending set.
	Start(ctx context.Context, req Request) Output
	// Check looks once at an action Start left Pending: Pending again while
	// it runs (or while the node cannot be reached), else how it ended. A
	// node that rebooted or lost the action's status fails it; a ctx that
	// has ended (the action's timeout) stops it and fails it as timed out.
	Check(ctx context.Context, req Request) Output
}

// Request is one action on one node.
type Request struct {
	// Context describes the task; it is uploaded to the node.
	Context TaskContext
	// Target is the node's SSH login: address, user, the cluster's key, the
	// pinned host key (empty only before a node's first contact) and the
	// sudo policy.
	Target sshexec.Target
	// WorkDir is where the automator keeps its files on the node.
	WorkDir string
	// Timeout is the action's timeout; the context carries the deadline, and
	// the automator uses Timeout to choose between running the action
	// synchronously and detached.
	Timeout time.Duration
	// Secrets are values to redact from the output: opened provider
	// credentials and the like.
	Secrets []string
	// Expect is how long the action took before, as the engine estimates
	// it (engine.Attempt.Expect); zero when nothing is known. A Detacher
	// need not watch in place a run that will outlast its wait.
	Expect time.Duration
}

// Output is what an action left.
type Output struct {
	Err      error // nil: success
	ExitCode int   // -1 when the command did not run to an exit status
	Stdout   sshexec.Tail
	Stderr   sshexec.Tail
	// HostKey is set when this run was the node's first SSH contact: the
	// key to pin on the node.
	HostKey string
	// Pending (Detacher only): the action runs on, detached; call Check
	// after PollAfter. The other fields are not its result yet.
	Pending   bool
	PollAfter time.Duration
}

// TaskContext is what a script learns about its task, uploaded to the node
// as JSON (HEDDLE_CONTEXT names the file). Fields and Config are already
// macro-expanded for this node.
type TaskContext struct {
	Tenant    string            `json:"tenant"`
	ClusterID string            `json:"clusterId"`
	JobID     string            `json:"jobId"`
	TaskID    string            `json:"taskId"`
	Attempt   int               `json:"attempt"`
	Action    domain.Action     `json:"action"`
	Service   string            `json:"service,omitempty"`
	Fields    map[string]string `json:"fields,omitempty"`
	Config    json.RawMessage   `json:"config,omitempty"`
	Node      NodeInfo          `json:"node"`
	Nodes     []NodeInfo        `json:"nodes"`
}

// NodeInfo is one node as a script sees it.
type NodeInfo struct {
	ID           string            `json:"id"`
	Num          int               `json:"num"`
	Hostname     string            `json:"hostname,omitempty"`
	Addresses    map[string]string `json:"addresses,omitempty"`
	Services     []string          `json:"services"`
	HardwareType string            `json:"hardwareType,omitempty"`
	ImageType    string            `json:"imageType,omitempty"`
	Properties   map[string]string `json:"properties,omitempty"`
}

// NewNodeInfo copies what a script may see of n.
func NewNodeInfo(n *domain.Node) NodeInfo {
	return NodeInfo{
		ID: n.ID, Num: n.Num, Hostname: n.Hostname, Addresses: maps.Clone(n.Addresses),
		Services: slices.Clone(n.Services), HardwareType: n.HardwareType, ImageType: n.ImageType,
		Properties: maps.Clone(n.Properties),
	}
}

// PropHome is the node property a provider sets to give the node's scripts
// a HOME of their own: several nodes on one machine (a static host shared
// by pools, a test machine) would otherwise share the login's HOME, and
// with it every file a service keeps there.
const PropHome = "heddle.home"

// Env is the task's description as environment variables, for scripts that
// would rather not parse JSON. Field values are included as
// HEDDLE_FIELD_<NAME> (upper-cased, other characters as '_'); they travel on
// the node's command line, so service action fields must not hold secrets
// (put those in the cluster config, which only the context file carries).
func (c TaskContext) Env() map[string]string {
	env := map[string]string{
		"HEDDLE_TENANT":     c.Tenant,
		"HEDDLE_CLUSTER_ID": c.ClusterID,
		"HEDDLE_JOB_ID":     c.JobID,
		"HEDDLE_TASK_ID":    c.TaskID,
		"HEDDLE_ATTEMPT":    strconv.Itoa(c.Attempt),
		"HEDDLE_ACTION":     string(c.Action),
		"HEDDLE_SERVICE":    c.Service,
		"HEDDLE_NODE_ID":    c.Node.ID,
		"HEDDLE_NODE_NUM":   strconv.Itoa(c.Node.Num),
		"HEDDLE_HOSTNAME":   c.Node.Hostname,
		"HEDDLE_ACCESS_IP":  c.Node.Addresses["access_v4"],
		"HEDDLE_BIND_IP":    c.Node.Addresses["bind_v4"],
		"HEDDLE_SERVICES":   strings.Join(c.Node.Services, ","),
	}
	if home := c.Node.Properties[PropHome]; home != "" {
		env["HOME"] = home
	}
	for k, v := range c.Fields {
		if name := FieldEnvName(k); name != "" && !strings.ContainsRune(v, 0) {
			env[name] = v
		}
	}
	return env
}

// FieldEnvName is the environment variable that carries field k, or "" for
// a name with nothing usable in it.
func FieldEnvName(k string) string {
	var b strings.Builder
	b.WriteString("HEDDLE_FIELD_")
	useful := false
	for _, r := range k {
		switch {
		case r >= 'a' && r <= 'z':
			b.WriteRune(r - 'a' + 'A')
			useful = true
		case r >= 'A' && r <= 'Z' || r >= '0' && r <= '9':
			b.WriteRune(r)
			useful = true
		default:
			b.WriteByte('_')
		}
	}
	if !useful {
		return ""
	}
	return b.String()
}
