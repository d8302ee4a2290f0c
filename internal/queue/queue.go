package queue

import (
	"context"
	"errors"
	"time"
)

// Message is one piece of work to offer to a tenant's workers.
type Message struct {
	// TaskID names the task; workers read everything else from the store.
	TaskID string `json:"taskId"`
	// Attempt is the attempt the message was sent for.
	Attempt int `json:"attempt"`
	// Format is the sender's format version (engine.FormatVersion); 0 from
	// senders before formats were recorded. A receiver that does not
	// understand it hands the message back for a newer release.
	Format int `json:"format,omitempty"`
	// Group orders delivery: messages of one group are delivered one at a
	// time, in order ("<cluster>#<node>"). A group is blocked while one of its
	// messages is in flight.
	Group string `json:"-"`
	// Dedup identifies this send: a second send with the same Dedup within
	// the deduplication window (5 minutes) is dropped. The engine uses
	// "<task>#<attempt>#<send>", bumping <send> when the janitor re-sends.
	Dedup string `json:"-"`
	// Long routes the message to the tenant's long-task queue (see
	// queue/routed): its task may run longer than a Lambda can. It is for
	// routing only: routed clears it before handing the message on, and
	// deliveries never carry it.
	Long bool `json:"-"`
}

// Delivery is a received message.
type Delivery struct {
	Message
	// Receipt identifies this delivery for Ack and Extend.
	Receipt string
	// Received counts deliveries of this message, this one included.
	Received int
	// FirstReceived is when the message was first delivered (SQS's
	// ApproximateFirstReceiveTimestamp); zero when the backend does not
	// say. A message that went to a worker which died stays hidden for its
	// visibility timeout, so one first received more recently than that
	// has not been with a dead worker yet (engine: delivery records).
	FirstReceived time.Time
}

// Queue is a set of per-tenant FIFO queues. Every method is safe for
// concurrent use.
type Queue interface {
	// Send offers messages to the tenant's workers, in order. At most
	// MaxBatch messages per call.
	Send(ctx context.Context, tenant string, msgs ...Message) error
	// Receive returns up to max (at most MaxBatch) deliveries, waiting up to
	// wait for the first one; each stays invisible to other receivers for
	// visibility unless acknowledged or extended.
	Receive(ctx context.Context, tenant string, max int, wait, visibility time.Duration) ([]Delivery, error)
	// Ack removes a delivered message for good.
	Ack(ctx context.Context, tenant, receipt string) error
	// Extend sets how much longer a delivered message stays invisible,
	// counted from now: a heartbeat while a task runs, or a delay before a
	// detached task is polled again. Zero makes it visible at once.
	Extend(ctx context.Context, tenant, receipt string, visibility time.Duration) error
}

// Provisioner creates and removes tenants' queues. In AWS a tenant's queue
// (and its dead-letter queue) exists only after onboarding.
type Provisioner interface {
	CreateTenantQueue(ctx context.Context, tenant string) error
	DeleteTenantQueue(ctx context.Context, tenant string) error
}

// Limits shared by every backend (SQS's own).
const (
	MaxBatch       = 10
	MaxVisibility  = 12 * time.Hour
	MaxWait        = 20 * time.Second
	DedupWindow    = 5 * time.Minute
	MaxGroupLength = 128
)

// Errors backends return.
var (
	// ErrNoQueue: the tenant has no queue (not onboarded, or deleted).
	ErrNoQueue = errors.New("queue: the tenant has no queue")
	// ErrReceiptInvalid: the receipt is unknown, or its message was acked or
	// has been delivered again since (its visibility ran out).
	ErrReceiptInvalid = errors.New("queue: receipt is no longer valid")
)

// BatchExtender is a Queue that can set the visibility of several
// deliveries in one call (SQS's ChangeMessageVisibilityBatch). The worker
// Lambda uses it to hold the messages of the batch it was handed (see
// engine.HandleBatch); a Queue without it gets one Extend per receipt.
type BatchExtender interface {
	// ExtendBatch is Extend for up to MaxBatch receipts at once. A receipt
	// that is no longer valid (its message was acknowledged meanwhile) is
	// skipped, not an error.
	ExtendBatch(ctx context.Context, tenant string, receipts []string, visibility time.Duration) error
}

// ExtendAll sets the visibility of every receipt, in one call per MaxBatch
// receipts when q is a BatchExtender. Receipts no longer valid are skipped.
func ExtendAll(ctx context.Context, q Queue, tenant string, receipts []string, visibility time.Duration) error {
	if be, ok := q.(BatchExtender); ok {
		for start := 0; start < len(receipts); start += MaxBatch {
			if err := be.ExtendBatch(ctx, tenant, receipts[start:min(start+MaxBatch, len(receipts))], visibility); err != nil {
				return err
			}
		}
		return nil
	}
	for _, r := range receipts {
		if err := q.Extend(ctx, tenant, r, visibility); err != nil && !errors.Is(err, ErrReceiptInvalid) {
			return err
		}
	}
	return nil
}

// DeadLetterer is a Queue whose tenant queues move a message to a
// dead-letter queue after it has been received MaxReceives times (SQS's
// redrive policy). The engine uses it to say, on a message's last
// delivery, why the message is about to go there and where.
type DeadLetterer interface {
	// DeadLetter returns the name of the tenant's dead-letter queue and the
	// receive count after which a message moves there.
	DeadLetter(tenant string) (queueName string, maxReceives int, err error)
}
