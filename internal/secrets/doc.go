// Package secrets keeps heddle's secrets encrypted at rest and out of logs:
// the per-cluster SSH key pairs the automator logs in with, and the sensitive
// fields of providers (cloud credentials, host login keys).
//
// Encryption is envelope encryption. Every sealed value has its own fresh
// 256-bit data key; the value is encrypted with AES-256-GCM under that data
// key, and the data key is wrapped by a master key that never leaves its
// keeper: a local key file for the embedded all-in-one server (LocalKey), or
// an AWS KMS key in AWS (KMSKey), where the wrapping and unwrapping happen
// inside KMS and IAM decides who may unwrap. A Keyring seals with one master
// key and opens with any it knows, so a master key can be rotated by adding
// the new one in front.
//
// Every sealed value is bound to a Binding (tenant, cluster, purpose): the
// binding is the KMS encryption context and the GCM additional data, so a
// sealed value copied into another tenant's item, or from a provider field to
// a cluster key, does not open.
//
// Plaintext secrets in memory travel as Secret and SSHKey, whose String,
// GoString, LogValue and JSON forms are "[REDACTED]": a secret that reaches
// a log line or an API response by mistake shows nothing.
package secrets
