package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/store"
)

// A large submission's step 2 (a 10,000-node create: some 200
// transactions) does not fit in a request that must answer quickly, and on
// AWS the API Lambda cannot go on after it answers. So when step 2 would
// take more than inlineBatches transactions, Submit stages it:
//
//  1. step 1 writes the job PENDING with StagedChunks, the number of
//     staged items (SUBMIT#<job>) that hold step 2's ops;
//  2. the request writes those few large items (a handful of
//     transactions) and answers with the job PENDING;
//  3. ContinueSubmission reads them and writes step 2, each batch with a
//     check that the job is still PENDING, then starts the job (step 3).
//
// ContinueSubmission runs at once in the background of the process that
// submitted (the local server; a Lambda may freeze it, which does no
// harm), and the janitor runs it for every staged PENDING job it passes
// (every minute on AWS), so a crash or a frozen Lambda delays the job by a
// janitor period. Writers may overlap: step 2's ops are puts and updates
// that write the same thing each time, and none lands once the job has
// left PENDING, so a slow writer cannot overwrite a task that runs. A job
// whose staging never finished (the request died while writing it) is
// undone after SubmitTimeout as before; a staged one after
// stagedSubmitTimeout.

// defaultInlineBatches is the most step-2 transactions a request writes
// itself: about a 1,500-node create.
const defaultInlineBatches = 50

// stagedSubmitTimeout is how long a fully staged job may stay PENDING (its
// writers keep failing) before the janitor undoes it.
const stagedSubmitTimeout = 30 * time.Minute

const stageKind = "SUBMIT#"

// stageItems packs ops into items of at most maxChunkBytes of JSON each.
func stageItems(tenant, job string, ops []store.Op) []store.Item {
	items, _ := packChunks(tenant, stageKind, job, ops)
	return items
}

func putAll(items []store.Item) []store.Op {
	ops := make([]store.Op, len(items))
	for i, it := range items {
		ops[i] = store.Put(it, store.Condition{})
	}
	return ops
}

// ContinueSubmission writes a staged job's step 2 and starts it. It does
// nothing to a job that is not PENDING or not staged, and returns
// errStagingIncomplete while its staged items are not all there.
func (e *Engine) ContinueSubmission(ctx context.Context, tenant, cluster, jobID string) error {
	lj, err := e.loadJob(ctx, tenant, cluster, jobID)
	if err != nil {
		return err
	}
	job := lj.job
	if job.Status != domain.JobPending || job.StagedChunks == 0 || job.AwaitingPreStart {
		return nil
	}
	if job.Replan {
		return e.continueReplanned(ctx, tenant, cluster, lj)
	}
	var ops []store.Op
	read := 0
	cursor := ""
	for {
		page, err := e.store.Query(ctx, chunkPK(tenant, stageKind, jobID), store.Query{Limit: store.MaxPageSize, Cursor: cursor})
		if err != nil {
			return fmt.Errorf("reading the staged ops of job %s: %w", jobID, err)
		}
		for _, it := range page.Items {
			var chunk []store.Op
			if err := decodeInto(it, &chunk); err != nil {
				return err
			}
			ops = append(ops, chunk...)
			read++
		}
		if page.Next == "" {
			break
		}
		cursor = page.Next
	}
	if read != job.StagedChunks {
		return fmt.Errorf("%w: job %s has %d of %d", errStagingIncomplete, jobID, read, job.StagedChunks)
	}
	// Each batch holds one op fewer than a transaction may, for the check
	// that the job is still PENDING.
	pending := store.Check(lj.item.Key, store.Condition{StatusIn: []string{string(domain.JobPending)}})
	var batches [][]store.Op
	for _, b := range transactBatchesOf(ops, store.MaxTransactItems-1, store.MaxTransactBytes-store.TransactSize([]store.Op{pending})) {
		batches = append(batches, append(b[:len(b):len(b)], pending)) // a copy: b shares ops' array with the next batch
	}
	if err := e.transactAll(ctx, batches); err != nil {
		if errors.Is(err, store.ErrConditionFailed) {
			return nil // the job left PENDING: another writer started it, or the janitor undid it
		}
		return fmt.Errorf("writing the staged ops of job %s: %w", jobID, err)
	}
	defs, err := e.deferredTasks(ctx, tenant, jobID)
	if err != nil {
		return err
	}
	var ready []domain.Task
	for _, t := range defs {
		if t.Status == domain.TaskReady {
			ready = append(ready, t)
		}
	}
	err = e.start(ctx, tenant, cluster, &job, ready, nil)
	if errors.Is(err, ErrSubmitAborted) {
		return nil
	}
	return err
}

var errStagingIncomplete = errors.New("engine: the staged submission is not all written")
