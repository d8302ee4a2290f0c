package engine

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/queue"
	"github.com/heddle-io/heddle/internal/store"
	"github.com/heddle-io/heddle/planner"
)

// taskItems returns the job's task items by id, as stored.
func taskItems(t *testing.T, b *testBundle, jobID string) map[string]domain.Task {
	t.Helper()
	out := map[string]domain.Task{}
	require.NoError(t, b.eng.eachTask(b.ctx, tenant, jobID, func(it store.Item, task domain.Task) (bool, error) {
		task.Status = domain.TaskStatus(it.Status)
		out[task.ID] = task
		return true, nil
	}))
	return out
}

// drainQueue takes what is in the tenant's queue out of it, as a lost send
// would, and returns how many messages there were.
func drainQueue(t *testing.T, b *testBundle) int {
	t.Helper()
	n := 0
	for {
		ds, err := b.q.Receive(b.ctx, tenant, queue.MaxBatch, 100*time.Millisecond, time.Minute)
		require.NoError(t, err)
		if len(ds) == 0 {
			return n
		}
		for _, d := range ds {
			require.NoError(t, b.q.Ack(b.ctx, tenant, d.Receipt))
		}
		n += len(ds)
	}
}

// thousandNodeTasks returns the stored tasks of a 1,000-node create, job j1:
// enough definitions for several chunks.
func thousandNodeTasks(t *testing.T) []domain.Task {
	t.Helper()
	plan, err := planner.Build(planner.Request{Operation: domain.OpCreate, New: layout("c1", 1000), Services: services()})
	require.NoError(t, err)
	tasks, _, _, _ := buildTasks(Submission{Tenant: tenant, Cluster: domain.Cluster{ID: "c1"}, Plan: plan}, "j1", time.Now())
	return tasks
}

func TestTasksWithoutAnItemYetAreListedFromTheirDefinitions(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, Config{ResendAfter: time.Hour})
	sub := createSubmission(t, "c1", 4, nil)
	job, err := b.eng.Submit(b.ctx, sub)
	require.NoError(t, err)

	// Only tasks with two dependencies or more have an item before anything
	// ran: the others are created by the write that readies or claims them.
	items := taskItems(t, b, job.ID)
	for _, pt := range sub.Plan.Tasks {
		_, has := items[pt.ID]
		require.Equal(t, len(pt.DependsOn) > 1, has, "task %s with %d dependencies", pt.ID, len(pt.DependsOn))
	}
	for _, task := range items {
		require.False(t, task.Rollback, "no rollback task item before a failure")
	}

	// The job's view still shows both plans whole.
	view, err := b.eng.Tasks(b.ctx, tenant, job.ID)
	require.NoError(t, err)
	require.Len(t, view, len(sub.Plan.Tasks)+len(sub.Plan.Rollback.Tasks))
	rollback := 0
	for _, task := range view {
		want := domain.TaskBlocked
		if len(task.DependsOn) == 0 && !task.Rollback {
			want = domain.TaskReady
		}
		require.Equal(t, want, task.Status, task.ID)
		if task.Rollback {
			rollback++
		}
	}
	require.Equal(t, len(sub.Plan.Rollback.Tasks), rollback)

	stop := b.run(t, 4, 50*time.Millisecond)
	final := b.waitJob(t, "c1", job.ID, 30*time.Second)
	stop()
	require.Equal(t, domain.JobSucceeded, final.Status, "%s%s", final.StatusMessage, b.failures(t, final.ID))
	items = taskItems(t, b, job.ID)
	require.Len(t, items, len(sub.Plan.Tasks), "every forward task has an item once it ran, and no rollback task has one")
	checkInvariants(t, b)
}

func TestLostRootMessagesAreResentByTheJanitor(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T) {
		// The engine's clock runs ahead when the test says so: ResendAfter
		// passes without waiting for it.
		var ahead atomic.Int64
		clock := func() time.Time { return time.Now().Add(time.Duration(ahead.Load())) }
		b := setup(t, nil, Config{ResendAfter: time.Minute, Clock: clock})
		job, err := b.eng.Submit(b.ctx, createSubmission(t, "c1", 3, nil))
		require.NoError(t, err)
		require.Equal(t, 3, drainQueue(t, b), "each node's create was sent")

		// Before ResendAfter the janitor neither resends the roots nor takes
		// a job whose roots nobody claimed yet for stuck.
		r, err := b.eng.RunJanitor(b.ctx)
		require.NoError(t, err)
		require.Zero(t, r.Resent)
		require.Zero(t, r.Stuck)
		lj, err := b.eng.loadJob(b.ctx, tenant, "c1", job.ID)
		require.NoError(t, err)
		require.Equal(t, domain.JobRunning, lj.job.Status)

		ahead.Store(int64(2 * time.Minute))
		r, err = b.eng.RunJanitor(b.ctx)
		require.NoError(t, err)
		require.Equal(t, 3, r.Resent, "the three roots, sent again")
		require.Zero(t, r.Stuck)
		for _, task := range taskItems(t, b, job.ID) {
			if len(task.DependsOn) == 0 {
				require.Equal(t, domain.TaskReady, task.Status)
				require.Equal(t, 1, task.Sends, "a fresh deduplication id")
			}
		}

		stop := b.run(t, 3, 50*time.Millisecond)
		final := b.waitJob(t, "c1", job.ID, 60*time.Second)
		stop()
		require.Equal(t, domain.JobSucceeded, final.Status, "%s%s", final.StatusMessage, b.failures(t, final.ID))
		checkInvariants(t, b)
	})
}

func TestRollbackTasksAreWrittenOnceAndNeverReset(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, Config{})
	sub := createSubmission(t, "c1", 3, nil)
	job, err := b.eng.Submit(b.ctx, sub)
	require.NoError(t, err)

	require.NoError(t, b.eng.materializeRollback(b.ctx, tenant, job.ID))
	items := taskItems(t, b, job.ID)
	var rollback []string
	for id, task := range items {
		if task.Rollback {
			rollback = append(rollback, id)
		}
	}
	require.Len(t, rollback, len(sub.Plan.Rollback.Tasks))

	// A rollback task that moved on (its root released) stays as it is when
	// a second caller writes the plan again.
	root := job.ID
	for _, pt := range sub.Plan.Rollback.Tasks {
		if len(pt.DependsOn) == 0 {
			root = pt.ID
			break
		}
	}
	require.NoError(t, b.eng.releaseRollback(b.ctx, tenant, "c1", job.ID, []string{root}))
	require.NoError(t, b.eng.materializeRollback(b.ctx, tenant, job.ID))
	require.Equal(t, domain.TaskReady, taskItems(t, b, job.ID)[root].Status)
}

func TestChunksStayUnderTheItemLimit(t *testing.T) {
	t.Parallel()
	tasks := thousandNodeTasks(t)
	chunks := taskChunks(tenant, deferredChunks, "j1", tasks)
	require.Greater(t, len(chunks), 1, "a 1,000-node plan takes several chunks")
	n := 0
	for i, it := range chunks {
		require.LessOrEqual(t, len(it.Data), maxChunkBytes, "chunk %d", i)
		var got []domain.Task
		require.NoError(t, decodeInto(it, &got))
		n += len(got)
	}
	require.Equal(t, len(tasks), n, "every task in exactly one chunk")
}

// progressBeforeFinish lands a progress count on the job just before the
// first transaction that ends it, as a worker's batched count can, so that
// transaction is canceled and finish tries again.
type progressBeforeFinish struct {
	store.Store
	done       atomic.Bool
	nodeWrites atomic.Int64
}

func (p *progressBeforeFinish) Transact(ctx context.Context, ops []store.Op) error {
	if len(ops) > 0 && ops[0].Changes.ClearIndex && strings.Contains(ops[0].Key.PK, "JOBS#") && p.done.CompareAndSwap(false, true) {
		if _, err := p.Store.Write(ctx, store.Update(ops[0].Key, store.Condition{}, store.Changes{Add: map[string]int64{counterDone: 0}})); err != nil {
			return err
		}
	}
	for _, op := range ops {
		if strings.Contains(op.Key.PK, "NODES#") && op.Changes.Status != nil { // a status: the finish, not a task learning facts
			p.nodeWrites.Add(1)
		}
	}
	return p.Store.Transact(ctx, ops)
}

func (p *progressBeforeFinish) Write(ctx context.Context, op store.Op) (store.Item, error) {
	if strings.Contains(op.Key.PK, "NODES#") {
		p.nodeWrites.Add(1)
	}
	return p.Store.Write(ctx, op)
}

func TestFinishWritesTheNodesOnceWhenItTriesAgain(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, Config{})
	wrapped := &progressBeforeFinish{Store: b.eng.store}
	b.eng.store = wrapped
	job, err := b.eng.Submit(b.ctx, createSubmission(t, "c1", 3, nil))
	require.NoError(t, err)
	// No janitor pass: its checkJobEnd would be a second finisher, writing
	// the nodes too (harmless, and not what this counts).
	stop := b.run(t, 3, time.Hour)
	final := b.waitJob(t, "c1", job.ID, 30*time.Second)
	stop()
	require.Equal(t, domain.JobSucceeded, final.Status)
	require.True(t, wrapped.done.Load(), "the finish transaction was canceled once")
	require.EqualValues(t, 3, wrapped.nodeWrites.Load(), "each node marked ACTIVE once")
	checkInvariants(t, b)
}

func TestSubmissionBatchesStayWithinTheTransactionLimits(t *testing.T) {
	t.Parallel()
	var ops []store.Op
	for i := range 250 {
		ops = append(ops, store.Put(store.Item{Key: store.Key{PK: "p", SK: fmt.Sprint(i)}, Data: []byte("small")}, store.Condition{}))
	}
	for i := range 30 {
		ops = append(ops, store.Put(store.Item{Key: store.Key{PK: "c", SK: fmt.Sprint(i)}, Data: make([]byte, maxChunkBytes)}, store.Condition{}))
	}
	batches := transactBatches(ops)
	n := 0
	for _, b := range batches {
		require.NoError(t, store.ValidateTransaction(b))
		n += len(b)
	}
	require.Equal(t, len(ops), n, "every op in one batch")
	var flat []store.Op
	for _, b := range batches {
		flat = append(flat, b...)
	}
	require.Equal(t, ops, flat, "in order")

}

func TestAClaimAndAResendOfTheSameRootNeverBothWin(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, Config{ResendAfter: time.Hour})
	job, err := b.eng.Submit(b.ctx, createSubmission(t, "c1", 2, nil))
	require.NoError(t, err)
	roots, err := b.eng.unclaimedRoots(b.ctx, tenant, job.ID, func(string) bool { return false })
	require.NoError(t, err)
	require.Len(t, roots, 2)
	ref := func(id string) TaskRef { return TaskRef{Tenant: tenant, Cluster: "c1", Job: job.ID, Task: id} }

	// A worker read the first root before the janitor sent it again: its
	// claim must lose, or the janitor's item would hide a running attempt.
	first, err := b.eng.loadTaskOrDeferred(b.ctx, ref(roots[0].ID))
	require.NoError(t, err)
	require.Zero(t, first.item.Version, "no item yet")
	n, err := b.eng.sendRoots(b.ctx, tenant, job.ID, roots[:1])
	require.NoError(t, err)
	require.Equal(t, 1, n)
	_, err = b.eng.claim(b.ctx, ref(roots[0].ID), first)
	require.ErrorIs(t, err, store.ErrConditionFailed)

	// A worker claimed the second root first: sending it again must leave
	// the running attempt as it is.
	second, err := b.eng.loadTaskOrDeferred(b.ctx, ref(roots[1].ID))
	require.NoError(t, err)
	claimed, err := b.eng.claim(b.ctx, ref(roots[1].ID), second)
	require.NoError(t, err)
	n, err = b.eng.sendRoots(b.ctx, tenant, job.ID, roots[1:])
	require.NoError(t, err)
	require.Zero(t, n, "nothing to send: it was claimed")
	now, err := b.eng.loadTask(b.ctx, ref(roots[1].ID))
	require.NoError(t, err)
	require.Equal(t, domain.TaskRunning, now.task.Status)
	require.Equal(t, claimed.item.Version, now.item.Version)
}

func TestDefinitionsOfAJobStillBeingWrittenAreNotCached(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, Config{})
	tasks := thousandNodeTasks(t)
	chunks := taskChunks(tenant, deferredChunks, "j1", tasks)
	require.Greater(t, len(chunks), 1)

	// A view between two of the submission's batches sees part of them.
	_, err := b.db.Write(b.ctx, store.Put(chunks[0], store.Condition{}))
	require.NoError(t, err)
	part, err := b.eng.deferredTasks(b.ctx, tenant, "j1")
	require.NoError(t, err)
	require.Less(t, len(part), len(tasks))

	for _, it := range chunks[1:] {
		_, err = b.db.Write(b.ctx, store.Put(it, store.Condition{}))
		require.NoError(t, err)
	}
	all, err := b.eng.deferredTasks(b.ctx, tenant, "j1")
	require.NoError(t, err)
	require.Len(t, all, len(tasks), "the partial read was not kept")
}

func TestAContinuationTheJanitorTookMeanwhileIsNeverStarted(t *testing.T) {
	t.Parallel()
	var ahead atomic.Int64
	clock := func() time.Time { return time.Now().Add(time.Duration(ahead.Load())) }
	b := setup(t, nil, Config{ResendAfter: time.Hour, Clock: clock})
	job, err := b.eng.Submit(b.ctx, createSubmission(t, "c1", 1, nil))
	require.NoError(t, err)
	roots, err := b.eng.unclaimedRoots(b.ctx, tenant, job.ID, func(string) bool { return false })
	require.NoError(t, err)
	ref := TaskRef{Tenant: tenant, Cluster: "c1", Job: job.ID, Task: roots[0].ID}
	lt, err := b.eng.loadTaskOrDeferred(b.ctx, ref)
	require.NoError(t, err)
	claimed, err := b.eng.claim(b.ctx, ref, lt)
	require.NoError(t, err)

	// Before it starts, its lease runs out and the janitor fails the attempt.
	ahead.Store(int64(time.Minute))
	r, err := b.eng.RunJanitor(b.ctx)
	require.NoError(t, err)
	require.Equal(t, 1, r.TimedOut)

	next, delay, err := b.eng.runClaimed(b.ctx, ref, claimed, queue.Delivery{}, "")
	require.NoError(t, err)
	require.Nil(t, next)
	require.Zero(t, delay)
	require.Empty(t, b.rec.runs, "attempt 1 was the janitor's to end, not this worker's to start")
}

func TestAJobWhoseRollbackTasksHaveItemsAlreadyRollsBack(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, Config{})
	job, err := b.eng.Submit(b.ctx, createSubmission(t, "c1", 3, failAppStart(alwaysFails)))
	require.NoError(t, err)
	// As a job submitted before rollback plans were chunked: its rollback
	// tasks have items and there is no chunk.
	require.NoError(t, b.eng.materializeRollback(b.ctx, tenant, job.ID))
	page, err := b.db.Query(b.ctx, chunkPK(tenant, rollbackChunks, job.ID), store.Query{})
	require.NoError(t, err)
	require.NotEmpty(t, page.Items)
	for _, it := range page.Items {
		_, err := b.db.Write(b.ctx, store.Delete(it.Key, store.Condition{}))
		require.NoError(t, err)
	}

	stop := b.run(t, 2, 50*time.Millisecond)
	final := b.waitJob(t, "c1", job.ID, 30*time.Second)
	stop()
	require.Equal(t, domain.JobFailed, final.Status)
	require.Contains(t, final.StatusMessage, "rolled back")
	checkInvariants(t, b)
}

func TestSubmissionWritesItsBatchesInParallelAndReportsAFailure(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, Config{})
	var batches [][]store.Op
	for i := range 3 * submitWriters {
		batches = append(batches, []store.Op{store.Put(store.Item{Key: store.Key{PK: "T#x#P", SK: fmt.Sprint(i)}}, store.Condition{})})
	}
	require.NoError(t, b.eng.transactAll(b.ctx, batches))
	page, err := b.db.Query(b.ctx, "T#x#P", store.Query{Limit: 1000})
	require.NoError(t, err)
	require.Len(t, page.Items, len(batches), "every batch is written")

	bad := append(batches[:1:1], []store.Op{store.Put(store.Item{Key: store.Key{PK: "T#x#P", SK: "0"}}, store.Condition{MustNotExist: true})})
	require.ErrorIs(t, b.eng.transactAll(b.ctx, bad), store.ErrConditionFailed)
}

// slowChunkReads makes every read of deferred chunks slow and counts them.
type slowChunkReads struct {
	store.Store
	reads atomic.Int64
}

func (s *slowChunkReads) Query(ctx context.Context, pk string, q store.Query) (store.Page, error) {
	if strings.Contains(pk, deferredChunks) {
		s.reads.Add(1)
		time.Sleep(20 * time.Millisecond)
	}
	return s.Store.Query(ctx, pk, q)
}

func TestWorkersStartingOnAJobReadItsChunksOnce(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, Config{})
	job, err := b.eng.Submit(b.ctx, createSubmission(t, "c1", 20, nil))
	require.NoError(t, err)
	slow := &slowChunkReads{Store: b.db}
	fresh := New(slow, b.q, b.rec, b.eng.cfg)
	var (
		wg   sync.WaitGroup
		got  = make(chan int, 16)
		errs = make(chan error, 16)
	)
	for range 16 {
		wg.Go(func() {
			defs, err := fresh.deferredTasks(b.ctx, tenant, job.ID)
			errs <- err
			got <- len(defs)
		})
	}
	wg.Wait()
	close(got)
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	for n := range got {
		require.Positive(t, n)
	}
	require.EqualValues(t, 1, slow.reads.Load(), "one read of the chunks, however many workers asked at once")
}

// TestStagedSubmissionAnswersPendingAndStartsInTheBackground submits a job
// whose step 2 is staged: Submit answers with the job PENDING, and the
// background writer (or, when it died, the janitor) writes it and starts
// it; it then runs to the end like any job.
func TestStagedSubmissionAnswersPendingAndStartsInTheBackground(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T) {
		b := setup(t, nil, Config{})
		b.eng.inlineBatches = 0
		// 150 nodes: step 2 takes several transactions.
		job, err := b.eng.Submit(b.ctx, createSubmission(t, "c1", 150, nil))
		require.NoError(t, err)
		require.Equal(t, domain.JobPending, job.Status, "answered before step 2 is written")
		stop := b.run(t, 4, 50*time.Millisecond)
		// A liveness bound, not a speed test: 150 nodes' tasks through four
		// workers on DynamoDB Local took over a minute at a load of 30 on
		// two cores (the code before this change did the same).
		final := b.waitJob(t, "c1", job.ID, 4*time.Minute)
		stop()
		require.Equal(t, domain.JobSucceeded, final.Status, "%s%s", final.StatusMessage, b.failures(t, final.ID))
		checkInvariants(t, b)
	})
}

// TestJanitorContinuesAStagedSubmissionWhoseWriterDied stages a job with a
// store that refuses step 2's batches, as if the writer died after the
// answer: the janitor writes it and starts it.
func TestJanitorContinuesAStagedSubmissionWhoseWriterDied(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, Config{})
	dying := &failingBatches{Store: b.db}
	dying.left.Store(1 + 1) // step 1 and the staged items pass; the background writer fails
	submitter := New(dying, b.q, b.rec, b.eng.cfg)
	submitter.inlineBatches = 0
	job, err := submitter.Submit(b.ctx, createSubmission(t, "c1", 30, nil))
	require.NoError(t, err)
	require.Equal(t, domain.JobPending, job.Status)
	require.Eventually(t, func() bool { return dying.left.Load() < 0 }, 10*time.Second, 5*time.Millisecond, "the background writer tried and failed")
	lj, err := b.eng.loadJob(b.ctx, tenant, "c1", job.ID)
	require.NoError(t, err)
	require.Equal(t, domain.JobPending, lj.job.Status)

	r, err := b.eng.RunJanitor(b.ctx)
	require.NoError(t, err)
	require.Zero(t, r.Undone)
	stop := b.run(t, 4, 50*time.Millisecond)
	final := b.waitJob(t, "c1", job.ID, 60*time.Second)
	stop()
	require.Equal(t, domain.JobSucceeded, final.Status, "%s%s", final.StatusMessage, b.failures(t, final.ID))
	checkInvariants(t, b)
}
