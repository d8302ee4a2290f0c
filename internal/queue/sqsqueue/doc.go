// Package sqsqueue is the queue.Queue of heddle in AWS: an SQS FIFO queue
// per tenant, each with a FIFO dead-letter queue, created at onboarding by
// CreateTenantQueue.
//
// A queue per tenant, rather than a group per tenant on one queue, keeps
// tenants from serialising each other (FIFO queues have no fairness between
// groups) and gives each tenant its own dead-letter queue, Lambda
// concurrency limit and IAM scope. Within a tenant's queue,
// MessageGroupId is the message's Group ("<cluster>#<node>"), so one node
// runs one task at a time while nodes run in parallel; the queue is in
// SQS's high-throughput FIFO mode (deduplication and throughput scoped to
// the group) because there are many groups.
//
// Mapping of queue.Queue onto the SQS API:
//   - Send: SendMessageBatch, MessageGroupId = Group, MessageDeduplicationId
//     = Dedup (or its SHA-256 when SQS would refuse it); the body is JSON
//     holding the task id, the attempt and the caller's Dedup.
//   - Receive: ReceiveMessage long polls (WaitTimeSeconds), asking for the
//     group and the receive count.
//   - Extend: ChangeMessageVisibility; Ack: DeleteMessage.
//   - Queue URLs are cached per tenant; a queue that disappears is dropped
//     from the cache and reported as queue.ErrNoQueue.
//
// A worker Lambda gets messages from the event source mapping instead of
// Receive: DeliveryFromRecord and Queue.TenantOf turn each record of its
// events.SQSEvent into a tenant and a Delivery, whose receipt works with
// Extend and Ack.
//
// A tenant's long-task queue (tasks whose action may outlast a Lambda,
// consumed by `heddle worker` on Fargate) is the queue of the same tenant
// in a second Queue whose prefix is LongPrefix(prefix); queue/routed sends
// each message to one or the other.
//
// Messages that exhaust MaxReceiveCount go to the dead-letter queue and
// leave FIFO order; nothing is lost with them, because the message is only
// a pointer into the store and the janitor re-sends every READY task that
// no worker claimed.
//
// The package is tested with queue/queuetest against fauxqs (see
// scripts/fauxqs.sh); the test file lists where fauxqs differs from SQS.
package sqsqueue
