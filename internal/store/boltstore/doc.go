// Package boltstore is the embedded, durable store.Store that heddle's local
// all-in-one server runs on: one file, ACID transactions, an fsync per commit,
// pure Go.
//
// Why bbolt rather than SQLite (modernc.org/sqlite): the store interface is a
// key-value one (ordered keys, conditional single-item writes, small
// transactions), which is exactly what bbolt offers with nothing in between,
// while SQLite would add a SQL layer, a schema and a much larger transpiled
// dependency to express the same thing. bbolt's single writer is no limit
// here because writes are group-committed (see below).
//
// Layout: bucket "items" maps PK·SK to an encoded record (version, status,
// counters, index entry, body); bucket "index" maps Partition·Sort·PK·SK to
// the item's PK·SK, only for items that carry an index entry, so the sparse
// secondary index is a range scan. Key components are joined with an escape
// scheme that keeps byte order and allows any byte, NUL included (see key.go).
//
// Conditions are evaluated with store.Condition.Holds inside the write
// transaction, so they see exactly the state they guard. Writers share
// commits: a single goroutine takes every write queued while the previous
// commit was syncing and applies them in one bbolt transaction (one fsync).
// A lone writer pays one fsync and no added delay (unlike bbolt's DB.Batch,
// which waits up to 10 ms to fill a batch); many writers pay one fsync per
// batch.
//
// Limits mirror DynamoDB's so that code that runs locally also runs on AWS:
// partition keys up to 2048 bytes, sort keys up to 1024, items up to 400 KB
// (counted as DynamoDB counts them, approximately), at most 100 statuses in a
// condition.
package boltstore
