#!/usr/bin/env bash
# Runs heddle's whole test suite: starts the emulators and test hosts the
# conformance and SSH tests need, runs every Go test with the race detector,
# and stops what it started. This is the README's test command (make test).
set -euo pipefail
cd "$(dirname "$0")/.."

started=()
cleanup() {
  for s in "${started[@]}"; do "$s" stop >/dev/null 2>&1 || true; done
}
trap cleanup EXIT

start() { # script: start it (unless already running) and import what its `env` prints
  local script=$1; shift
  [ -x "$script" ] || return 0
  if ! "$script" status >/dev/null 2>&1; then
    "$script" start "$@"
    started+=("$script") # stop at exit only what this run started
  fi
  local vars
  vars="$("$script" env)" # a separate step, so set -e stops on a failed env
  eval "$vars"
}

start scripts/dynamodb-local.sh
start scripts/fauxqs.sh
start scripts/sshd-hosts.sh "${HEDDLE_SSH_HOST_COUNT:-4}"

go test -race -count=1 -timeout 20m ./... 2>&1 | tee /tmp/heddle-test.log
rc=${PIPESTATUS[0]}
passed=$(grep -c '^ok ' /tmp/heddle-test.log || true)
failed=$(grep -c '^FAIL' /tmp/heddle-test.log || true)
echo "packages: $passed passed, $failed failed"
exit "$rc"
