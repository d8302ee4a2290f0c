package store

// CounterExpires names the counter that says when an item may be removed
// by the backend on its own: Unix seconds, after which nothing reads the
// item as current (a rate-limit window that has ended). DynamoDB deletes
// such items itself, within days of the time (the table's time-to-live
// attribute, dynamostore.TTLAttribute, declared in template.yaml); until
// then they are read as they are, so whoever sets the counter must treat
// an expired item as absent. The embedded store removes nothing by it.
const CounterExpires = "expires"
