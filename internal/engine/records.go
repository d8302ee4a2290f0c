package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/maphash"
	"sync"
	"time"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/store"
)

// Effect is what a job's end does to its cluster and the tenant's quota.
type Effect struct {
	ClusterStatus domain.ClusterStatus `json:"clusterStatus"`
	Message       string               `json:"message,omitempty"`
	// ReleaseClusters and ReleaseNodes give quota back.
	ReleaseClusters int `json:"releaseClusters,omitempty"`
	ReleaseNodes    int `json:"releaseNodes,omitempty"`
	// NodeCountDelta changes the cluster's NodeCount, the figure quotas are
	// checked against (a shrink's victims, an expand rolled back).
	NodeCountDelta int `json:"nodeCountDelta,omitempty"`
	// NodeStatus, when set, is written on Nodes (for example DELETED on the
	// victims of a shrink, ACTIVE on the nodes of a create).
	NodeStatus domain.NodeStatus `json:"nodeStatus,omitempty"`
	Nodes      []string          `json:"nodes,omitempty"`
	// Verify, on a success, makes a verification of the cluster due at
	// once (a create or scale of a cluster whose services define checks).
	Verify bool `json:"verify,omitempty"`
	// Drift, on a drift check, is what the cluster service found without
	// the nodes (config drift, at most domain.MaxDriftFindings); the job's
	// end adds what its probes and checks found.
	Drift []domain.DriftFinding `json:"drift,omitempty"`
}

// jobRecord is the stored job: the API's view plus what the engine needs to
// finish it.
type jobRecord struct {
	domain.Job
	OnSuccess  Effect `json:"onSuccess"`
	OnFailure  Effect `json:"onFailure"`
	OnRollback Effect `json:"onRollback"`
	// RollbackRoots are the rollback tasks with no dependencies: failing the
	// job releases them.
	RollbackRoots []string `json:"rollbackRoots,omitempty"`
	// What undoing the submission must give back (see Janitor).
	Created        bool                 `json:"created,omitempty"`
	PrevStatus     domain.ClusterStatus `json:"prevStatus,omitempty"`
	TakenClusters  int                  `json:"takenClusters,omitempty"`
	TakenNodes     int                  `json:"takenNodes,omitempty"`
	AddedNodeCount int                  `json:"addedNodeCount,omitempty"`
	// Holds are the items (unscoped keys) of the reservations the job took
	// with its first transaction (Submission.Hold): the job's end deletes
	// them in the transaction that ends it, whichever way it ends. Code
	// from before holds ends such a job without deleting them; their
	// owners count a hold whose cluster no job holds as given back
	// (static.Pool.Reserve), so this needs no new FormatVersion.
	Holds []store.Key `json:"holds,omitempty"`
	// NodesReleased is how many of the nodes its delete tasks marked
	// DELETED (counterNodesDeleted) an earlier, failed end of the job gave
	// back: a later end (after a retry) gives back only the rest.
	NodesReleased int `json:"nodesReleased,omitempty"`
	// RunningStatus is the cluster's status while the job runs; a retry puts
	// it back.
	RunningStatus domain.ClusterStatus `json:"runningStatus,omitempty"`
	// Aborted marks a job a user aborted: it ends ABORTED, not FAILED.
	Aborted bool `json:"aborted,omitempty"`
	// ListsApart: the effects' node lists and the rollback roots are in
	// list items, not here (joblists.go); RollbackApart: the roots there
	// are not empty.
	ListsApart    bool `json:"listsApart,omitempty"`
	RollbackApart bool `json:"rollbackApart,omitempty"`
	// StagedChunks, on a PENDING job, counts the items that hold its
	// staged step 2 (stage.go).
	StagedChunks int `json:"stagedChunks,omitempty"`
	// AwaitingPreStart, on a PENDING job, says its pre-start hooks were
	// asked (hooks.go): a worker starts or fails it when they answer.
	AwaitingPreStart bool `json:"awaitingPreStart,omitempty"`
	// Revision is the cluster revision the job records (revisions.go); 0
	// when it changes no definition.
	Revision int64 `json:"revision,omitempty"`
	// PreStartAskedAt is when the hooks were asked for this submission,
	// or asked again by a process whose in-process queue was lost with
	// its last run; the janitor's "not asked in time" counts from it.
	// PreStartSentAt is when the last message asking them was sent, and
	// PreStartSends counts the messages sent after a submission's first:
	// each has a deduplication id of its own (preStartDedup). Zero on
	// records of older releases: SubmittedAt, and no re-send yet.
	PreStartAskedAt time.Time `json:"preStartAskedAt,omitzero"`
	PreStartSentAt  time.Time `json:"preStartSentAt,omitzero"`
	PreStartSends   int       `json:"preStartSends,omitempty"`
	// Replan, on a PENDING job, says its step 2 is planned and written in
	// the background from its inputs (replan.go).
	Replan bool `json:"replan,omitempty"`
	// Withdrawn marks a job that ended before it started (its pre-start
	// hooks refused it, or its submission never finished): its end gave
	// back what step 1 took and its new nodes are DELETED, so a retry
	// takes them again (withdraw.go). Records of older releases lack it; a
	// FAILED job that never started is one all the same.
	Withdrawn bool `json:"withdrawn,omitempty"`
	// SubmittedAt is when the job last became PENDING (a retry of a
	// withdrawn job submits it again); the janitor's submission timeouts
	// count from it. Zero on records of older releases: CreatedAt.
	SubmittedAt time.Time `json:"submittedAt,omitzero"`
}

// withdrawn reports whether j ended before it started.
func (j *jobRecord) withdrawn() bool {
	return j.Withdrawn || (j.Status == domain.JobFailed && j.StartedAt.IsZero())
}

// stepTwoWritten reports whether a withdrawn job's step 2 is known to be
// all there, so that a retry can start it: a staged one is written again
// from its staged items, and one that reached its pre-start gate (vetoed,
// or never asked in time) had written step 2 first. One the janitor undid
// before its gate may lack tasks: started again, its sinks would never
// all end and it would hold the cluster and the quota until the janitor
// failed it.
func (j *jobRecord) stepTwoWritten() bool {
	return j.StagedChunks > 0 || j.AwaitingPreStart
}

// submittedAt is when the job's current submission began.
func (j *jobRecord) submittedAt() time.Time {
	if j.SubmittedAt.IsZero() {
		return j.CreatedAt
	}
	return j.SubmittedAt
}

// preStartAskedAt is when the current question to the pre-start hooks
// began.
func (j *jobRecord) preStartAskedAt() time.Time {
	if j.PreStartAskedAt.IsZero() {
		return j.submittedAt()
	}
	return j.PreStartAskedAt
}

// preStartSentAt is when the last message asking the pre-start hooks was
// sent.
func (j *jobRecord) preStartSentAt() time.Time {
	if j.PreStartSentAt.IsZero() {
		return j.preStartAskedAt()
	}
	return j.PreStartSentAt
}

const (
	counterSinks         = "sinks"
	counterRollbackSinks = "rollbackSinks"
	counterDone          = "done"
	counterRemaining     = "remaining" // on tasks: dependencies not yet succeeded
	// On jobs: nodes its delete tasks marked DELETED as they succeeded
	// (settle.go), whose quota the job's end gives back (finish.go).
	counterNodesDeleted = "nodesDeleted"
)

func decodeInto[T any](it store.Item, v *T) error {
	if err := json.Unmarshal(it.Data, v); err != nil {
		return fmt.Errorf("engine: unreadable item %s: %w", it.Key, err)
	}
	return nil
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("engine: cannot encode %T: %v", v, err)) // only our own types are encoded
	}
	return b
}

type loadedTask struct {
	item store.Item
	task domain.Task
}

func (e *Engine) loadTask(ctx context.Context, ref TaskRef) (loadedTask, error) {
	it, err := e.store.Get(ctx, taskKey(ref.Tenant, ref.Job, ref.Task))
	if err != nil {
		return loadedTask{}, err
	}
	if err := e.understands(it, "task "+ref.String()); err != nil {
		return loadedTask{}, err
	}
	var t domain.Task
	if err := decodeInto(it, &t); err != nil {
		return loadedTask{}, err
	}
	t.Version = it.Version
	t.Remaining = int(it.Counter(counterRemaining))
	return loadedTask{item: it, task: t}, nil
}

type loadedJob struct {
	item store.Item
	job  jobRecord
}

func (e *Engine) loadJob(ctx context.Context, tenant, cluster, job string) (loadedJob, error) {
	it, err := e.store.Get(ctx, jobKey(tenant, cluster, job))
	if err != nil {
		return loadedJob{}, err
	}
	if err := e.understands(it, "job "+job); err != nil {
		return loadedJob{}, err
	}
	j, err := e.jobs.decode(it)
	if err != nil {
		return loadedJob{}, err
	}
	return loadedJob{item: it, job: j}, nil
}

// jobCache holds the last decoded documents of the jobs this engine works
// on, by item key and a hash of the document. Every task's claim and
// completion reads its job, whose document names every node of a large
// create (its effects and rollback roots): decoding it each time made a
// 1,000-node create quadratic. A document changes rarely (a status change
// or a retry rewrites it; progress and sink counts are attributes), and a
// changed one hashes differently, so an entry is never stale. Entries are
// shared: callers must not change a decoded job's slices in place.
type jobCache struct {
	mu      sync.Mutex
	seed    maphash.Seed
	entries map[store.Key]cachedJob
}

type cachedJob struct {
	sum uint64
	job jobRecord
}

// maxCachedJobs bounds the cache; past it, it starts again empty.
const maxCachedJobs = 256

func (c *jobCache) decode(it store.Item) (jobRecord, error) {
	c.mu.Lock()
	if c.entries == nil {
		c.seed, c.entries = maphash.MakeSeed(), map[store.Key]cachedJob{}
	}
	seed := c.seed
	c.mu.Unlock()
	sum := maphash.Bytes(seed, it.Data)
	c.mu.Lock()
	cached, ok := c.entries[it.Key]
	c.mu.Unlock()
	var j jobRecord
	if ok && cached.sum == sum {
		j = cached.job
	} else {
		if err := decodeInto(it, &j); err != nil {
			return jobRecord{}, err
		}
		c.mu.Lock()
		if len(c.entries) >= maxCachedJobs {
			clear(c.entries)
		}
		c.entries[it.Key] = cachedJob{sum: sum, job: j}
		c.mu.Unlock()
	}
	return withAttributes(j, it), nil
}

// decodeJob reads a job item: its document, with the version, status and
// progress the item's attributes hold.
func decodeJob(it store.Item) (jobRecord, error) {
	var j jobRecord
	if err := decodeInto(it, &j); err != nil {
		return jobRecord{}, err
	}
	return withAttributes(j, it), nil
}

// withAttributes sets what the job item's attributes hold.
func withAttributes(j jobRecord, it store.Item) jobRecord {
	j.Version = it.Version
	j.Status = domain.JobStatus(it.Status)
	// Workers add progress to a counter after the fact, so the counter, not
	// the copy in the document, is the figure; a job that succeeded has done
	// every work task even if the last batch's count is still on its way.
	j.TaskDone = int(it.Counter(counterDone))
	if j.Status == domain.JobSucceeded {
		j.TaskDone = j.TaskTotal
	}
	return j
}

func (e *Engine) loadNode(ctx context.Context, tenant, cluster, node string) (*domain.Node, error) {
	it, err := e.store.Get(ctx, nodeKey(tenant, cluster, node))
	if err != nil {
		return nil, err
	}
	n, err := decodeNode(it)
	if err != nil {
		return nil, err
	}
	return &n, nil
}

// decodeNode reads a node item; its status is the item's.
func decodeNode(it store.Item) (domain.Node, error) {
	var n domain.Node
	if err := decodeInto(it, &n); err != nil {
		return domain.Node{}, err
	}
	n.Status = domain.NodeStatus(it.Status)
	return n, nil
}

func (e *Engine) loadCluster(ctx context.Context, tenant, cluster string) (store.Item, domain.Cluster, error) {
	it, err := e.store.Get(ctx, clusterKey(tenant, cluster))
	if err != nil {
		return store.Item{}, domain.Cluster{}, err
	}
	c, err := decodeCluster(it)
	if err != nil {
		return store.Item{}, domain.Cluster{}, err
	}
	return it, c, nil
}

// decodeCluster reads a cluster item, with its version.
func decodeCluster(it store.Item) (domain.Cluster, error) {
	var c domain.Cluster
	if err := decodeInto(it, &c); err != nil {
		return domain.Cluster{}, err
	}
	c.Version = it.Version
	return c, nil
}

// taskItem renders a task as a store item with its status and index entry.
// taskItem is a new task's item. Its remaining count lives in a counter, not
// in the document, so that dependencies completing at once each subtract
// one without conflicting (see succeed).
func taskItem(key store.Key, t domain.Task) store.Item {
	it := store.Item{Key: key, Status: string(t.Status), Data: mustJSON(t),
		Counters: map[string]int64{counterRemaining: int64(t.Remaining), counterFormat: FormatVersion}}
	it.Index = taskIndex(key, t)
	return it
}

// taskIndex is where a task sits in the janitor's index: running tasks by
// deadline, ready tasks by readiness; others nowhere.
func taskIndex(key store.Key, t domain.Task) *store.IndexKey {
	switch t.Status {
	case domain.TaskRunning:
		return &store.IndexKey{Partition: runningPartition(shardOf(key.PK + key.SK)), Sort: store.SortableTime(t.Deadline)}
	case domain.TaskReady:
		return &store.IndexKey{Partition: readyPartition(shardOf(key.PK + key.SK)), Sort: store.SortableTime(t.ReadyAt)}
	}
	return nil
}

// taskChanges turns a new task state into an update of its item.
func taskChanges(key store.Key, t domain.Task) store.Changes {
	status := string(t.Status)
	ch := store.Changes{Data: mustJSON(t), Status: &status}
	if idx := taskIndex(key, t); idx != nil {
		ch.Index = idx
	} else {
		ch.ClearIndex = true
	}
	return ch
}
