package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/store"
	"github.com/heddle-io/heddle/planner"
)

// A big job's task index (TASKIDX#<job>) lets a view page through its
// tasks in key order without reading them all: a 10,000-node create's
// 40,000 tasks cost some 380 ms to read and sort per page on the embedded
// store, and far more on DynamoDB.
//
// The index is written once, with the job's other step-2 items, and never
// changes: it holds what never changes about each task (id, node, service,
// action, stage, and the chunk that defines a task written without an
// item), in key order ("0"+id for the forward plan, "1"+id for the
// rollback plan), packed into items of at most taskIndexEntries entries,
// each keyed by its last entry's key. A reader finds the entries after any
// key with one query, filters them by what they hold, and reads the
// matching tasks' status fresh: the task items of the range in one query,
// and the definitions of tasks with no item yet from their chunk (which
// step 2 writes sorted by id, so a page touches one or two). A task's
// status changes therefore write nothing to the index: the engine's writes
// per task stay as they were; a job writes one index item more per
// taskIndexEntries tasks at submission, from defaultTaskIndexMin work
// tasks on.

// taskIndexEntries bounds an index item: ~100 bytes an entry keeps it near
// 25 KB, far under DynamoDB's 400 KB: a page of 100 tasks reads one or two
// (a DynamoDB read of an item costs by the KB), and decodes them in well
// under a millisecond.
const taskIndexEntries = 250

// defaultTaskIndexMin is the job size (work tasks) from which Submit
// writes a task index: smaller jobs are read whole, cheaply, by views.
const defaultTaskIndexMin = 1000

// TaskEntry is what the index holds of a task.
type TaskEntry struct {
	ID      string        `json:"i"`
	Node    string        `json:"n,omitempty"`
	Service string        `json:"s,omitempty"`
	Action  domain.Action `json:"a,omitempty"`
	// Stage is the task's stage in the job's stage view (from 1); 0 for
	// joins and rollback tasks.
	Stage int `json:"g,omitempty"`
	// Chunk is 1 + the number of the chunk that defines a task written
	// without an item (DEFERRED# for the forward plan, ROLLBACK# for the
	// rollback plan); 0 for a task that had an item from the start.
	Chunk    int  `json:"c,omitempty"`
	Rollback bool `json:"-"`
}

// Key is the entry's place in the index, which is its order: the forward
// plan by id, then the rollback plan by id.
func (t TaskEntry) Key() string { return IndexKeyOf(t.Rollback, t.ID) }

// IndexKeyOf is the index key of a task.
func IndexKeyOf(rollback bool, id string) string {
	if rollback {
		return "1" + id
	}
	return "0" + id
}

func taskIndexPK(tenant, job string) string { return store.TenantPK(tenant, "TASKIDX#"+job) }

// taskIndexItems builds a job's index from its tasks and where step 2
// puts each (placed: the 1-based chunk of a chunked task).
func taskIndexItems(tenant, job string, plan *planner.Plan, tasks []domain.Task, placed map[string]int) []store.Item {
	stage := map[string]int{}
	if plan != nil {
		if stages, err := plan.Stages(); err == nil {
			for i, st := range stages {
				for _, id := range st {
					stage[id] = i + 1
				}
			}
		}
	}
	entries := make([]TaskEntry, len(tasks))
	for i, t := range tasks {
		entries[i] = TaskEntry{ID: t.ID, Node: t.NodeID, Service: t.Service, Action: t.Action, Chunk: placed[t.ID], Rollback: t.Rollback}
		if !t.Rollback {
			entries[i].Stage = stage[t.ID]
		}
	}
	slices.SortFunc(entries, func(a, b TaskEntry) int { return strings.Compare(a.Key(), b.Key()) })
	var items []store.Item
	for start := 0; start < len(entries); {
		end := min(start+taskIndexEntries, len(entries))
		// An item holds one plan's entries only, so its key (its last
		// entry's) says which plan every entry of it belongs to.
		if i := slices.IndexFunc(entries[start:end], func(e TaskEntry) bool { return e.Rollback != entries[start].Rollback }); i > 0 {
			end = start + i
		}
		items = append(items, store.Item{Key: store.Key{PK: taskIndexPK(tenant, job), SK: entries[end-1].Key()}, Data: mustJSON(entries[start:end])})
		start = end
	}
	return items
}

// ErrNoTaskIndex: the job has no task index (it is small, or was submitted
// before jobs had one); read its tasks whole.
var ErrNoTaskIndex = errors.New("engine: the job has no task index")

// TaskIndex returns index entries of a job whose key is greater than after
// and at most until ("" for no bound), in key order, that keep says to
// keep, until it has limit of them or has looked at scan entries; more
// reports whether entries within the bound may remain past the last one
// looked at, whose key is last; looked is how many it looked at. It
// returns ErrNoTaskIndex for a job without an index.
func (e *Engine) TaskIndex(ctx context.Context, tenant, jobID, after, until string, limit, scan int, keep func(TaskEntry) bool) (out []TaskEntry, last string, looked int, more bool, err error) {
	pk := taskIndexPK(tenant, jobID)
	q := store.Query{After: after, Limit: 1}
	for {
		page, err := e.store.Query(ctx, pk, q)
		if err != nil {
			return nil, "", 0, false, fmt.Errorf("reading the task index of job %s: %w", jobID, err)
		}
		if len(page.Items) == 0 {
			if last == "" && after != "" {
				// Past the end, or no index at all: tell which.
				probe, err := e.store.Query(ctx, pk, store.Query{Limit: 1, Descending: true})
				if err != nil {
					return nil, "", 0, false, fmt.Errorf("reading the task index of job %s: %w", jobID, err)
				}
				if len(probe.Items) > 0 {
					return nil, "", 0, false, nil
				}
			}
			if last == "" {
				return nil, "", 0, false, fmt.Errorf("%w: job %s", ErrNoTaskIndex, jobID)
			}
			return out, last, looked, false, nil
		}
		for n, it := range page.Items {
			var entries []TaskEntry
			if err := decodeInto(it, &entries); err != nil {
				return nil, "", 0, false, err
			}
			rollback := strings.HasPrefix(it.Key.SK, "1")
			lastItem := n == len(page.Items)-1
			for i, en := range entries {
				en.Rollback = rollback
				k := en.Key()
				if k <= after {
					continue
				}
				if until != "" && k > until {
					return out, last, looked, false, nil
				}
				if looked == scan || len(out) == limit {
					return out, last, looked, true, nil
				}
				looked++
				last = k
				if keep(en) {
					out = append(out, en)
				}
				if lastItem && i == len(entries)-1 && (looked == scan || len(out) == limit) {
					// Done with this item: spare reading the next one.
					return out, last, looked, page.Next != "", nil
				}
			}
		}
		if page.Next == "" {
			return out, last, looked, false, nil
		}
		// Past the first item, a filter that keeps few entries reads on:
		// a few items a round trip, as many as the scan may still need.
		q = store.Query{Cursor: page.Next, Limit: max(1, min(4, (scan-looked)/taskIndexEntries))}
	}
}

// TasksOf returns the tasks of entries, in the order given, as they are
// now: from their items, or from their definitions while they have none.
// A task that is in neither is left out.
func (e *Engine) TasksOf(ctx context.Context, tenant, jobID string, entries []TaskEntry) ([]domain.Task, error) {
	items := map[string]store.Item{}
	var fwd, rb []TaskEntry
	for _, en := range entries {
		if en.Rollback {
			rb = append(rb, en)
		} else {
			fwd = append(fwd, en)
		}
	}
	for _, group := range [][]TaskEntry{fwd, rb} {
		if err := e.taskItemsOf(ctx, tenant, jobID, group, items); err != nil {
			return nil, err
		}
	}
	out := make([]domain.Task, 0, len(entries))
	for _, en := range entries {
		it, ok := items[en.ID]
		if ok {
			var t domain.Task
			if err := decodeInto(it, &t); err != nil {
				return nil, err
			}
			t.Version = it.Version
			t.Status = domain.TaskStatus(it.Status)
			t.Remaining = int(it.Counter(counterRemaining))
			out = append(out, t)
			continue
		}
		if en.Chunk == 0 {
			continue
		}
		t, ok, err := e.chunkTask(ctx, tenant, jobID, en)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, t)
		}
	}
	return out, nil
}

// taskItemsOf reads the items of entries (one plan's, in id order) into
// items: with one range query when they are close together in the
// partition, else one read each.
func (e *Engine) taskItemsOf(ctx context.Context, tenant, jobID string, entries []TaskEntry, items map[string]store.Item) error {
	if len(entries) == 0 {
		return nil
	}
	entries = slices.Clone(entries)
	slices.SortFunc(entries, func(a, b TaskEntry) int { return strings.Compare(a.ID, b.ID) })
	first, last := entries[0].ID, entries[len(entries)-1].ID
	if before, ok := justBefore(first); ok {
		// The range may hold items of tasks that are no entry of ours
		// (skipped by a filter, or the other plan's): read it while it
		// stays within a few times the entries asked for.
		budget := 4*len(entries) + 16
		// Most often the range holds at most one item per entry.
		q := store.Query{After: before, Limit: min(len(entries)+1, store.MaxPageSize)}
		for {
			page, err := e.store.Query(ctx, store.TenantPK(tenant, "TASKS#"+jobID), q)
			if err != nil {
				return fmt.Errorf("reading tasks of job %s: %w", jobID, err)
			}
			done := page.Next == ""
			for _, it := range page.Items {
				if it.Key.SK > last {
					done = true
					break
				}
				items[it.Key.SK] = it
			}
			budget -= len(page.Items)
			if done {
				return nil
			}
			if budget <= 0 {
				break // sparse: read the others one by one
			}
			q = store.Query{Cursor: page.Next, Limit: min(budget, store.MaxPageSize)}
		}
	}
	var (
		mu       sync.Mutex
		wg       sync.WaitGroup
		firstErr error
		slots    = make(chan struct{}, 16)
	)
	for _, en := range entries {
		if _, ok := items[en.ID]; ok {
			continue
		}
		slots <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-slots; wg.Done() }()
			it, err := e.store.Get(ctx, taskKey(tenant, jobID, en.ID))
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				items[en.ID] = it
			case !errors.Is(err, store.ErrNotFound) && firstErr == nil:
				firstErr = fmt.Errorf("reading task %s of job %s: %w", en.ID, jobID, err)
			}
		}()
	}
	wg.Wait()
	return firstErr
}

// justBefore returns a key that sorts right before id and after every
// key less than id (for a query that starts after it), when id ends in a
// printable ASCII character (heddle's task ids all do).
func justBefore(id string) (string, bool) {
	if id == "" {
		return "", false
	}
	c := id[len(id)-1]
	if c <= ' ' || c >= 0x7f {
		return "", false
	}
	// U+10FFFF sorts after every character a task id holds.
	return id[:len(id)-1] + string(c-1) + "\U0010FFFF", true
}

// chunkTask returns the definition of a task with no item from its chunk.
func (e *Engine) chunkTask(ctx context.Context, tenant, jobID string, en TaskEntry) (domain.Task, bool, error) {
	if en.Chunk == 0 {
		return domain.Task{}, false, nil
	}
	kind := deferredChunks
	if en.Rollback {
		kind = rollbackChunks
	}
	defs, err := e.chunks.get(ctx, e.store, tenant, kind, jobID, en.Chunk-1)
	if err != nil {
		return domain.Task{}, false, err
	}
	t, ok := defs[en.ID]
	return t, ok, nil
}

// chunkCache keeps recently read chunks (which never change) decoded, so
// the pages of a job that one reader follows decode each chunk once.
type chunkCache struct {
	mu    sync.Mutex
	order []string
	byKey map[string]map[string]domain.Task
}

// maxCachedChunks is some 200 chunks' definitions: a few tens of MB at most.
const maxCachedChunks = 200

func (c *chunkCache) get(ctx context.Context, s store.Store, tenant, kind, jobID string, n int) (map[string]domain.Task, error) {
	key := store.Key{PK: chunkPK(tenant, kind, jobID), SK: fmt.Sprintf("%06d", n)}
	name := key.String()
	c.mu.Lock()
	defs, ok := c.byKey[name]
	c.mu.Unlock()
	if ok {
		return defs, nil
	}
	it, err := s.Get(ctx, key)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil // still being written: the task is not there yet
	}
	if err != nil {
		return nil, fmt.Errorf("reading chunk %s: %w", name, err)
	}
	var tasks []domain.Task
	if err := json.Unmarshal(it.Data, &tasks); err != nil {
		return nil, fmt.Errorf("engine: unreadable chunk %s: %w", name, err)
	}
	defs = make(map[string]domain.Task, len(tasks))
	for _, t := range tasks {
		defs[t.ID] = t
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byKey == nil {
		c.byKey = map[string]map[string]domain.Task{}
	}
	if _, ok := c.byKey[name]; !ok {
		if len(c.order) == maxCachedChunks {
			delete(c.byKey, c.order[0])
			c.order = c.order[1:]
		}
		c.order = append(c.order, name)
		c.byKey[name] = defs
	}
	return defs, nil
}

// Task returns one task of a job as it is now, reading only it: its item,
// or its definition while it has none.
func (e *Engine) Task(ctx context.Context, tenant, jobID, taskID string) (domain.Task, error) {
	ref := TaskRef{Tenant: tenant, Job: jobID, Task: taskID}
	lt, err := e.loadTask(ctx, ref)
	if err == nil {
		lt.task.Status = domain.TaskStatus(lt.item.Status)
		return lt.task, nil
	}
	if !errors.Is(err, store.ErrNotFound) {
		return domain.Task{}, err
	}
	notThere := fmt.Errorf("%w: task %s of job %s", ErrNotFound, taskID, jobID)
	rollback := strings.HasPrefix(taskID, planner.RollbackPrefix)
	// The index says which chunk defines the task: one small read, where
	// the job's chunks are many.
	if before, ok := justBefore(taskID); ok {
		found, _, _, _, err := e.TaskIndex(ctx, tenant, jobID, IndexKeyOf(rollback, before), "", 1, 1, func(en TaskEntry) bool { return en.ID == taskID })
		switch {
		case err == nil && len(found) == 0:
			return domain.Task{}, notThere
		case err == nil:
			t, ok, err := e.chunkTask(ctx, tenant, jobID, found[0])
			if err != nil {
				return domain.Task{}, err
			}
			if !ok {
				return domain.Task{}, notThere
			}
			return t, nil
		case !errors.Is(err, ErrNoTaskIndex):
			return domain.Task{}, err
		}
	}
	var defs map[string]domain.Task
	if rollback {
		// Not materialized: the job has not failed; its definition says
		// what it is.
		tasks, _, err := e.readChunks(ctx, tenant, rollbackChunks, jobID)
		if err != nil {
			return domain.Task{}, err
		}
		defs = map[string]domain.Task{}
		for _, t := range tasks {
			defs[t.ID] = t
		}
	} else {
		defs, err = e.deferredTasks(ctx, tenant, jobID)
		if err != nil {
			return domain.Task{}, err
		}
	}
	t, ok := defs[taskID]
	if !ok {
		return domain.Task{}, notThere
	}
	return t, nil
}
