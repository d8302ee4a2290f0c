#!/usr/bin/env bash
# ec2-smoke.sh: a real smoke test of heddle's ec2 provider. It launches one
# instance with the ClientToken, key pair and tags heddle uses, repeats the
# create (which must return the same instance), waits until the instance
# answers SSH with the generated cluster key, and terminates it (and deletes
# its key pair) again. It costs a few minutes of one small instance.
#
# Without AWS credentials it prints a "skipped" line and exits 0, so it is
# safe in any test run. With credentials it needs:
#
#   HEDDLE_EC2_AMI                an AMI in the region (for example Debian 12)
#   HEDDLE_EC2_REGION             default: AWS_REGION or AWS_DEFAULT_REGION
#   HEDDLE_EC2_SSH_USER           the AMI's login user (default: admin, Debian's)
#   HEDDLE_EC2_INSTANCE_TYPE      default: t3.micro
#   HEDDLE_EC2_SUBNET_ID          default: the default VPC's default subnet
#   HEDDLE_EC2_SECURITY_GROUP_IDS comma-separated; they must allow SSH (22)
#                                 from this machine (default: the VPC's default group)
#   HEDDLE_EC2_USE_PUBLIC_IP      true (default) or false, when this machine is in the VPC
#
# The credentials need ec2:RunInstances, DescribeInstances, TerminateInstances,
# ImportKeyPair, DescribeKeyPairs, DeleteKeyPair and CreateTags.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

have_credentials() {
	[[ -n "${AWS_ACCESS_KEY_ID:-}" && -n "${AWS_SECRET_ACCESS_KEY:-}" ]] && return 0
	[[ -n "${AWS_PROFILE:-}" || -n "${AWS_WEB_IDENTITY_TOKEN_FILE:-}" ]] && return 0
	[[ -n "${AWS_CONTAINER_CREDENTIALS_RELATIVE_URI:-}" || -n "${AWS_CONTAINER_CREDENTIALS_FULL_URI:-}" ]] && return 0
	[[ -s "${AWS_SHARED_CREDENTIALS_FILE:-$HOME/.aws/credentials}" ]] && return 0
	return 1
}

if ! have_credentials; then
	echo "ec2-smoke: skipped: no AWS credentials (set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE, to run it)"
	exit 0
fi

export HEDDLE_EC2_REGION="${HEDDLE_EC2_REGION:-${AWS_REGION:-${AWS_DEFAULT_REGION:-}}}"
if [[ -z "$HEDDLE_EC2_REGION" ]]; then
	echo "ec2-smoke: AWS credentials are present but no region: set HEDDLE_EC2_REGION (or AWS_REGION)" >&2
	exit 2
fi
if [[ -z "${HEDDLE_EC2_AMI:-}" ]]; then
	echo "ec2-smoke: AWS credentials are present but HEDDLE_EC2_AMI is unset: set it to an AMI in $HEDDLE_EC2_REGION whose login user is HEDDLE_EC2_SSH_USER (default admin)" >&2
	exit 2
fi
export HEDDLE_EC2_SSH_USER="${HEDDLE_EC2_SSH_USER:-admin}"
export HEDDLE_EC2_INSTANCE_TYPE="${HEDDLE_EC2_INSTANCE_TYPE:-t3.micro}"
export HEDDLE_EC2_USE_PUBLIC_IP="${HEDDLE_EC2_USE_PUBLIC_IP:-true}"
export HEDDLE_EC2_SMOKE=1

echo "ec2-smoke: launching one $HEDDLE_EC2_INSTANCE_TYPE from $HEDDLE_EC2_AMI in $HEDDLE_EC2_REGION"
exec go test -count=1 -timeout 20m -run '^TestEC2Smoke$' -v ./internal/provider/ec2/
