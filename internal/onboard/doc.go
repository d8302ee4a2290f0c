// Package onboard gives a tenant what it needs outside the store when it is
// created, changed and deleted. Locally that is nothing (Nop: the in-process
// queue makes a tenant's queue on first use). In AWS (package awsonboard) it
// is the tenant's SQS FIFO queue and dead-letter queue and the Lambda event
// source mapping from that queue to the worker function, whose
// MaximumConcurrency is the tenant's worker count.
//
// The API calls an Onboarder around its access changes, in an order where
// every failure leaves a state that repeating the same request repairs:
//
//   - POST /v1/tenants creates the tenant, then Onboards it. If onboarding
//     fails the tenant exists without (all of) its queue and mapping, and
//     the API says so; PUT /v1/tenants/{id} Resizes, and Resize onboards a
//     tenant whose queue or mapping is missing, so the PUT finishes the job.
//     Creating the tenant first means a failure never leaves queues that no
//     tenant owns; until the PUT, the tenant's jobs fail to submit (no
//     queue) or wait in its queue (no mapping), and nothing is lost.
//   - PUT /v1/tenants/{id} updates the tenant, then Resizes: the mapping
//     follows the stored worker count, so a failed Resize is repaired by
//     the next PUT.
//   - DELETE /v1/tenants/{id} Offboards inside the deletion: access first
//     marks the tenant deleting, under the condition that it has no
//     clusters (so no queue in use is removed, and no cluster can start
//     meanwhile) and removes its users and keys; then Offboard removes the
//     mapping (the worker stops polling) and then the queues, and only
//     then are the tenant's catalog and the tenant item deleted. If
//     Offboard fails, the tenant stays deleting (its id taken, its keys
//     dead) and a repeated DELETE picks up where it stopped.
//
// Every step of every method is idempotent: a queue that exists is brought
// to the wanted attributes, a mapping that exists is updated, and what is
// already gone is not an error.
package onboard
