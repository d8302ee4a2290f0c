// Package idempotency makes a retried POST safe: a client sends the same
// Idempotency-Key header with each attempt of one request, and heddle
// carries the request out once and answers every attempt with the first
// one's answer.
//
// A key is kept per tenant and caller, with a fingerprint of the request
// (method, path and query, SHA-256 of the body), in one store item whose
// status walks pending -> committed -> done:
//
//   - Begin claims the key with a conditional put (the item must not
//     exist, or be expired, or be a pending claim older than InFlight
//     whose attempt died before it changed anything). Another attempt
//     finds the item: a different fingerprint is a misuse of the key, a
//     pending one is in flight (answer 409 and Retry-After), a committed
//     or done one is replayed.
//   - Claim.CommitOp is one more operation for the transaction that makes
//     the request's change (the engine's first transaction of a job: the
//     cluster, its lock, the job, the quota). It moves the item to
//     committed under the claim's version, so the change and the record of
//     it commit together or not at all; an attempt that lost its claim to a
//     takeover cannot commit.
//   - Claim.Finish stores the answer (status, Location, body) once it is
//     known; Claim.Release deletes a claim that changed nothing (an error
//     answer), so that a retry runs again.
//
// A process that dies between the commit and the answer leaves a committed
// item: the next attempt answers from it (the cluster and job it names). One
// that dies before the commit leaves a pending claim that a retry takes over
// once it is older than InFlight; nothing was changed under it.
//
// Items carry store.CounterExpires (DynamoDB's time to live removes them);
// an expired item is treated as absent. The embedded store removes nothing
// by itself, so with Options.Sweep the items also enter the secondary index
// by expiry and Sweep deletes the expired ones (the local server's janitor
// calls it).
package idempotency
