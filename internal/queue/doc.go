// Package queue carries task ids from the engine to workers: one queue per
// tenant, with FIFO message groups so that one node runs one task at a time
// while different nodes run in parallel.
//
// A message holds a task id and the attempt it was sent for, nothing that
// cannot be re-read from the store (invariant 1). Delivery is at least once:
// a message can come twice, and every consumer re-reads the task and claims
// it with a conditional write, so a duplicate does nothing.
//
// Two backends implement Queue, both held to one conformance suite
// (queue/queuetest): queue/sqsqueue (an SQS FIFO queue and dead-letter queue
// per tenant) and queue/memqueue (in-process, for the local server, where the
// store and the janitor recover anything a restart loses).
package queue
