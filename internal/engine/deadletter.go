package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/queue"
	"github.com/heddle-io/heddle/internal/store"
	"github.com/heddle-io/heddle/planner"
)

// maxCauseChars bounds the failure quoted in a job's status message.
const maxCauseChars = 1024

// deliveryRecordTTL is how long a delivery record may outlive its last
// write before DynamoDB removes it on its own (store.CounterExpires), in
// case the job's end did not (dropDeliveryRecords). A record that expires
// under a job still running only forgets bad deliveries, which can delay
// a poison verdict, never cause one.
const deliveryRecordTTL = 14 * 24 * time.Hour

// Marks a delivery leaves in its task's delivery record.
const (
	markStarted = 1 // the delivery started the task's own work (see startDelivery)
	markFailed  = 2 // its handling failed in the handler
)

// Poison messages and the delivery record.
//
// A task's message is poison when it can never be handled: every worker
// that takes it fails, or dies, before the task gets claimed. SQS moves it
// to the tenant's dead-letter queue after maxReceiveCount receives, and the
// janitor, which only sees a task that stayed READY, sends it again: left
// alone, a poison message would cycle until the janitor's idle rule failed
// the job an hour later, saying nothing of the cause. So the engine keeps,
// per task and attempt, a small record of the deliveries that went wrong
// and fails the job, with the reason, once they reach the queue's
// maxReceiveCount.
//
// A delivery goes wrong when it fails in the handler (markFailed, with the
// failure), or when it started the task's own work and never got the task
// claimed (markStarted, written just before the claim: a worker killed,
// out of memory or out of time there writes nothing after it). No "ended
// well" mark is needed: a delivery that ends well moves the task on (its
// claim makes it RUNNING for the next attempt, a join's completion makes
// it SUCCEEDED), so as long as the task is READY for the record's attempt
// every start in it went wrong; a record of an attempt the task has moved
// past is never judged. Everything a delivery does before its start mark
// leaves none: handing back work of a newer format, waiting out a retry's
// backoff or a job that has not started, handing a message to a fresh
// invocation, a duplicate or a poll of a running attempt. So hand-backs
// and deliberate delays never make a message poison, and neither do
// receives that never reached the task (a message behind one that crashed
// its batch, a worker stopped before it).
//
// Cost: a start mark is written only for a delivery after a message's
// first (Received >= 2) whose message was first received Visibility/2 ago
// or more (a worker that dies with a message leaves it hidden Visibility,
// so one back sooner was handed back, not lost: hand-offs, releases from
// behind a kept message) and that reaches the claim, and only on queues
// with a dead-letter queue; a first delivery, which is nearly every
// delivery of a healthy job, writes nothing more than before. A first delivery that
// dies is so not counted, so the verdict needs deliveries of the janitor's
// re-sends too when every delivery dies (each re-send is a new message
// whose deliveries add to the same record): maxReceiveCount marks mean at
// least that many deliveries that went wrong on their own, and a single
// worker killed mid-task (a chaos test's kill -9) leaves at most one.
//
// A delivery after the last mark reached maxReceiveCount does not run: it
// fails the job (FAILING, then its rollback plan), naming the task, how
// its deliveries went and the last failure, and is acknowledged. A failure
// that brings the record to maxReceiveCount does the same.
//
// The record lives in DELIVERIES#<job>, one item per task and attempt,
// not on the task's item: the failure may be that very item (one grown
// too large to write, one this release cannot read). Each mark is a
// counter named after the message's send and receive numbers, set (not
// added) so a retried write counts once; its value says whether the
// delivery failed or only started. The job's end deletes the records
// (dropDeliveryRecords), as does a retry of the job; each also carries
// store.CounterExpires, deliveryRecordTTL ahead, for DynamoDB's
// time-to-live should a record outlive its job (a delivery racing the
// job's end). Tenant exports do not carry them (internal/tenantmove):
// they describe messages of the source's queues.

// poisonRule returns the tenant's dead-letter queue and the receive count
// after which SQS moves a message there; ok is false for a queue without
// one (the in-process queue), where nothing is recorded.
func (e *Engine) poisonRule(tenant string) (dlq string, maxReceives int, ok bool, err error) {
	dl, isDL := e.queue.(queue.DeadLetterer)
	if !isDL {
		return "", 0, false, nil
	}
	dlq, maxReceives, err = dl.DeadLetter(tenant)
	if err != nil || maxReceives < 1 {
		return "", 0, false, err
	}
	return dlq, maxReceives, true, nil
}

// startDelivery records, just before delivery d claims ref's task (or
// completes it, for a join), that it started the task's work, and reports
// whether the task is poison: earlier deliveries that went wrong already
// reached the queue's maxReceiveCount. Its job has then been failed, and
// the delivery is to be acknowledged without running anything. A first
// delivery, and any on a queue without a dead-letter queue, writes
// nothing.
func (e *Engine) startDelivery(ctx context.Context, ref TaskRef, lt loadedTask, d queue.Delivery) (bool, error) {
	if d.Received < 2 || d.Attempt != lt.task.Attempt {
		return false, nil // a first delivery, or a stale message's: no mark
	}
	if !d.FirstReceived.IsZero() && e.now().Sub(d.FirstReceived) < e.cfg.Visibility/2 {
		// Received again soon after its first receive: handed to a fresh
		// invocation, released from behind a kept message, back from a
		// short delay. A worker that died with it would have left it
		// hidden for Visibility, so no earlier delivery went wrong
		// unmarked, and this one, like a first, goes unmarked too.
		return false, nil
	}
	dlq, maxReceives, ok, err := e.poisonRule(ref.Tenant)
	if !ok || err != nil {
		// A queue that cannot name the tenant's dead-letter queue leaves
		// the delivery unmarked rather than refuse the work.
		return false, nil
	}
	rec, err := e.markDelivery(ctx, ref, d, markStarted, "")
	if err != nil {
		return false, fmt.Errorf("recording the start of delivery %d of %s: %w", d.Received, d.TaskID, err)
	}
	earlier := rec
	delete(earlier.marks, deliveryMark(d))
	if len(earlier.marks) < maxReceives {
		return false, nil
	}
	return e.failPoisoned(ctx, ref, d.Attempt, dlq, earlier, &lt.task)
}

// deadLettered is called when handling delivery d failed with cause (in
// the handler: the worker ran and the message's own handling returned an
// error). It marks the delivery failed in its task's record and, when the
// record's deliveries that went wrong reach the queue's maxReceiveCount,
// fails the task's job (see failPoisoned). Messages that are not a task's
// (webhook deliveries, pre-start hooks) and queues without a dead-letter
// queue record nothing.
func (e *Engine) deadLettered(ctx context.Context, tenant string, d queue.Delivery, cause error) error {
	dlq, maxReceives, ok, err := e.poisonRule(tenant)
	if !ok || err != nil {
		return err
	}
	ref, err := ParseTaskRef(tenant, d.TaskID)
	if err != nil || ref.Cluster == hookCluster || ref.Cluster == preStartCluster {
		return nil // not a task's message: no job to tell
	}
	why := cause.Error()
	if len(why) > maxCauseChars {
		why = why[:maxCauseChars] + "..."
	}
	rec, err := e.markDelivery(ctx, ref, d, markFailed, why)
	if err != nil {
		return fmt.Errorf("recording the failed delivery %d of %s: %w", d.Received, d.TaskID, err)
	}
	if len(rec.marks) < maxReceives {
		return nil
	}
	_, err = e.failPoisoned(ctx, ref, d.Attempt, dlq, rec, nil)
	return err
}

// deliveryRecord is a task's delivery record as read back.
type deliveryRecord struct {
	marks       map[string]int64 // counter name -> markStarted or markFailed
	lastFailure string
}

// failureNote is the body of a delivery record: the last failure.
type failureNote struct {
	Error string    `json:"error"`
	At    time.Time `json:"at"`
}

// markDelivery sets d's mark in its task's record (one write, which
// returns the whole record) and, for a failure, keeps why as the last
// failure.
func (e *Engine) markDelivery(ctx context.Context, ref TaskRef, d queue.Delivery, mark int64, why string) (deliveryRecord, error) {
	ch := store.Changes{Set: map[string]int64{
		deliveryMark(d):      mark,
		store.CounterExpires: e.now().Add(deliveryRecordTTL).Unix(),
	}}
	if why != "" {
		ch.Data = mustJSON(failureNote{Error: why, At: e.now()})
	}
	it, err := e.store.Write(ctx, store.Update(deliveryRecordKey(ref, d.Attempt), store.Condition{}, ch))
	if err != nil {
		return deliveryRecord{}, err
	}
	rec := deliveryRecord{marks: map[string]int64{}}
	for name, v := range it.Counters {
		if strings.HasPrefix(name, deliveryMarkPrefix) && v > 0 {
			rec.marks[name] = v
		}
	}
	var note failureNote
	if len(it.Data) > 0 && json.Unmarshal(it.Data, &note) == nil {
		rec.lastFailure = note.Error
	}
	return rec, nil
}

// failPoisoned fails the job of ref's task as poisoned, with a status
// message built from its delivery record, and reports true, unless the
// task has moved past the record's attempt (claimed, or ended: the record
// is stale; false). A job that is ending already, or gone, keeps its own
// message (true: nothing is to run). task is the task as the caller read
// it; nil reads it (a failure to read it, the likely poison, counts as
// not moved on).
func (e *Engine) failPoisoned(ctx context.Context, ref TaskRef, attempt int, dlq string, rec deliveryRecord, task *domain.Task) (bool, error) {
	if task == nil {
		task = e.taskIfReadable(ctx, ref)
	}
	if task != nil && !((task.Status == domain.TaskReady || task.Status == domain.TaskRunning) && task.Attempt == attempt) {
		return false, nil
	}
	failed := 0
	for _, v := range rec.marks {
		if v == markFailed {
			failed++
		}
	}
	msg := fmt.Sprintf("task %s: its message went wrong on %d deliveries and none got the task going (%d failed in the handler, %d started and never ended: the worker was killed, ran out of memory or out of time, or crashed); it is poison, and SQS moves it to the dead-letter queue %s (kept there to inspect: its job ends here, so a redrive would run nothing; fix the cause and run the operation again)",
		ref.Task, len(rec.marks), failed, len(rec.marks)-failed, dlq)
	if rec.lastFailure != "" {
		msg += "; the last failure: " + rec.lastFailure
	}
	e.log.ErrorContext(ctx, "a task's message is poison; failing its job", "tenant", ref.Tenant, "job", ref.Job, "task", ref.Task,
		"deliveries", len(rec.marks), "failed", failed, "deadLetterQueue", dlq, "lastFailure", rec.lastFailure)
	for range maxSettleAttempts {
		lj, err := e.loadJob(ctx, ref.Tenant, ref.Cluster, ref.Job)
		if errors.Is(err, store.ErrNotFound) {
			return true, nil
		}
		if err != nil {
			return false, err
		}
		switch lj.job.Status {
		case domain.JobRunning, domain.JobPaused:
		case domain.JobRollingBack:
			if !strings.HasPrefix(ref.Task, planner.RollbackPrefix) {
				return true, nil // a forward task's message: the rollback goes on without it
			}
			// A rollback task that can never run ends the rollback, as its
			// last failure would (fail): the job ends FAILED saying why.
			return true, e.finish(ctx, ref.Tenant, ref.Cluster, ref.Job, domain.JobRollingBack, endRollbackFailed, msg)
		default:
			return true, nil // ending already, or ended: its own message stands
		}
		job := lj.job
		job.StatusMessage = msg
		failing := string(domain.JobFailing)
		_, err = e.store.Write(ctx, store.Update(lj.item.Key, store.Condition{Version: lj.item.Version},
			store.Changes{Status: &failing, Data: mustJSON(job), Index: jobIndex(ref.Job, e.now())}))
		if errors.Is(err, store.ErrConditionFailed) {
			continue // a progress count meanwhile: read again
		}
		if err != nil {
			return false, err
		}
		return true, e.settleFailing(ctx, ref.Tenant, ref.Cluster, ref.Job)
	}
	return false, fmt.Errorf("failing job %s: it kept changing", ref.Job)
}

// taskIfReadable reads ref's task for a verdict, or returns nil when it
// cannot be read: not found, unreadable, or reading it panics (what may
// have made the message poison; the verdict is not to die of it too).
func (e *Engine) taskIfReadable(ctx context.Context, ref TaskRef) (task *domain.Task) {
	defer func() {
		if recover() != nil {
			task = nil
		}
	}()
	lt, err := e.loadTaskOrDeferred(ctx, ref)
	if err != nil {
		return nil
	}
	return &lt.task
}

// dropJobDeliveryRecords is dropDeliveryRecords where records can exist:
// on a queue with a dead-letter queue (the in-process queue has none, and
// its deployments write no records, so a job's end costs no query there).
func (e *Engine) dropJobDeliveryRecords(ctx context.Context, tenant, jobID string) error {
	if _, ok := e.queue.(queue.DeadLetterer); !ok {
		return nil
	}
	return e.dropDeliveryRecords(ctx, tenant, jobID)
}

// dropDeliveryRecords deletes a job's delivery records: called when the
// job ends (and when it is retried, so a retry starts with none). One
// query page when there are none, which is nearly always.
func (e *Engine) dropDeliveryRecords(ctx context.Context, tenant, jobID string) error {
	pk := deliveryRecordsPK(tenant, jobID)
	for {
		// Always the first page: what it held is deleted before the next
		// query.
		page, err := e.store.Query(ctx, pk, store.Query{Limit: store.MaxPageSize})
		if err != nil {
			return fmt.Errorf("listing the delivery records of job %s: %w", jobID, err)
		}
		for _, it := range page.Items {
			if _, err := e.store.Write(ctx, store.Delete(it.Key, store.Condition{})); err != nil {
				return fmt.Errorf("deleting the delivery record %s: %w", it.Key, err)
			}
		}
		if page.Next == "" {
			return nil
		}
	}
}

func deliveryRecordsPK(tenant, jobID string) string {
	return store.TenantPK(tenant, "DELIVERIES#"+jobID)
}

// deliveryRecordKey addresses the record of ref's task's deliveries for
// the attempt a message was sent for: DELIVERIES#<job>, <task>#<attempt>.
func deliveryRecordKey(ref TaskRef, attempt int) store.Key {
	return store.Key{PK: deliveryRecordsPK(ref.Tenant, ref.Job), SK: ref.Task + "#" + strconv.Itoa(attempt)}
}

const deliveryMarkPrefix = "d"

// deliveryMark names d's counter in its record: d<send>.<receive>, the
// message's send number (the last part of its deduplication id,
// <job>#<task>#<attempt>#<send>: every send of a task's message has its
// own) and the delivery's receive count.
func deliveryMark(d queue.Delivery) string {
	send := "0"
	if i := strings.LastIndexByte(d.Dedup, '#'); i >= 0 {
		send = d.Dedup[i+1:]
	}
	return deliveryMarkPrefix + send + "." + strconv.Itoa(d.Received)
}
