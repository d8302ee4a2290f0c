#!/usr/bin/env bash
# cost-model.sh: the control-plane cost model of issue 8 (item 7).
#
#   scripts/cost-model.sh
#
# Runs a 100-node create and then its delete through the engine on the
# embedded store and the in-process queue, twice (actions waited on by the
# worker Lambda, and detached actions polled through the queue), with
# counting wrappers around the store and the queue and a model of the worker
# Lambda (service actions 30 s; node-level actions at EC2's times: boot 75 s
# and SSH 15 s after, waited in place or parked and polled), and prints the DynamoDB, SQS and Lambda requests and GB-seconds,
# their price in USD at published on-demand us-east-1 prices, and the idle
# cost of one tenant a month, each against its target ($0.05 per 100-node
# create and delete, $0.50 a month idle). The model, its prices and its
# assumptions are in internal/engine/cost_test.go; it runs
#
#   go test -run '^$' -bench CostModel -benchtime 1x ./internal/engine
#
# in about half a minute (simulated time runs 1000 times faster than the
# modeled 30 s actions). A plain `go test ./...` does not run it.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

out="$(go test -run '^$' -bench 'CostModel' -benchtime 1x -count 1 ./internal/engine 2>&1)" || {
	printf '%s\n' "$out" >&2
	echo "cost-model: the benchmark failed" >&2
	exit 1
}
# The report, without go test's own benchmark lines.
printf '%s\n' "$out" | grep -Ev '^(goos|goarch|pkg|cpu|BenchmarkCostModel|PASS$|ok[[:space:]])'
