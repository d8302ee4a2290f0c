// Package kmsemu is a stand-in for AWS KMS that speaks KMS's JSON protocol
// (POST /, X-Amz-Target: TrentService.<Operation>, application/x-amz-json-1.1)
// for exactly the operations heddle's functions call through
// secrets.KMSKey: GenerateDataKey (AES_256 data keys) and Decrypt, with the
// encryption context bound into the ciphertext as KMS binds it. fauxqs and
// DynamoDB Local do not emulate KMS, and the functions have no weaker
// local-only branch: under make local-aws they run their production path
// against this server (AWS_ENDPOINT_URL_KMS).
//
// The key material is a secrets.LocalKey (a key file), so a data key is
// wrapped with AES-256-GCM under the master key with the encryption context
// as additional data; the ciphertext blob names its key's ARN, so Decrypt
// with another KeyId answers IncorrectKeyException and a wrong context
// InvalidCiphertextException, which secrets.KMSKey treats as KMS's own.
// Any other operation answers UnknownOperationException: a call heddle
// starts making shows up as a failure, not as a silent success.
package kmsemu
