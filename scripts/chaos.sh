#!/usr/bin/env bash
# make chaos: the long nemesis run on the local AWS topology
# (cmd/heddle-local-aws TestNemesisLong; docs/architecture.md, "Faults
# beyond kill -9"). Starts DynamoDB Local, fauxqs and 24 OpenSSH test hosts
# unless they run, runs it, and stops what it started. Outside CI: it takes
# tens of minutes. HEDDLE_CHAOS_SEED=N repeats a run's faults.
set -euo pipefail
cd "$(dirname "$0")/.."

started=()
cleanup() {
  for s in "${started[@]}"; do "$s" stop >/dev/null 2>&1 || true; done
}
trap cleanup EXIT

start() { # script: start it (unless already running) and import what its `env` prints
  local script=$1; shift
  if ! "$script" status >/dev/null 2>&1; then
    "$script" start "$@"
    started+=("$script")
  fi
  local vars
  vars="$("$script" env)"
  eval "$vars"
}

start scripts/dynamodb-local.sh
start scripts/fauxqs.sh
# Three tenants, each with two clusters of up to three nodes, each node's
# host behind a proxy of its own: 18 hosts, and a few to spare.
start scripts/sshd-hosts.sh 24

HEDDLE_CHAOS_LONG=1 go test -race -count=1 -timeout 60m -run 'TestNemesisLong$' -v ./cmd/heddle-local-aws
