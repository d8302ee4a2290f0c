// Package e2e holds the end-to-end test of the serverless path: the three
// Lambdas' handlers (functions/api, functions/worker, functions/janitor) run
// against DynamoDB Local and fauxqs, and a cluster of the demo catalog
// (docs/examples/catalog.yaml) is created on local-provider nodes, reached
// through its load balancer and deleted.
//
// The worker runs the worker Lambda's own handler (internal/sqsbatch), fed
// the SQS events the mapping would send. The API and janitor mains are
// package main, so the test builds them from the same pieces: the API is
// api.New over assemble.Build, adapted to API Gateway HTTP API (payload 2.0)
// events by httpadapter, as functions/api's newServicesHandler does; the
// janitor makes one engine.RunJanitor pass per scheduled event. What the Lambda service does
// around them is played by the test: the event source mapping receives up to
// 10 messages from the tenant's FIFO queue on fauxqs, invokes the worker with
// them (at most the tenant's worker count at once) and deletes the records
// the answer does not list; the EventBridge schedule invokes the janitor.
//
// Two things stand in for AWS: a key file (secrets.LoadOrCreateKeyFile)
// seals secrets instead of KMS, and the local provider, registered beside
// the AWS provider types, makes the nodes (SSH servers in the test process).
// The tenant's queue is created with sqsqueue.CreateTenantQueue, as
// onboarding does in AWS mode.
//
// The API Gateway events are golden fixtures under testdata/events, with
// ${NAME} placeholders for what each run makes (keys, ids); the janitor's
// event is testdata/scheduled-event.json.
//
// The test needs HEDDLE_DYNAMODB_ENDPOINT and HEDDLE_SQS_ENDPOINT:
//
//	scripts/dynamodb-local.sh start && eval "$(scripts/dynamodb-local.sh env)"
//	scripts/fauxqs.sh start && eval "$(scripts/fauxqs.sh env)"
//	go test -race -count=1 ./functions/e2e
//
// Without them it is skipped, except under CI=true, where it fails.
package e2e
