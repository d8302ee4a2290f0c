// Package localserver assembles heddle as one local process, the default for
// a new user (like Sahara's sahara-all): the /v1 API on a plain HTTP
// listener, the cluster service, the engine over a bbolt file and the
// in-process queue, one worker pool per tenant sized by its worker count, a
// janitor ticker, the local provider (nodes as SSH servers inside this
// process) and the shell automator. It is what `heddle server` runs and what
// end-to-end tests start. The AWS Lambdas assemble the same services over
// DynamoDB and SQS instead.
//
// Restarts: everything lives in the store, and the in-process queue is
// rebuilt at start by sending every READY task again; attempts that were
// RUNNING when the process died fail when their lease runs out and are
// retried, so in-flight jobs continue.
package localserver
