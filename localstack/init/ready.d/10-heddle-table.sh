#!/bin/bash
# Creates heddle's table as template.yaml defines it (keys pk/sk, sparse
# index gsi1 on gpk/gsk), so the API can run against LocalStack.
set -euo pipefail
table="heddle-${HEDDLE_STAGE:-dev}"
if awslocal dynamodb describe-table --table-name "$table" >/dev/null 2>&1; then
  echo "heddle: table $table exists"; exit 0
fi
awslocal dynamodb create-table --table-name "$table" --billing-mode PAY_PER_REQUEST \
  --attribute-definitions AttributeName=pk,AttributeType=S AttributeName=sk,AttributeType=S \
                          AttributeName=gpk,AttributeType=S AttributeName=gsk,AttributeType=S \
  --key-schema AttributeName=pk,KeyType=HASH AttributeName=sk,KeyType=RANGE \
  --global-secondary-indexes 'IndexName=gsi1,KeySchema=[{AttributeName=gpk,KeyType=HASH},{AttributeName=gsk,KeyType=RANGE}],Projection={ProjectionType=ALL}'
awslocal dynamodb update-time-to-live --table-name "$table" \
  --time-to-live-specification Enabled=true,AttributeName=c_expires
echo "heddle: created table $table"
