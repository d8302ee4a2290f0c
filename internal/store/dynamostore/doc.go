// Package dynamostore is the store.Store on DynamoDB (aws-sdk-go-v2) that
// heddle runs on in AWS: one table for everything, as AWS advises.
//
// Single-table layout. Every item has
//
//	pk   S  partition key (store.Key.PK)
//	sk   S  sort key (store.Key.SK)
//	v    N  version: 1 on the first write, bumped by every write
//	st   S  status; absent when empty
//	d    B  body (usually an entity's JSON); absent when empty
//	c_*  N  one attribute per counter, c_<name>, so that UpdateItem can ADD
//	        to it without a read
//	gpk  S  index partition, only on items with an index entry
//	gsk  S  index sort key
//
// and the global secondary index gsi1 (gpk, gsk, all attributes projected) is
// sparse: an item without gpk is not in it. CreateTable makes this table.
//
// Conditions become ConditionExpressions with the meaning of
// store.Condition.Holds (attribute_exists, v = :v, st IN (...), counter >=),
// every attribute named through a placeholder. A failed write asks for the
// old item (ReturnValuesOnConditionCheckFailure ALL_OLD) and reports it in
// the store.ConditionError, so callers retry without another read.
// Transactions map to TransactWriteItems and its CancellationReasons to
// per-operation reasons.
//
// Versions: Update and Delete are one request each (UpdateItem with ADD v 1,
// so even a created item starts at 1). A Put must replace the whole item and
// still number it one past the version it replaces, which no single request
// can do when the old item's counters are unknown (UpdateItem cannot REMOVE
// attributes it does not name; PutItem cannot compute v+1). So a Put is
// optimistic: it numbers the new item from the version the condition pins
// (MustNotExist: 0; Version: n) or, failing that, from a consistent read, and
// adds "v is still that" (or attribute_not_exists) to the condition. If
// DynamoDB refuses, the returned old item tells whether the caller's
// condition failed (a ConditionError) or only the version moved, in which
// case the put is retried on the new version. The caller's condition is
// always part of the request, so it is checked atomically with the write.
//
// Reads: Get and Query are strongly consistent; QueryIndex reads gsi1 and so
// may lag. Page cursors are the last item's key, bound to the query and
// base64-encoded, the same format as boltstore's.
//
// Ambiguous writes. A write that times out, is answered 5xx or loses its
// connection after it was sent may or may not have been applied. Writes are
// therefore retried here, not by the SDK (up to ten attempts, throttling
// included), so that the store knows when an earlier attempt was
// ambiguous:
//
//   - TransactWriteItems carries a ClientRequestToken derived from the
//     transaction's content and a nonce drawn once per Transact call; every
//     resend of the same request carries the same token, and DynamoDB
//     answers a resend of one that applied (within ten minutes) as the
//     first, without applying it again. DynamoDB Local honours the token
//     the same way (storetest's TransactAppliedThenRetried shows it). A
//     definite cancellation moves to a new token, so the next attempt is
//     not answered as the canceled one.
//   - A single-item write whose retry fails its condition after an
//     ambiguous attempt is read back (the ALL_OLD item DynamoDB returns)
//     before it is reported: a put whose item is there as it wrote it, or
//     an update that pinned the version and finds exactly one write since
//     with its changes in place, applied. One that finds another write at
//     the version it needed lost the race. Anything else (a delete, an
//     update on a status alone, a version moved on since) cannot be told
//     from the item and returns store.ErrUnknownOutcome, never
//     store.ErrConditionFailed.
//
// UpdateItem with no condition is not idempotent: if an ADD whose request
// had in fact applied is sent again, the counter moves twice. Callers that
// need exactly-once counting pair the ADD with a status or version
// condition, as the engine does.
package dynamostore
