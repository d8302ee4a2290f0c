#!/bin/bash
# Creates the KMS key that seals heddle's secrets, named by the alias
# alias/heddle-<stage> (template.yaml's SecretsKeyAlias), so that
# HEDDLE_KMS_KEY_ID=alias/heddle-<stage> works against LocalStack.
set -euo pipefail
alias="alias/heddle-${HEDDLE_STAGE:-dev}"
if awslocal kms describe-key --key-id "$alias" >/dev/null 2>&1; then
  echo "heddle: key $alias exists"; exit 0
fi
key=$(awslocal kms create-key --description "heddle-${HEDDLE_STAGE:-dev} data and secrets" \
  --query KeyMetadata.KeyId --output text)
awslocal kms create-alias --alias-name "$alias" --target-key-id "$key"
echo "heddle: created key $key as $alias"
