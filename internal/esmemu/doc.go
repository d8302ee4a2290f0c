// Package esmemu is the Lambda service's event source mappings for
// make local-aws: the Lambda API's event-source-mappings operations
// (Create, Get, List, Update, Delete over Lambda's REST-JSON protocol at
// /2015-03-31/event-source-mappings/) and Invoke
// (/2015-03-31/functions/{name}/invocations), and, for every enabled
// mapping, the pollers that read the SQS queue and invoke the function as
// Lambda's do. Tenant onboarding (internal/onboard/awsonboard) makes its
// mappings through this API with the SDK's own Lambda client
// (AWS_ENDPOINT_URL_LAMBDA), exactly as in AWS, and what it asked for is
// what the pollers do:
//
//   - BatchSize: each receive asks for that many messages (at most 10 on a
//     FIFO queue, as Lambda requires); MaximumBatchingWindowInSeconds keeps
//     receiving until the batch is full or the window is over, and is
//     refused on a FIFO queue, as Lambda refuses it;
//   - ScalingConfig.MaximumConcurrency: that many pollers each run one
//     batch at a time, so at most that many invocations run at once
//     (2 to 1000, as Lambda allows); SQS's message groups keep a FIFO
//     queue's order across them;
//   - FunctionResponseTypes [ReportBatchItemFailures]: the records the
//     function lists in batchItemFailures stay in the queue and the others
//     are deleted; a failed invocation or an answer that cannot be read
//     leaves the whole batch, as Lambda does;
//   - the queue's own visibility timeout and redrive policy: the pollers
//     delete nothing they were not told to, so a record that keeps failing
//     comes back after the visibility timeout until the queue's
//     maxReceiveCount moves it to the dead-letter queue, which fauxqs does
//     itself, as SQS does. A mapping whose function's timeout exceeds the
//     queue's visibility timeout is refused, as Lambda refuses it.
//
// Each record is the events.SQSMessage Lambda makes: messageId,
// receiptHandle, body, the system attributes (ApproximateReceiveCount,
// SentTimestamp, MessageGroupId, MessageDeduplicationId, SequenceNumber,
// ...), messageAttributes, md5OfBody, eventSource aws:sqs, eventSourceARN
// and awsRegion.
//
// Mappings live in memory: a restart of make local-aws forgets them, and a
// tenant's PUT /v1/tenants/{id} (awsonboard's Resize) makes its mapping
// again.
package esmemu
