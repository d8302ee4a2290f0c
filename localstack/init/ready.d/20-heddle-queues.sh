#!/bin/bash
# Creates one tenant's queues as internal/queue/sqsqueue's CreateTenantQueue
# does at onboarding: a FIFO dead-letter queue kept 14 days, and the FIFO
# queue in high-throughput mode (deduplication and throughput per message
# group), visibility 15 minutes, moved to the dead-letter queue after 5
# receives. Names: heddle-<stage>-<tenant>.fifo and ..._dlq.fifo, the tenant
# encoded as sqsqueue does ('_' -> '__', '.' -> '_-').
set -euo pipefail
prefix="heddle-${HEDDLE_STAGE:-dev}-"
tenant="${HEDDLE_TENANT:-demo}"
enc=$(printf '%s' "$tenant" | sed -e 's/_/__/g' -e 's/\./_-/g')
queue="${prefix}${enc}.fifo"
dlq="${prefix}${enc}_dlq.fifo"

dlq_url=$(awslocal sqs create-queue --queue-name "$dlq" \
  --attributes FifoQueue=true,MessageRetentionPeriod=1209600 \
  --query QueueUrl --output text)
dlq_arn=$(awslocal sqs get-queue-attributes --queue-url "$dlq_url" \
  --attribute-names QueueArn --query Attributes.QueueArn --output text)

attrs=$(printf '{"FifoQueue":"true","DeduplicationScope":"messageGroup","FifoThroughputLimit":"perMessageGroupId","VisibilityTimeout":"900","RedrivePolicy":"{\\"deadLetterTargetArn\\":\\"%s\\",\\"maxReceiveCount\\":5}"}' "$dlq_arn")
awslocal sqs create-queue --queue-name "$queue" --attributes "$attrs" >/dev/null
echo "heddle: queues $queue and $dlq ready for tenant $tenant"
