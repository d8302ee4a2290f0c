package domain

import (
	"encoding/json"
	"strings"
	"time"
)

// ClusterStatus is where a cluster stands as a whole.
type ClusterStatus string

const (
	ClusterPending      ClusterStatus = "PENDING"      // a create job is running
	ClusterActive       ClusterStatus = "ACTIVE"       // the last job succeeded
	ClusterInconsistent ClusterStatus = "INCONSISTENT" // an operation on a live cluster failed
	ClusterFailed       ClusterStatus = "FAILED"       // create failed and rollback could not finish
	ClusterDeleting     ClusterStatus = "DELETING"     // a delete job is running
	ClusterTerminated   ClusterStatus = "TERMINATED"   // every node is gone
)

// Terminal reports whether nothing more will happen to a cluster.
func (s ClusterStatus) Terminal() bool { return s == ClusterTerminated }

// NodeLayout is what one node runs: its hardware type, image type and sorted
// service names. The solver speaks in node layouts.
type NodeLayout struct {
	HardwareType string   `json:"hardwareType"`
	ImageType    string   `json:"imageType"`
	Services     []string `json:"services"`
}

// Node is one machine of a cluster.
type Node struct {
	ID        string `json:"id"`
	ClusterID string `json:"clusterId"`
	// Num orders nodes within the cluster (from 1000, as Coopr numbered them);
	// macros index services by it and shrink picks the highest first.
	Num int `json:"num"`
	NodeLayout
	Hostname   string            `json:"hostname,omitempty"`
	Addresses  map[string]string `json:"addresses,omitempty"` // access_v4, bind_v4
	Flavor     string            `json:"flavor,omitempty"`
	Image      string            `json:"image,omitempty"`
	SSHUser    string            `json:"sshUser,omitempty"`
	Status     NodeStatus        `json:"status"`
	HostKey    string            `json:"hostKey,omitempty"`    // pinned on first contact, authorized_keys form
	ProviderID string            `json:"providerId,omitempty"` // the provider's own id (an EC2 instance id)
	Properties map[string]string `json:"properties,omitempty"` // results a provider or automator hands to later tasks
	CreatedAt  time.Time         `json:"createdAt"`
	// ServiceStates is what the jobs that ran on this node left each of its
	// services in. A service with no entry is in an unknown state (a node
	// from before heddle recorded them, or one no action has touched yet):
	// heddle then runs the actions an operation asks for.
	ServiceStates map[string]ServiceState `json:"serviceStates,omitempty"`
}

// RunState is where a service stands on one node.
type RunState string

const (
	RunInstalled  RunState = "installed"  // installed, never configured or started
	RunConfigured RunState = "configured" // configured (or initialized), not started since
	RunRunning    RunState = "running"    // its start action succeeded last
	RunStopped    RunState = "stopped"    // its stop action succeeded last
	RunFailed     RunState = "failed"     // an action failed for good; Action says which
)

// ServiceState is one service's run state on one node, and the action, job
// and time that put it in that state (an action that leaves the state as it
// was, as a restart's stop and start do, changes none of them).
type ServiceState struct {
	State  RunState  `json:"state"`
	Action Action    `json:"action"` // the last action that ran to its end
	JobID  string    `json:"jobId"`
	At     time.Time `json:"at"`
	// Message says why the action failed (bounded, output already redacted).
	Message string `json:"message,omitempty"`
	// Config is the digest of the configuration the service's last
	// successful configure applied on this node (its expanded configure
	// fields and the expanded cluster config); a drift check compares it
	// with what the cluster's definition renders now. Empty: unknown.
	Config string `json:"config,omitempty"`
}

// MaxStateMessage bounds ServiceState.Message: the node item holds one per
// service and DynamoDB items hold at most 400 KB.
const MaxStateMessage = 300

// Known reports whether the state was recorded.
func (s ServiceState) Known() bool { return s.State != "" }

// MayRun reports whether the service may be running: it is, it failed in
// some way heddle cannot see into, or nobody recorded it.
func (s ServiceState) MayRun() bool {
	return s.State == "" || s.State == RunRunning || s.State == RunFailed
}

// After returns the state that action leaves the service in when it
// succeeded (ok) or failed for good, and whether a state is known after it:
// remove clears the state, and so does a configure of a service in an
// unknown state (it may be running; heddle cannot tell). Check leaves the
// state as it was.
func (s ServiceState) After(action Action, ok bool, job, message string, at time.Time) (ServiceState, bool) {
	if !ok {
		if len(message) > MaxStateMessage {
			message = strings.ToValidUTF8(message[:MaxStateMessage], "")
		}
		return ServiceState{State: RunFailed, Action: action, JobID: job, At: at, Message: message, Config: s.Config}, true
	}
	next := ServiceState{Action: action, JobID: job, At: at, Config: s.Config}
	switch action {
	case ActionInstall:
		next.State = RunInstalled
	case ActionConfigure, ActionInitialize:
		// Only a service known not to have started becomes configured:
		// configuring one that runs, is stopped, failed or is unknown
		// leaves it so (the new configuration applies at its next start).
		if s.State != RunInstalled && s.State != RunConfigured {
			return s, s.Known()
		}
		next.State = RunConfigured
	case ActionStart:
		next.State = RunRunning
	case ActionStop:
		next.State = RunStopped
	case ActionRemove:
		return ServiceState{}, false
	default:
		return s, s.Known()
	}
	return next, true
}

// NodeStatus is a node's own lifecycle.
type NodeStatus string

const (
	NodePlanned  NodeStatus = "PLANNED"
	NodeCreating NodeStatus = "CREATING"
	NodeActive   NodeStatus = "ACTIVE"
	NodeDeleting NodeStatus = "DELETING"
	NodeDeleted  NodeStatus = "DELETED"
	NodeFailed   NodeStatus = "FAILED"
)

// Cluster is a set of nodes managed as one.
type Cluster struct {
	ID          string      `json:"id"`
	TenantID    string      `json:"tenantId"`
	Owner       string      `json:"owner"` // user name
	Name        string      `json:"name"`
	Description string      `json:"description,omitempty"`
	Template    TemplateRef `json:"template"`
	// Resolved is the template as resolved when the cluster was created or last
	// synced: later catalog changes do not alter a running cluster.
	Resolved      *ClusterTemplate `json:"resolvedTemplate,omitempty"`
	Provider      string           `json:"provider"`
	Services      []string         `json:"services"`
	Config        json.RawMessage  `json:"config,omitempty"`
	DNSSuffix     string           `json:"dnsSuffix,omitempty"`
	Status        ClusterStatus    `json:"status"`
	StatusMessage string           `json:"statusMessage,omitempty"`
	NodeCount     int              `json:"nodeCount"`
	// ActiveJobID is the cluster lock: at most one non-terminal job per
	// cluster, taken and released with conditional writes.
	ActiveJobID string    `json:"activeJobId,omitempty"`
	LatestJobID string    `json:"latestJobId,omitempty"`
	CreatedAt   time.Time `json:"createdAt"`
	ExpiresAt   time.Time `json:"expiresAt,omitzero"` // zero: never
	// Health is what the latest verification found; nil until one ended.
	Health *ClusterHealth `json:"health,omitempty"`
	// Drift is what the latest drift check found; nil until one ended.
	Drift   *ClusterDrift `json:"drift,omitempty"`
	Version int64         `json:"version"`
	// ManagedBy names the tool that owns the cluster's desired state
	// ("apply" for a cluster `heddle apply` made or adopted); others leave
	// such a cluster's shape to it. Empty: managed by hand.
	ManagedBy string `json:"managedBy,omitempty"`
	// Revision is the cluster's current revision (revisions.go in the
	// engine); LastRevision the highest number given, withdrawn ones
	// included, so that a number is never given twice.
	Revision     int64 `json:"revision,omitempty"`
	LastRevision int64 `json:"lastRevision,omitempty"`
}

// Operation is what a job does to a cluster.
type Operation string

const (
	OpCreate          Operation = "create"
	OpDelete          Operation = "delete"
	OpExpand          Operation = "expand"
	OpShrink          Operation = "shrink"
	OpReconfigure     Operation = "reconfigure"
	OpAddServices     Operation = "add-services"
	OpRemoveServices  Operation = "remove-services"
	OpStartServices   Operation = "start"
	OpStopServices    Operation = "stop"
	OpRestartServices Operation = "restart"
	OpRollingRestart  Operation = "rolling-restart"
	OpSyncTemplate    Operation = "sync-template"
	OpRollback        Operation = "rollback"
	// OpVerify runs every service's check action on every node that carries
	// it and records the cluster's health (health.go); it changes nothing.
	OpVerify Operation = "verify"
	// OpDrift compares heddle's record of the cluster with what is there
	// (machines, services, applied configuration) and records the drift it
	// finds (drift.go); it changes nothing.
	OpDrift Operation = "drift"
	// OpRepair repairs what a drift check found (cluster service,
	// repair.go): it replaces lost nodes (their records and machines go,
	// new ones are made and set up, and what reads the layout is
	// reconfigured), or it reconfigures and restarts the services found
	// down or stale on the nodes they drifted on.
	OpRepair Operation = "repair"
)

// JobStatus is a job's lifecycle.
type JobStatus string

const (
	JobPending   JobStatus = "PENDING" // written, tasks not yet all dispatched
	JobRunning   JobStatus = "RUNNING"
	JobPaused    JobStatus = "PAUSED"
	JobSucceeded JobStatus = "SUCCEEDED"
	JobFailed    JobStatus = "FAILED"
	JobAborted   JobStatus = "ABORTED"
	// JobFailing: a task failed for good (or the job was aborted); the job
	// waits for its running tasks to end before rolling back or failing.
	JobFailing     JobStatus = "FAILING"
	JobRollingBack JobStatus = "ROLLING_BACK"
)

// Terminal reports whether a job will do nothing more by itself.
func (s JobStatus) Terminal() bool {
	return s == JobSucceeded || s == JobFailed || s == JobAborted
}

// Job is one operation on one cluster and the tasks that carry it out.
type Job struct {
	ID            string    `json:"id"`
	TenantID      string    `json:"tenantId"`
	ClusterID     string    `json:"clusterId"`
	Operation     Operation `json:"operation"`
	Status        JobStatus `json:"status"`
	StatusMessage string    `json:"statusMessage,omitempty"`
	TaskTotal     int       `json:"taskTotal"`
	TaskDone      int       `json:"taskDone"`
	RequestedBy   string    `json:"requestedBy"`
	CreatedAt     time.Time `json:"createdAt"`
	StartedAt     time.Time `json:"startedAt,omitzero"`
	EndedAt       time.Time `json:"endedAt,omitzero"`
	// Retries counts how often the job was retried after it failed.
	Retries int   `json:"retries,omitempty"`
	Version int64 `json:"version"`
}

// TaskStatus is a task's lifecycle. Every move between them is a conditional
// write on the task's current status and attempt.
type TaskStatus string

const (
	TaskBlocked   TaskStatus = "BLOCKED" // waiting for dependencies
	TaskReady     TaskStatus = "READY"   // dependencies done, in a queue
	TaskRunning   TaskStatus = "RUNNING" // claimed by a worker for an attempt
	TaskSucceeded TaskStatus = "SUCCEEDED"
	TaskFailed    TaskStatus = "FAILED"
	TaskCanceled  TaskStatus = "CANCELED"
)

// Terminal reports whether the task will never run again in this job.
func (s TaskStatus) Terminal() bool {
	return s == TaskSucceeded || s == TaskFailed || s == TaskCanceled
}

// Task is one action on one node (and, for service actions, one service).
type Task struct {
	ID        string     `json:"id"`
	TenantID  string     `json:"tenantId"`
	JobID     string     `json:"jobId"`
	ClusterID string     `json:"clusterId"`
	NodeID    string     `json:"nodeId,omitempty"`
	Service   string     `json:"service,omitempty"`
	Action    Action     `json:"action"`
	Status    TaskStatus `json:"status"`
	// Join marks a zero-work task that only gathers dependencies: it succeeds
	// as soon as it is ready, with no attempt.
	Join bool `json:"join,omitempty"`
	// Rollback marks a task of the job's rollback plan: it stays blocked
	// unless the forward plan fails.
	Rollback    bool `json:"rollback,omitempty"`
	Attempt     int  `json:"attempt"`
	MaxAttempts int  `json:"maxAttempts"`
	// AttemptsPerRun is what one run of the job allows (the action's retries
	// plus one); retrying a failed job raises MaxAttempts by as much.
	AttemptsPerRun int      `json:"attemptsPerRun,omitempty"`
	Timeout        Duration `json:"timeout"`
	DependsOn      []string `json:"dependsOn,omitempty"`
	// Dependents are the tasks whose Remaining this task counts down when it
	// succeeds; Remaining is how many of DependsOn have not succeeded yet.
	Dependents []string `json:"dependents,omitempty"`
	Remaining  int      `json:"remaining"`
	// ReadyAt is when a READY task may be claimed (later than now during a
	// retry's backoff); Sends counts the messages sent for it after its
	// first (re-sends, retries, moved polls): each has a deduplication id
	// of its own.
	ReadyAt time.Time `json:"readyAt,omitzero"`
	Sends   int       `json:"sends,omitempty"`
	// SendReasons says why each of those messages was sent, oldest first
	// (at most MaxSendReasons, the newest): the Send* codes. A
	// continuation (claimed by the worker that ran the task before it, so
	// never sent) whose run is polled gets its first message, with
	// SendContinuationPolls; every other code is a message beyond the
	// task's first.
	SendReasons []string      `json:"sendReasons,omitempty"`
	Deadline    time.Time     `json:"deadline,omitzero"`
	Attempts    []TaskAttempt `json:"attempts,omitempty"`
	// Params are extra inputs for the executor (the simulation plugin reads
	// its duration and failures here).
	Params  map[string]string `json:"params,omitempty"`
	Version int64             `json:"version"`
}

// TaskAttempt records one try of a task.
type TaskAttempt struct {
	Attempt   int        `json:"attempt"`
	Worker    string     `json:"worker,omitempty"`
	StartedAt time.Time  `json:"startedAt"`
	EndedAt   time.Time  `json:"endedAt,omitzero"`
	Status    TaskStatus `json:"status"`
	ExitCode  int        `json:"exitCode"`
	Error     string     `json:"error,omitempty"`
	Stdout    string     `json:"stdout,omitempty"` // bounded tail, secrets redacted
	Stderr    string     `json:"stderr,omitempty"`
	// Health is a check attempt's verdict (see CheckStatus); empty for
	// every other action.
	Health CheckStatus `json:"health,omitempty"`
	// Drift is a probe attempt's finding about its node (empty: none).
	Drift DriftKind `json:"drift,omitempty"`
	// Digest is a configure attempt's digest of what it applied (see
	// ServiceState.Config).
	Digest string `json:"digest,omitempty"`
}

// Why a task's message was sent again (Task.SendReasons).
const (
	// SendContinuationPolls: a continuation's run is polled through a
	// message of its own, its first (not an extra send).
	SendContinuationPolls = "continuation-polls"
	// SendPollReceives: the polls moved to a fresh message after the
	// engine's PollReceives deliveries, short of the queue's
	// dead-letter count.
	SendPollReceives = "poll-receives"
	// SendPollLost: the janitor found a parked attempt past its poll's
	// deadline (the poll message was lost) and sent a fresh one.
	SendPollLost = "poll-lost"
	// SendLost: the janitor found the task READY and unclaimed for the
	// engine's ResendAfter (its message was lost).
	SendLost = "lost"
	// SendAttemptRetry: an attempt failed and the next one is sent.
	SendAttemptRetry = "attempt-retry"
	// SendJobRetry: a retry of the failed job.
	SendJobRetry = "job-retry"
	// SendResume: a resumed job, or a process whose in-process queue died
	// with its last run, sends its READY tasks again.
	SendResume = "resume"
	// SendRoot: an unclaimed root of a staged job given its item and sent
	// again.
	SendRoot = "root"
)

// MaxSendReasons bounds Task.SendReasons.
const MaxSendReasons = 8

// NoteSend counts one more message for t, saying why: its deduplication
// id must differ from every earlier one's.
func (t *Task) NoteSend(reason string) {
	t.Sends++
	t.SendReasons = append(t.SendReasons, reason)
	if n := len(t.SendReasons); n > MaxSendReasons {
		t.SendReasons = append([]string(nil), t.SendReasons[n-MaxSendReasons:]...)
	}
}

// ExtraSends is how many messages were sent for t beyond its first.
func (t *Task) ExtraSends() int {
	n := t.Sends
	for _, r := range t.SendReasons {
		if r == SendContinuationPolls {
			n--
		}
	}
	return n
}
