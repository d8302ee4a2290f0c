#!/usr/bin/env bash
# heddle's AWS deployment on this machine, process for process, with no
# Docker and no AWS account (make local-aws, which builds bin/ and dist/local
# first): DynamoDB Local and fauxqs (started here unless already running),
# then bin/heddle-local-aws: the api, worker and janitor bootstraps under the
# Lambda Runtime API emulator, the HTTP API front door, the event source
# mappings, the janitor's schedule, KMS (moto's: a moto_server of its own)
# and `heddle worker`.
#
# The superadmin key is HEDDLE_BOOTSTRAP_KEY, or a new one printed here (the
# api function registers it on its cold start, as the BootstrapKey
# parameter does on AWS). Arguments go to heddle-local-aws (--listen,
# --stage, --janitor-every, ...; bin/heddle-local-aws -h lists them).
# Ctrl-C stops every process it started; the emulators it started stop too.
set -euo pipefail
cd "$(dirname "$0")/.."

started=()
cleanup() {
  for s in "${started[@]}"; do "$s" stop >/dev/null 2>&1 || true; done
}
trap cleanup EXIT
for script in scripts/dynamodb-local.sh scripts/fauxqs.sh; do
  if ! "$script" status >/dev/null 2>&1; then
    "$script" start
    started+=("$script")
  fi
  vars="$("$script" env)"
  eval "$vars"
done

if [ -z "${HEDDLE_BOOTSTRAP_KEY:-}" ]; then
  HEDDLE_BOOTSTRAP_KEY=$(bin/heddle keygen)
  echo "superadmin key (export HEDDLE_KEY=... for the CLI): $HEDDLE_BOOTSTRAP_KEY"
fi
export HEDDLE_BOOTSTRAP_KEY
bin/heddle-local-aws "$@"
