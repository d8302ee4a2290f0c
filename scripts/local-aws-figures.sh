#!/usr/bin/env bash
# local-aws-figures.sh: issue 16's figures from the AWS topology on this
# machine (cmd/heddle-local-aws's TestFigures): each function's cold start
# (process start to first answer, through Lambda's Invoke) and warm latency,
# median and range of five runs, and the invocations and billed
# milliseconds of a 100-node create and of its delete on the OpenSSH test
# hosts, to set beside scripts/cost-model.sh. It needs DynamoDB Local,
# fauxqs and the 50 OpenSSH hosts running (their scripts' `env` in the
# environment, as make test arranges) and takes a few minutes.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
: "${HEDDLE_DYNAMODB_ENDPOINT:?run scripts/dynamodb-local.sh start and eval its env}"
: "${HEDDLE_SQS_ENDPOINT:?run scripts/fauxqs.sh start and eval its env}"
: "${HEDDLE_SSH_HOSTS:?run scripts/sshd-hosts.sh start 50 and eval its env}"
out="$(HEDDLE_LOCAL_AWS_FIGURES=1 go test -count=1 -v -timeout 30m -run '^TestFigures$' ./cmd/heddle-local-aws 2>&1)" || {
	printf '%s\n' "$out" >&2
	echo "local-aws-figures: the run failed" >&2
	exit 1
}
printf '%s\n' "$out" | grep 'FIGURE' | sed 's/^.*FIGURE //'
