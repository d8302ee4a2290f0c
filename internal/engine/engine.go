package engine

import (
	"context"
	"io"
	"log/slog"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/metrics"
	"github.com/heddle-io/heddle/internal/queue"
	"github.com/heddle-io/heddle/internal/store"
)

// Executor carries out one attempt of a work task: the provider for node
// actions, the automator for service actions. The provisioning plugins
// implement it; Simulation stands in for them in tests and benchmarks.
type Executor interface {
	Execute(ctx context.Context, in Attempt) Result
}

// Attempt is what an executor gets: the task (its Attempt field is this
// attempt's number, from 1) and, for node tasks, the node as the store holds
// it when the attempt starts (addresses and the pinned host key that earlier
// tasks recorded).
type Attempt struct {
	Tenant string
	Task   domain.Task
	Node   *domain.Node
	// Poll is empty when the attempt starts. When an earlier call for this
	// attempt answered PollAfter, the engine calls again after that delay
	// with Poll set to the PollState it returned: the executor looks at what
	// it started (it must not start it again) and answers the final result
	// or PollAfter once more.
	Poll string
	// Expect is how long the engine expects the action to take, from what
	// it took before (estimate.go); zero when nothing is known. The shell
	// automator watches a detached run in place only when it is likely to
	// end within its QuickWait.
	Expect time.Duration
}

// Result is what an attempt did. Err nil means success.
type Result struct {
	Err      error
	ExitCode int
	Stdout   string // bounded tails, secrets already redacted by the executor
	Stderr   string
	// Node, when set, is what the attempt learned about its node; the engine
	// records it on the node in the transaction that completes the task, so
	// later tasks see it (a provider's create and confirm set it).
	Node *NodeFacts
	// PollAfter, when positive and Err is nil, says the attempt is not over:
	// the executor started something that runs on without it (a detached
	// script) and wants to be called again after PollAfter, with Poll set to
	// PollState. The attempt stays RUNNING, bounded by its deadline, and the
	// worker is free meanwhile. Output and Node of such a result are not
	// recorded; the final result's are.
	PollAfter time.Duration
	PollState string // opaque to the engine; at most a few hundred bytes
	// Health is a check's verdict (set by the engine, see checkResult), and
	// Note the error that led to it: a check that finds a fault still
	// succeeds as a task, so the verification goes on to its end.
	Health domain.CheckStatus
	Note   string
	// Drift is a probe's finding about its node (empty: none; see
	// probeResult).
	Drift domain.DriftKind
	// Digest is what a configure applied, as provision.ConfigDigest
	// computes it: recorded in the node's service state at the job's end.
	Digest string
}

// NodeFacts are node properties an executor reports. Empty fields leave the
// stored value alone; Properties are merged key by key.
type NodeFacts struct {
	Hostname   string
	Addresses  map[string]string
	SSHUser    string
	HostKey    string
	ProviderID string
	Flavor     string
	Image      string
	Properties map[string]string
}

// apply merges f into n.
func (f NodeFacts) apply(n *domain.Node) {
	set := func(dst *string, v string) {
		if v != "" {
			*dst = v
		}
	}
	set(&n.Hostname, f.Hostname)
	set(&n.SSHUser, f.SSHUser)
	set(&n.HostKey, f.HostKey)
	set(&n.ProviderID, f.ProviderID)
	set(&n.Flavor, f.Flavor)
	set(&n.Image, f.Image)
	for k, v := range f.Addresses {
		if n.Addresses == nil {
			n.Addresses = map[string]string{}
		}
		n.Addresses[k] = v
	}
	for k, v := range f.Properties {
		if n.Properties == nil {
			n.Properties = map[string]string{}
		}
		n.Properties[k] = v
	}
}

// Config tunes the engine; zero fields take the defaults.
type Config struct {
	// Backoff is the wait before retry n is base * 2^(n-1), capped at MaxBackoff.
	Backoff    time.Duration
	MaxBackoff time.Duration
	// ResendAfter is how long a task may stay READY before the janitor takes
	// its message for lost and sends it again.
	ResendAfter time.Duration
	// SubmitTimeout is how long a job may stay PENDING before the janitor
	// undoes the submission.
	SubmitTimeout time.Duration
	// StuckAfter is how long a RUNNING or ROLLING_BACK job may go with no
	// task running and no attempt starting or ending before the janitor
	// fails it as stuck (its ready tasks are never claimed: no worker
	// consumes the queue, or a message keeps failing before its claim). A
	// job that cannot progress at all (nothing ready or running) is failed
	// at once, whatever this says.
	StuckAfter time.Duration
	// Visibility is how long a received message stays hidden before the
	// worker extends it (heartbeat) or it is delivered again.
	Visibility time.Duration
	// TaskLease is how long a claimed attempt lives without a heartbeat: the
	// worker running it extends its deadline every TaskLease/3, so a worker
	// that dies is noticed after TaskLease, not after the action's timeout.
	TaskLease time.Duration
	// DeadlineGrace is added to the action's timeout for the attempt's last
	// deadline, so the worker's own timeout is recorded before the janitor's.
	DeadlineGrace time.Duration
	// FirstPoll is the shortest wait before a look at a parked service
	// action, and the first step of the polls' backoff (estimate.go);
	// default a second, the granularity of SQS's visibility. Negative:
	// poll after the executor's PollAfter, as before issue 35.
	FirstPoll time.Duration
	// PollReceives is how many times a message may be delivered before a
	// parked attempt (see Result.PollAfter) moves its polls to a fresh
	// message: each poll is a delivery, and SQS moves a message delivered
	// more than its queue's MaxReceiveCount (5 by default) times to the
	// dead-letter queue. Negative: never.
	PollReceives int
	// ProgressInterval is how often a worker pool writes the progress it
	// counted.
	ProgressInterval time.Duration
	// LongTaskAfter marks the message of a task whose timeout exceeds it
	// as long (queue.Message.Long), which queue/routed sends to the
	// tenant's long-task queue: in AWS, tasks a Lambda could not finish go
	// to `heddle worker` on Fargate. Zero: no message is long. A
	// same-node continuation is claimed in process, not sent, so this does
	// not apply to it (a worker with a deadline claims one only if it fits).
	LongTaskAfter time.Duration
	// InvocationTimeout is the whole deadline of one invocation of a worker
	// that has one (the worker Lambda's timeout, HEDDLE_WORKER_TIMEOUT);
	// zero for workers without a deadline or when unknown. A worker with a
	// deadline claims a later message of its batch, or a continuation,
	// only when its action fits before the deadline, and leaves it to a
	// fresh invocation otherwise; but an action whose timeout no
	// invocation could fit gains nothing from a fresh one, so it is taken
	// while at least half an invocation is left (see fits).
	InvocationTimeout time.Duration
	// ReceiveWait is how long a pool's worker (RunWorkers) waits for a
	// message in one Receive; default 1 s. On SQS every Receive is a billed
	// request, so `heddle worker` long-polls for queue.MaxWait (20 s).
	ReceiveWait time.Duration
	// ExpireLease is called by the janitor for each cluster whose lease has
	// run out and that no job holds; the cluster service implements it by
	// submitting the cluster's delete job (the engine cannot plan one). Nil:
	// expired leases are only counted.
	ExpireLease func(ctx context.Context, tenant string, c domain.Cluster) error
	// MaxFormat is the newest format this engine handles (FormatVersion,
	// the default). Work of a newer one is handed back, and the janitor
	// leaves it alone; tests set it lower to stand in for the release
	// before a format change, which is exactly that code's behaviour.
	MaxFormat int
	// Verify is called by the janitor for each cluster whose verification
	// is due (after a create or scale that succeeded, and periodically where
	// the template asks) and that no job holds; the cluster service submits
	// the verification job. ErrNothingToVerify drops the due verification.
	// Nil: due verifications wait.
	Verify func(ctx context.Context, tenant string, c domain.Cluster) error
	// Drift is called by the janitor for each cluster whose drift check is
	// due and that no job holds: it submits the drift check.
	// ErrNothingToCheck drops the due check. Nil: due checks wait.
	Drift func(ctx context.Context, tenant string, c domain.Cluster) error
	// Repair is called by the janitor for each cluster whose repair is due
	// (a drift check found drift and the template asks for automatic
	// repair) and that no job holds. ErrNothingToCheck drops it.
	Repair func(ctx context.Context, tenant string, c domain.Cluster) error
	// Autoscale is called by the janitor for each cluster whose autoscale
	// policy is due (autoscale.go): it evaluates the policy, submits the
	// expand or shrink it decides on, and arms the next evaluation; scaled
	// says a job was submitted. Nil: policies wait.
	Autoscale func(ctx context.Context, tenant, cluster string) (scaled bool, err error)
	// TaskIndexMinTasks is the job size (work tasks) from which Submit
	// writes the job's task index (taskindex.go); default
	// defaultTaskIndexMin. Tests set it to 1 to give small jobs one.
	TaskIndexMinTasks int
	// WorkerID names this process in attempt records.
	WorkerID string
	Logger   *slog.Logger
	// Observer receives the engine's measurements (attempts, jobs,
	// janitor passes); nil measures nothing.
	Observer metrics.Observer
	Clock    func() time.Time
}

func (c Config) withDefaults() Config {
	if c.MaxFormat == 0 {
		c.MaxFormat = FormatVersion
	}
	if c.Backoff == 0 {
		c.Backoff = 2 * time.Second
	}
	if c.MaxBackoff == 0 {
		c.MaxBackoff = 5 * time.Minute
	}
	if c.ResendAfter == 0 {
		c.ResendAfter = 2 * time.Minute
	}
	if c.SubmitTimeout == 0 {
		c.SubmitTimeout = 2 * time.Minute
	}
	if c.StuckAfter == 0 {
		c.StuckAfter = time.Hour
	}
	if c.Visibility == 0 {
		c.Visibility = 60 * time.Second
	}
	if c.TaskLease == 0 {
		c.TaskLease = 90 * time.Second
	}
	if c.DeadlineGrace == 0 {
		c.DeadlineGrace = 30 * time.Second
	}
	if c.FirstPoll == 0 {
		c.FirstPoll = time.Second
	}
	if c.PollReceives == 0 {
		c.PollReceives = 4
	}
	if c.ReceiveWait == 0 {
		c.ReceiveWait = time.Second
	}
	c.ReceiveWait = min(c.ReceiveWait, queue.MaxWait)
	if c.ProgressInterval == 0 {
		c.ProgressInterval = time.Second
	}
	if c.TaskIndexMinTasks <= 0 {
		c.TaskIndexMinTasks = defaultTaskIndexMin
	}
	if c.WorkerID == "" {
		c.WorkerID = "worker"
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if c.Clock == nil {
		c.Clock = time.Now
	}
	return c
}

// Engine runs jobs over a store and a queue.
type Engine struct {
	store store.Store
	queue queue.Queue
	exec  Executor
	cfg   Config
	// replanner rebuilds submissions planned later (replan.go); set once.
	replanner Replanner
	log       *slog.Logger

	deferred deferredCache
	chunks   chunkCache
	jobs     jobCache
	// inlineLists is the most list data a job record keeps itself
	// (maxInlineListBytes; tests lower it).
	inlineLists int
	// inlineBatches is the most step-2 transactions Submit writes itself
	// before it stages the rest (defaultInlineBatches; tests lower it).
	inlineBatches int
	// est holds the running estimates of service actions (estimate.go).
	est estimates
	// hooks delivers webhooks (SetHooks); nil: none.
	hooks atomic.Pointer[hooksBox]
}

// New returns an engine over the unscoped store s.
func New(s store.Store, q queue.Queue, exec Executor, cfg Config) *Engine {
	cfg = cfg.withDefaults()
	cfg.Observer = metrics.OrNop(cfg.Observer)
	return &Engine{store: s, queue: q, exec: exec, cfg: cfg, log: cfg.Logger, inlineLists: maxInlineListBytes, inlineBatches: defaultInlineBatches}
}

func (e *Engine) now() time.Time { return e.cfg.Clock().UTC() }

func (e *Engine) backoff(attempt int) time.Duration {
	d := e.cfg.Backoff
	for i := 1; i < attempt && d < e.cfg.MaxBackoff; i++ {
		d *= 2
	}
	return min(d, e.cfg.MaxBackoff)
}

// send offers ready tasks to their tenant's workers, in batches.
func (e *Engine) send(ctx context.Context, tenant string, tasks []domain.Task) error {
	var batch []queue.Message
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		err := e.queue.Send(ctx, tenant, batch...)
		batch = batch[:0]
		return err
	}
	for _, t := range tasks {
		ref := TaskRef{Tenant: tenant, Cluster: t.ClusterID, Job: t.JobID, Task: t.ID}
		batch = append(batch, queue.Message{
			TaskID:  ref.String(),
			Attempt: t.Attempt,
			Format:  FormatVersion,
			Group:   group(t.ClusterID, t.NodeID, t.ID, t.Sends),
			Dedup:   dedupID(ref, t.Attempt, t.Sends),
			Long:    e.cfg.LongTaskAfter > 0 && t.Timeout.Std() > e.cfg.LongTaskAfter,
		})
		if len(batch) == queue.MaxBatch {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	return flush()
}

// dedupID is a task message's deduplication id. The queue drops a message
// whose id its group saw in the last 5 minutes, so every new message of a
// task must differ in attempt or sends from all earlier ones: whoever sends
// one bumps t.Sends in the write that records why (docs/architecture.md,
// "Deduplication ids"). Only a client retry of one send repeats an id.
func dedupID(ref TaskRef, attempt, sends int) string {
	return ref.Job + "#" + ref.Task + "#" + strconv.Itoa(attempt) + "#" + strconv.Itoa(sends)
}
