// Package routed is a queue.Queue that sends each message to one of two
// queues by its Long flag, and receives from a third: a process's engine
// sends every task it readies through it, whichever queue it consumes.
//
// In AWS the short queue is the tenant's SQS queue, which the worker Lambda
// consumes, and the long queue is the tenant's long-task queue, which
// `heddle worker` consumes on Fargate (tasks whose action may outlast a
// Lambda). The Lambdas receive from the short queue:
//
//	routed.New(short, short, long)
//
// and the Fargate worker from the long one, still sending short follow-up
// tasks to the short queue:
//
//	routed.New(long, short, long)
//
// Receipts belong to the receiving queue, so Ack and Extend go there.
package routed

import (
	"context"
	"errors"
	"time"

	"github.com/heddle-io/heddle/internal/queue"
)

// Queue routes sends by Message.Long and receives from one queue.
type Queue struct {
	receive, short, long queue.Queue
}

var _ queue.Queue = (*Queue)(nil)

// New returns a Queue that receives (and acks and extends) on receive and
// sends messages with Long to long, the others to short. A nil long sends
// everything to short. receive and short are required.
func New(receive, short, long queue.Queue) *Queue {
	return &Queue{receive: receive, short: short, long: long}
}

// Send implements queue.Queue: the messages for each target keep their
// order and go in one call, the short ones first. The whole batch is
// checked before anything is sent, so that a bad message sends nothing.
func (q *Queue) Send(ctx context.Context, tenant string, msgs ...queue.Message) error {
	if err := queue.ValidateTenant(tenant); err != nil {
		return err
	}
	if err := queue.ValidateSend(msgs); err != nil {
		return err
	}
	var short, long []queue.Message
	for _, m := range msgs {
		switch {
		case !m.Long:
			short = append(short, m)
		case q.long == nil:
			m.Long = false
			short = append(short, m)
		default:
			m.Long = false
			long = append(long, m)
		}
	}
	if len(long) == 0 {
		return q.short.Send(ctx, tenant, short...)
	}
	if len(short) > 0 {
		if err := q.short.Send(ctx, tenant, short...); err != nil {
			return err
		}
	}
	return q.long.Send(ctx, tenant, long...)
}

// Receive implements queue.Queue on the receiving queue.
func (q *Queue) Receive(ctx context.Context, tenant string, max int, wait, visibility time.Duration) ([]queue.Delivery, error) {
	return q.receive.Receive(ctx, tenant, max, wait, visibility)
}

// Ack implements queue.Queue on the receiving queue.
func (q *Queue) Ack(ctx context.Context, tenant, receipt string) error {
	return q.receive.Ack(ctx, tenant, receipt)
}

// Extend implements queue.Queue on the receiving queue.
func (q *Queue) Extend(ctx context.Context, tenant, receipt string, visibility time.Duration) error {
	return q.receive.Extend(ctx, tenant, receipt, visibility)
}

// ExtendBatch implements queue.BatchExtender on the receiving queue.
func (q *Queue) ExtendBatch(ctx context.Context, tenant string, receipts []string, visibility time.Duration) error {
	return queue.ExtendAll(ctx, q.receive, tenant, receipts, visibility)
}

// DeadLetter implements queue.DeadLetterer for the receiving queue, when it
// has a dead-letter queue.
func (q *Queue) DeadLetter(tenant string) (string, int, error) {
	dl, ok := q.receive.(queue.DeadLetterer)
	if !ok {
		return "", 0, errors.New("routed: the receiving queue has no dead-letter queue")
	}
	return dl.DeadLetter(tenant)
}
