package engine

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/queue"
	"github.com/heddle-io/heddle/internal/store"
)

// maxCauseChars bounds the failure quoted in a job's status message.
const maxCauseChars = 1024

// deadLettered is called when handling delivery d failed with cause (in
// the handler: the worker ran and the message's own handling returned an
// error). On the message's last delivery (its receive count has reached the
// queue's maxReceiveCount: SQS moves it to the tenant's dead-letter queue
// rather than deliver it again) it fails the task's job, through the path
// a task's last failure takes (FAILING, then its rollback plan), with a
// status message that names the task, the failure and the dead-letter
// queue: a message that fails every time (a poison message) ends its job
// with the reason instead of leaving it to the janitor's idle rule an hour
// later.
//
// Only a message whose every delivery failed in the handler is poison. SQS
// counts a receive whatever became of it: a worker killed mid-batch (a
// Lambda crash, a timeout, an out-of-memory kill) raises the count of
// every message of its batch, and so do deliveries that were kept without
// a failure (a retry's backoff, a message behind a delayed one of its
// group, a hand-off to a fresh invocation). A message brought to its last
// delivery that way, then failing once (the store throttled, a network
// blip), proves nothing about itself; failing its job would fail a healthy
// operation (a delete would keep its nodes). So every failure is recorded
// (failedDeliveries), and the last delivery fails the job only when the
// record holds every earlier one; otherwise the message goes to the
// dead-letter queue like any other and its task, still READY, is sent
// again by the janitor after ResendAfter, as a lost message is. Earlier
// deliveries, and queues without a dead-letter queue, write nothing and
// fail nothing.
func (e *Engine) deadLettered(ctx context.Context, tenant string, d queue.Delivery, cause error) error {
	dl, ok := e.queue.(queue.DeadLetterer)
	if !ok {
		return nil
	}
	dlq, maxReceives, err := dl.DeadLetter(tenant)
	if err != nil || maxReceives < 1 {
		return err
	}
	ref, err := ParseTaskRef(tenant, d.TaskID)
	if err != nil || ref.Cluster == hookCluster || ref.Cluster == preStartCluster {
		return nil // not a task's message: no job to tell
	}
	every, err := e.failedDeliveries(ctx, ref, d)
	if err != nil {
		return fmt.Errorf("recording the failed delivery %d of %s: %w", d.Received, d.TaskID, err)
	}
	if d.Received < maxReceives {
		return nil
	}
	if !every {
		e.log.WarnContext(ctx, "a task's message goes to the dead-letter queue, but not every delivery failed in the handler (a worker died with it, or it was kept without a failure): its job goes on and the janitor sends the task again",
			"tenant", tenant, "job", ref.Job, "task", ref.Task, "received", d.Received, "deadLetterQueue", dlq, "error", cause)
		return nil
	}
	why := cause.Error()
	if len(why) > maxCauseChars {
		why = why[:maxCauseChars] + "..."
	}
	msg := fmt.Sprintf("task %s: its message could not be handled on any of its %d deliveries and SQS moves it to the dead-letter queue %s (kept there to inspect: its job ends here, so a redrive would run nothing; fix the cause and run the operation again); the last failure: %s",
		ref.Task, d.Received, dlq, why)
	e.log.ErrorContext(ctx, "a task's message goes to the dead-letter queue; failing its job", "tenant", tenant, "job", ref.Job, "task", ref.Task, "deadLetterQueue", dlq, "error", cause)
	for range maxSettleAttempts {
		lj, err := e.loadJob(ctx, tenant, ref.Cluster, ref.Job)
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		switch lj.job.Status {
		case domain.JobRunning, domain.JobPaused:
		default:
			return nil // ending already, or ended: its own message stands
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
			return err
		}
		return e.settleFailing(ctx, tenant, ref.Cluster, ref.Job)
	}
	return fmt.Errorf("failing job %s: it kept changing", ref.Job)
}

// failedDeliveries records that delivery d of its message failed in the
// handler and reports whether every delivery of the message so far did.
//
// The record is a small item of its own per message (a task's message is
// told apart by its deduplication id, which changes with every attempt and
// every send), not a field of the task's item: the failure may be that
// very item (one grown too large to write, one this release cannot read),
// and the message's attributes cannot change between deliveries. Each
// failed delivery sets one counter named after its receive number (an
// idempotent write, no read), so the last delivery's write returns the
// whole history. Failures are rare, so the record costs a write only when
// something already went wrong; it stays with the job's other items.
func (e *Engine) failedDeliveries(ctx context.Context, ref TaskRef, d queue.Delivery) (bool, error) {
	it, err := e.store.Write(ctx, store.Update(deliveryFailuresKey(ref, d), store.Condition{},
		store.Changes{Set: map[string]int64{failedDeliveryCounter(d.Received): 1}}))
	if err != nil {
		return false, err
	}
	for n := 1; n <= d.Received; n++ {
		if it.Counter(failedDeliveryCounter(n)) == 0 {
			return false, nil
		}
	}
	return true, nil
}

// deliveryFailuresKey addresses the record of a message's failed
// deliveries: DELIVERYFAILS#<job>, sorted by the message's deduplication
// id (<job>#<task>#<attempt>#<send>), or by task and attempt for a message
// without one.
func deliveryFailuresKey(ref TaskRef, d queue.Delivery) store.Key {
	msg := d.Dedup
	if msg == "" {
		msg = ref.Task + "#" + strconv.Itoa(d.Attempt)
	}
	return store.Key{PK: store.TenantPK(ref.Tenant, "DELIVERYFAILS#"+ref.Job), SK: msg}
}

func failedDeliveryCounter(received int) string { return "failed" + strconv.Itoa(received) }
