package engine

import (
	"context"
	"errors"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/queue"
	"github.com/heddle-io/heddle/internal/store"
)

// replaceTaken answers a delay that the queue refused because the message
// is no longer in flight under this delivery's receipt: SQS delivered it
// again meanwhile (early, or twice), and the other delivery may have
// acknowledged it as a duplicate of a running task, deleting it. The task
// the delay was for then has no message: a parked attempt's polls, or a
// READY task waiting out its backoff, would wait for the janitor
// (ResendAfter) to notice. It sends a fresh message at once instead, with a
// deduplication id of its own (the polls move to it; an old message that
// does come back is then ignored, and a READY task's claim is conditional,
// so a second message costs a receive, never a second run).
func (e *Engine) replaceTaken(ctx context.Context, tenant string, d queue.Delivery) error {
	ref, err := ParseTaskRef(tenant, d.TaskID)
	if err != nil || ref.Cluster == hookCluster || ref.Cluster == preStartCluster {
		return nil // hooks and pre-start questions have resends of their own
	}
	lt, err := e.loadTask(ctx, ref)
	if errors.Is(err, store.ErrNotFound) || isNewer(err) {
		return nil // deferred (the janitor resends those) or gone
	}
	if err != nil {
		return err
	}
	switch lt.task.Status {
	case domain.TaskRunning:
		p, ok := parkedOf(lt.task)
		if !ok || (p.Msg != "" && d.Dedup != "" && p.Msg != d.Dedup) {
			return nil // running in place, or its polls ride another message
		}
		return e.repoll(ctx, ref, lt, p, &JanitorReport{})
	case domain.TaskReady:
		t := lt.task
		t.Sends++
		_, err := e.store.Write(ctx, store.Update(lt.item.Key, store.Condition{Version: lt.item.Version}, taskChanges(lt.item.Key, t)))
		if errors.Is(err, store.ErrConditionFailed) {
			return nil // claimed meanwhile: its message did its work
		}
		if err != nil {
			return err
		}
		return e.send(ctx, tenant, []domain.Task{t})
	}
	return nil
}
