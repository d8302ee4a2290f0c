package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/store"
)

// Two kinds of task are written at submission as a few chunk items rather
// than one item each, because an item per task would cost a write that most
// jobs never need:
//
//   - the rollback plan (ROLLBACK#<job>): most jobs succeed and never run it.
//     Its tasks become items when the job fails, before it becomes
//     ROLLING_BACK (settleFailing); until then no rollback task exists, so
//     nothing can have run or changed one.
//   - forward tasks with at most one dependency (DEFERRED#<job>). A root
//     (no dependency) is READY from the start: the worker's claim creates
//     its item, conditional on its absence, so of two workers holding the
//     same message one wins as with any claim. A task with one dependency
//     is BLOCKED until the transaction that completes that dependency
//     creates its item, already READY, RUNNING (a continuation) or, for a
//     join, SUCCEEDED: the write that would otherwise have readied an
//     existing item. A task is what its item says, else what its
//     definition says.
//
// A root whose message is lost has no item in the janitor's index of ready
// tasks; the janitor finds it when the job can go no further without it
// (failIfStuck, then sendRoots), a resume or a retry sends it again, and so does a
// local server starting with an empty queue (ResendReady).
//
// Chunks never change once written, so an engine caches a job's deferred
// definitions.

// maxChunkBytes keeps a chunk well under DynamoDB's item size limit.
const maxChunkBytes = store.MaxItemBytes / 2

const (
	rollbackChunks = "ROLLBACK#"
	deferredChunks = "DEFERRED#"
)

func chunkPK(tenant, kind, job string) string { return store.TenantPK(tenant, kind+job) }

// taskChunks packs tasks into items of at most maxChunkBytes of JSON each (a
// task alone is always small enough).
func taskChunks(tenant, kind, job string, tasks []domain.Task) []store.Item {
	items, _ := packChunks(tenant, kind, job, tasks)
	return items
}

// placedTaskChunks is taskChunks that also records, in placed, the chunk
// of each task (1 + its number), for the job's task index.
func placedTaskChunks(tenant, kind, job string, tasks []domain.Task, placed map[string]int) []store.Item {
	items, at := packChunks(tenant, kind, job, tasks)
	for i, t := range tasks {
		placed[t.ID] = at[i] + 1
	}
	return items
}

// packChunks packs values into items of at most maxChunkBytes of JSON
// each, a JSON array per item, each counting the items of its set. It
// also returns the number of the chunk each value went to.
func packChunks[T any](tenant, kind, job string, values []T) ([]store.Item, []int) {
	var items []store.Item
	at := make([]int, len(values))
	// The array is joined by hand: each value is already JSON, and
	// encoding a []json.RawMessage would check and compact every one of
	// them again (a tenth of a 10,000-node submission's time).
	var chunk []byte
	flush := func() {
		if len(chunk) > 0 {
			key := store.Key{PK: chunkPK(tenant, kind, job), SK: fmt.Sprintf("%06d", len(items))}
			items = append(items, store.Item{Key: key, Data: append(chunk, ']')})
			chunk = nil
		}
	}
	for i, v := range values {
		b := mustJSON(v)
		if len(chunk)+len(b)+1 > maxChunkBytes {
			flush()
		}
		at[i] = len(items)
		if len(chunk) == 0 {
			chunk = append(make([]byte, 0, min(maxChunkBytes+1, 64<<10)), '[')
		} else {
			chunk = append(chunk, ',')
		}
		chunk = append(chunk, b...)
	}
	flush()
	// Each chunk knows how many there are, so a reader can tell a complete
	// set from one still being written (submission writes them in batches).
	for i := range items {
		items[i].Counters = map[string]int64{counterChunks: int64(len(items))}
	}
	return items, at
}

// counterChunks, on a chunk item, is the number of chunks of its kind.
const counterChunks = "of"

// readChunks returns the tasks held in a job's chunks of one kind, and
// whether it read them all (false while a submission is still writing them,
// or when the job has none).
func (e *Engine) readChunks(ctx context.Context, tenant, kind, job string) ([]domain.Task, bool, error) {
	var out []domain.Task
	read, of := 0, int64(-1)
	cursor := ""
	for {
		page, err := e.store.Query(ctx, chunkPK(tenant, kind, job), store.Query{Limit: store.MaxPageSize, Cursor: cursor})
		if err != nil {
			return nil, false, fmt.Errorf("reading the %s tasks of job %s: %w", kind, job, err)
		}
		for _, it := range page.Items {
			var tasks []domain.Task
			if err := decodeInto(it, &tasks); err != nil {
				return nil, false, err
			}
			out = append(out, tasks...)
			read++
			of = it.Counter(counterChunks)
		}
		if page.Next == "" {
			return out, read > 0 && int64(read) == of, nil
		}
		cursor = page.Next
	}
}

// materializeRollback writes the job's rollback tasks as task items, each
// only if it does not exist yet: a second caller (the janitor, a retried
// settle) skips what the first wrote, and never resets a task that has
// moved on since.
func (e *Engine) materializeRollback(ctx context.Context, tenant, jobID string) error {
	tasks, complete, err := e.readChunks(ctx, tenant, rollbackChunks, jobID)
	if err != nil {
		return err
	}
	if len(tasks) == 0 {
		// No chunks: a job without a rollback plan, or one submitted before
		// rollback plans were chunked, whose tasks have items already.
		return nil
	}
	if !complete {
		return fmt.Errorf("engine: the rollback plan of job %s is incomplete in the store", jobID)
	}
	// Batches are written in order: when the last task exists, all do (an
	// earlier settle wrote them), and a read spares a canceled transaction
	// and a failed put per task.
	if _, err := e.store.Get(ctx, taskKey(tenant, jobID, tasks[len(tasks)-1].ID)); err == nil {
		return nil
	} else if !errors.Is(err, store.ErrNotFound) {
		return err
	}
	for start := 0; start < len(tasks); start += store.MaxTransactItems {
		batch := tasks[start:min(start+store.MaxTransactItems, len(tasks))]
		ops := make([]store.Op, len(batch))
		for j, t := range batch {
			ops[j] = store.Put(taskItem(taskKey(tenant, jobID, t.ID), t), store.Condition{MustNotExist: true})
		}
		err := e.store.Transact(ctx, ops)
		if errors.Is(err, store.ErrConditionFailed) {
			// Some exist already (an earlier call was cut short): write the
			// others one by one.
			for _, op := range ops {
				if _, err := e.store.Write(ctx, op); err != nil && !errors.Is(err, store.ErrConditionFailed) {
					return fmt.Errorf("writing rollback task %s: %w", op.Key.SK, err)
				}
			}
			continue
		}
		if err != nil {
			return fmt.Errorf("writing rollback tasks of job %s: %w", jobID, err)
		}
	}
	return nil
}

// deferredCache holds jobs' deferred task definitions, which never change.
// It is bounded (a worker Lambda has 512 MB): past maxCachedTasks it starts
// again empty, which costs a query per job on the next miss and nothing
// else.
type deferredCache struct {
	mu    sync.Mutex
	jobs  map[string]map[string]domain.Task
	tasks int
	// loading holds the reads under way, one per job: the workers that
	// start on a new job at once wait for one read of its chunks instead of
	// each decoding all of them (64 workers on a 10,000-node create's
	// chunks once took 4 GB).
	loading map[string]*chunkRead
}

// chunkRead is one read of a job's deferred chunks; done closes when defs
// and err are set.
type chunkRead struct {
	done     chan struct{}
	defs     map[string]domain.Task
	complete bool
	err      error
}

// maxCachedTasks is about two 10,000-node creates' definitions (some tens
// of MB): a job larger than it is still cached, alone.
const maxCachedTasks = 100000

// deferredTasks returns the job's deferred task definitions by id.
func (e *Engine) deferredTasks(ctx context.Context, tenant, jobID string) (map[string]domain.Task, error) {
	key := tenant + "\x00" + jobID
	c := &e.deferred
	c.mu.Lock()
	defs, ok := c.jobs[key]
	if ok {
		c.mu.Unlock()
		return defs, nil
	}
	if r, ok := c.loading[key]; ok {
		c.mu.Unlock()
		select {
		case <-r.done:
			return r.defs, r.err
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if c.loading == nil {
		c.loading = map[string]*chunkRead{}
	}
	r := &chunkRead{done: make(chan struct{})}
	c.loading[key] = r
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.loading, key)
		c.mu.Unlock()
		close(r.done)
	}()

	tasks, complete, err := e.readChunks(ctx, tenant, deferredChunks, jobID)
	if err != nil {
		r.err = err
		return nil, err
	}
	defs = make(map[string]domain.Task, len(tasks))
	for _, t := range tasks {
		defs[t.ID] = t
	}
	r.defs = defs
	if complete {
		// Only a complete set: the chunks of a job still being submitted
		// may not all be written yet.
		c.mu.Lock()
		if c.jobs == nil || c.tasks+len(defs) > maxCachedTasks {
			c.jobs, c.tasks = map[string]map[string]domain.Task{}, 0
		}
		if _, ok := c.jobs[key]; !ok {
			c.jobs[key] = defs
			c.tasks += len(defs)
		}
		c.mu.Unlock()
	}
	return defs, nil
}

// loadTaskOrDeferred reads a task: its item, or, for a deferred task with no
// item yet, its definition with an item that has only its key (version 0:
// the claim or the completion that readies it creates the item).
func (e *Engine) loadTaskOrDeferred(ctx context.Context, ref TaskRef) (loadedTask, error) {
	lt, err := e.loadTask(ctx, ref)
	if !errors.Is(err, store.ErrNotFound) {
		return lt, err
	}
	defs, derr := e.deferredTasks(ctx, ref.Tenant, ref.Job)
	if derr != nil {
		return loadedTask{}, derr
	}
	t, ok := defs[ref.Task]
	if !ok {
		return loadedTask{}, err
	}
	return loadedTask{item: store.Item{Key: taskKey(ref.Tenant, ref.Job, ref.Task)}, task: t}, nil
}

// unclaimedRoots returns the job's deferred roots that have no item: READY
// tasks that no worker has claimed. seen holds the ids of the job's task
// items (a full walk's).
func (e *Engine) unclaimedRoots(ctx context.Context, tenant, jobID string, seen func(id string) bool) ([]domain.Task, error) {
	defs, err := e.deferredTasks(ctx, tenant, jobID)
	if err != nil {
		return nil, err
	}
	var out []domain.Task
	for id, t := range defs {
		if len(t.DependsOn) == 0 && !seen(id) {
			out = append(out, t)
		}
	}
	return out, nil
}

// sendUnclaimedRoots sends the job's unclaimed roots again (see sendRoots)
// and returns how many it sent; seen is as for unclaimedRoots.
func (e *Engine) sendUnclaimedRoots(ctx context.Context, tenant, jobID string, seen func(id string) bool) (int, error) {
	roots, err := e.unclaimedRoots(ctx, tenant, jobID, seen)
	if err != nil || len(roots) == 0 {
		return 0, err
	}
	return e.sendRoots(ctx, tenant, jobID, roots)
}

// sendRoots gives unclaimed roots an item, READY and counted as sent once
// more (so the queue's deduplication does not drop the message), and sends
// them. A root claimed meanwhile keeps its item: the write is conditional
// on there being none.
func (e *Engine) sendRoots(ctx context.Context, tenant, jobID string, roots []domain.Task) (int, error) {
	var ready []domain.Task
	for _, t := range roots {
		t.NoteSend(domain.SendRoot)
		t.ReadyAt = maxTime(t.ReadyAt, e.now())
		_, err := e.store.Write(ctx, store.Put(taskItem(taskKey(tenant, jobID, t.ID), t), store.Condition{MustNotExist: true}))
		if errors.Is(err, store.ErrConditionFailed) {
			continue
		}
		if err != nil {
			return len(ready), fmt.Errorf("sending root %s again: %w", t.ID, err)
		}
		ready = append(ready, t)
	}
	return len(ready), e.send(ctx, tenant, ready)
}
