// Package memqueue is the in-process queue.Queue of heddle's local all-in-one
// server: per-tenant FIFO queues with message groups, visibility timeouts,
// receipts, a deduplication window and long-polling receives, behaving like
// the SQS FIFO queues of package sqsqueue so that the engine is tested
// locally against the semantics it will meet in AWS (both backends pass
// queue/queuetest).
//
// It is not durable, by design: a restart loses every message. The store is
// the only source of truth (invariant 1) and the janitor re-sends every
// READY task that no queue holds, so a lost message costs a janitor period,
// never work. Writing messages to disk would buy nothing the store does not
// already give.
//
// Semantics, where SQS leaves room:
//   - A group has at most one message in flight, and a Receive returns at most
//     one message per group. (SQS may hand out several messages of one group
//     in one receive, in order; consumers must not rely on either.)
//   - A receipt is valid while its delivery is in flight: until it is
//     acknowledged, extended to zero, or its visibility runs out. Ack and
//     Extend with any other receipt return queue.ErrReceiptInvalid (SQS
//     silently accepts a stale Ack).
//   - Deduplication is scoped to the message group, as the SQS queues are
//     configured (DeduplicationScope=messageGroup); the window starts at the
//     first send and a duplicate does not extend it.
//   - Groups become ready in the order their heads became deliverable, and
//     Receive serves them in that order, so busy groups cannot starve others.
//
// Cost: Send, Receive, Ack and Extend are O(log n) in the messages in flight
// (a heap of visibility deadlines) and O(1) otherwise: ready groups wait in a
// ring, and receivers block on per-receiver signals rather than polling.
package memqueue
