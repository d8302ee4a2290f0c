// Package queuetest is the conformance suite every queue.Queue backend must
// pass, so that the engine, tested locally on memqueue, meets the same
// semantics on SQS. A backend's tests call Run with a constructor that
// returns a fresh Backend (a Queue and its Provisioner); every test creates
// the tenant queues it uses, and tests run in parallel. Benchmark measures
// send, receive and ack throughput the same way on every backend.
//
// It covers per-tenant queues and their isolation, FIFO order within a
// group, groups served in parallel while a held group waits, deduplication
// (and, on backends whose clock the suite can move, the end of the 5-minute
// window), visibility timeouts and redelivery, Extend, Ack, invalid
// receipts, missing and deleted queues, batch limits and argument checks,
// long polls, and many receivers racing on one queue.
//
// The suite asserts only what holds on both backends and on real SQS FIFO
// queues. Where SQS leaves room, it accepts either behaviour and checks the
// outcome that matters instead:
//   - An Ack with a stale receipt (acknowledged already, or delivered again
//     since) returns queue.ErrReceiptInvalid on memqueue but succeeds
//     silently on SQS; either way the message must not be removed, which
//     the suite checks by receiving it again.
//   - A Receive may return several messages of one group in order (SQS) or
//     one per group (memqueue, fauxqs); the suite never requires either, only
//     that a group's messages come in order and that no group is held by two
//     receives at once.
//   - SQS counts visibility and waits in whole seconds, so the suite uses
//     whole seconds, and only as lower bounds: it never asserts how long
//     anything took.
//   - Deduplication is checked within one group only: SQS scopes it to the
//     group (DeduplicationScope=messageGroup), fauxqs to the queue.
//   - An SQS long poll whose caller gave up may still take a message at the
//     server, which stays invisible for that receive's visibility; the
//     suite cancels receives only with a short one.
//
// Emptiness is checked with a one-second long poll, because a short poll on
// SQS samples only some servers and may miss a message that is there.
package queuetest
