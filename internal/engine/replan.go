package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/store"
)

// A submission planned later: staging step 2 (stage.go) still makes the
// request build every task and write the staged ops, some 47 MB in a
// 10,000-node create, which took about a second. A submission that sets
// Replan instead writes, in step 1, only the job PENDING and one small item
// holding Replan (the planning's inputs, SUBMIT#<job> / 000000), and
// answers. ContinueSubmission, in the background and in every janitor pass,
// asks the Replanner for the whole submission (the cluster service solves
// and plans again from the cluster and spec the request stored, which do
// not change while the job holds the cluster), writes step 2 and starts
// the job with its sink counts. The job is staged (StagedChunks 1) as far
// as older code is concerned: it reads the inputs item as a chunk of ops,
// fails to decode it and leaves the job alone (invariant 13), and undoes
// it only after stagedSubmitTimeout, as it would any staged job.

// Replanner rebuilds the whole submission of a PENDING job from the inputs
// it was submitted with.
type Replanner func(ctx context.Context, tenant string, job domain.Job, inputs []byte) (Submission, error)

// SetReplanner registers the replanner. The assembly calls it once, before
// any submission or janitor pass.
func (e *Engine) SetReplanner(r Replanner) { e.replanner = r }

// replanInputs is the item that holds a replanned job's inputs.
type replanInputs struct {
	Replan json.RawMessage `json:"replan"`
}

func replanKey(tenant, job string) store.Key {
	return store.Key{PK: chunkPK(tenant, stageKind, job), SK: fmt.Sprintf("%06d", 0)}
}

// submitForReplan is Submit's step 1 for a submission planned later.
func (e *Engine) submitForReplan(ctx context.Context, sub Submission, job jobRecord) (domain.Job, error) {
	if e.replanner == nil {
		return domain.Job{}, errors.New("engine: a submission to plan later needs a replanner (SetReplanner)")
	}
	job.Replan, job.StagedChunks = true, 1
	inputs := store.Put(store.Item{Key: replanKey(sub.Tenant, job.ID), Data: mustJSON(replanInputs{Replan: sub.Replan}),
		Counters: map[string]int64{counterChunks: 1}}, store.Condition{MustNotExist: true})
	cluster, err := e.stepOne(ctx, sub, &job, nil, []store.Op{inputs})
	if err != nil {
		return domain.Job{}, err
	}
	e.continueInBackground(ctx, sub.Tenant, cluster.ID, job.ID)
	return job.Job, nil
}

// continueReplanned is ContinueSubmission for a replanned job: plan, write
// step 2 under the check that the job is still PENDING, start.
func (e *Engine) continueReplanned(ctx context.Context, tenant, cluster string, lj loadedJob) error {
	if e.replanner == nil {
		return errors.New("engine: job " + lj.job.ID + " is to be planned here, and this engine has no replanner")
	}
	job := lj.job
	it, err := e.store.Get(ctx, replanKey(tenant, job.ID))
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("%w: job %s has no inputs", errStagingIncomplete, job.ID)
	}
	if err != nil {
		return fmt.Errorf("reading the inputs of job %s: %w", job.ID, err)
	}
	var in replanInputs
	if err := decodeInto(it, &in); err != nil {
		return err
	}
	sub, err := e.replanner(ctx, tenant, job.Job, in.Replan)
	if err != nil {
		return fmt.Errorf("planning job %s: %w", job.ID, err)
	}
	sub.Tenant = tenant
	if len(sub.NewNodes) != job.AddedNodeCount {
		// Solving again gave another layout than the request's: never
		// write a cluster other than the one the quota and the answer
		// counted. The janitor undoes the job after stagedSubmitTimeout.
		return fmt.Errorf("planning job %s again gave %d new nodes where the request planned %d", job.ID, len(sub.NewNodes), job.AddedNodeCount)
	}
	job.OnSuccess, job.OnFailure, job.OnRollback = sub.OnSuccess, sub.OnFailure, sub.OnRollback
	planned := job.TaskTotal
	job.TaskTotal = 0 // stepTwo counts them
	ops, ready, sinks, rbSinks, total := e.stepTwo(sub, &job, job.CreatedAt)
	if planned != 0 && job.TaskTotal != planned {
		return fmt.Errorf("planning job %s again gave %d tasks where the request planned %d", job.ID, job.TaskTotal, planned)
	}
	if err := e.recordUndo(ctx, tenant, cluster, job.ID, sub); err != nil {
		if errors.Is(err, errJobMoved) {
			return nil // the job left PENDING: another writer started it, or the janitor undid it
		}
		return fmt.Errorf("recording the node changes of job %s: %w", job.ID, err)
	}
	pending := store.Check(lj.item.Key, store.Condition{StatusIn: []string{string(domain.JobPending)}})
	var batches [][]store.Op
	for _, b := range transactBatchesOf(ops, store.MaxTransactItems-1, store.MaxTransactBytes-store.TransactSize([]store.Op{pending})) {
		batches = append(batches, append(b[:len(b):len(b)], pending))
	}
	if err := e.transactAll(ctx, batches); err != nil {
		if errors.Is(err, store.ErrConditionFailed) {
			return nil // the job left PENDING: another writer started it, or the janitor undid it
		}
		return fmt.Errorf("writing the planned nodes and tasks of job %s: %w", job.ID, err)
	}
	err = e.start(ctx, tenant, cluster, &job, ready, map[string]int64{counterSinks: int64(sinks), counterRollbackSinks: int64(rbSinks)})
	if errors.Is(err, ErrSubmitAborted) {
		return nil
	}
	if err != nil {
		return err
	}
	if total == 0 {
		return e.checkJobEnd(ctx, tenant, cluster, job.ID)
	}
	return nil
}
