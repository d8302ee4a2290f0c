// Package metrics carries heddle's measurements out of the process: API
// requests by route and status with their latency, task attempts by action
// and outcome with the worker time they took, job durations by operation,
// janitor passes and what they did, and store operations and conflicts.
//
// Code that measures calls an Observer. The local server gives it a
// Prometheus registry served at GET /metrics (NewPrometheus); the Lambdas
// write CloudWatch Embedded Metric Format lines to their logs (NewEMF), which
// CloudWatch turns into metrics with no API call. Queue depth and in-flight
// messages come from the queues themselves: memqueue reports them to the
// Prometheus registry locally, and on AWS SQS publishes them natively
// (ApproximateNumberOfMessagesVisible, ...NotVisible), which template.yaml's
// alarms use.
package metrics
