// Package store is heddle's only source of truth: a narrow, DynamoDB-shaped
// item store that the catalog, the API and the engine write through, and that
// two backends implement (store/boltstore, embedded and durable, for the local
// default; store/dynamostore for AWS), both held to one conformance suite
// (store/storetest).
//
// Every item lives under a partition key and a sort key, carries a version the
// store bumps on each write, an optional status, named counters that can be
// added to atomically, an optional entry in one sparse secondary index, and an
// opaque JSON body. Every write may carry a Condition; a transaction of up to
// MaxTransactItems operations applies entirely or not at all and reports, per
// operation, why it did not.
//
// Conditions are deliberately few (exists, version, status, counter floor) so
// that each maps to one DynamoDB ConditionExpression and the embedded backend
// can evaluate them exactly the same way.
package store
