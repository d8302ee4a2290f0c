package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/queue"
	"github.com/heddle-io/heddle/internal/store"
)

// maxCauseChars bounds the failure quoted in a job's status message.
const maxCauseChars = 1024

// deadLettered is called when handling delivery d failed with cause. On
// the message's last delivery (its receive count has reached the queue's
// maxReceiveCount: SQS moves it to the tenant's dead-letter queue rather
// than deliver it again) it fails the task's job, through the path a
// task's last failure takes (FAILING, then its rollback plan), with a
// status message that names the task, the failure and the dead-letter
// queue: a message that fails every time (a poison message) ends its job
// with the reason instead of leaving it to the janitor's idle rule an hour
// later. Earlier deliveries, and queues without a dead-letter queue, do
// nothing here.
func (e *Engine) deadLettered(ctx context.Context, tenant string, d queue.Delivery, cause error) error {
	dl, ok := e.queue.(queue.DeadLetterer)
	if !ok {
		return nil
	}
	dlq, maxReceives, err := dl.DeadLetter(tenant)
	if err != nil || maxReceives < 1 || d.Received < maxReceives {
		return err
	}
	ref, err := ParseTaskRef(tenant, d.TaskID)
	if err != nil {
		return nil // not a task's message: nothing to tell
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
