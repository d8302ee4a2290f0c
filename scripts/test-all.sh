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
# 50 OpenSSH hosts: the "50 hosts at once" tests (internal/sshexec
# TestFiftyHostsAtOnce, internal/automator/shell TestManyNodesAtOnce) use
# one host each, and the shell test skips its OpenSSH case with fewer.
# Starting 50 takes about a second (measured: 1.2 s with new host keys,
# 0.9 s with kept ones).
ssh_hosts="${HEDDLE_SSH_HOST_COUNT:-50}"
# Servers left running by an earlier `start` with a smaller count satisfy
# `status`; top them up (start only adds the missing ones) and leave them
# running at exit, as they were found.
if status=$(scripts/sshd-hosts.sh status 2>/dev/null) &&
  [[ "$status" =~ ^([0-9]+)\ of\ ([0-9]+) ]] && ((BASH_REMATCH[2] < ssh_hosts)); then
  scripts/sshd-hosts.sh start "$ssh_hosts"
fi
start scripts/sshd-hosts.sh "$ssh_hosts"

go test -race -count=1 -timeout 20m ./... 2>&1 | tee /tmp/heddle-test.log
rc=${PIPESTATUS[0]}
passed=$(grep -c '^ok ' /tmp/heddle-test.log || true)
failed=$(grep -c '^FAIL' /tmp/heddle-test.log || true)
echo "packages: $passed passed, $failed failed"
exit "$rc"
