// Package tenantmove exports one tenant's data from a heddle deployment and
// imports it into another (or the same one, after a loss): the catalog with
// every version (script resources too), users and their API keys, and clusters with their nodes,
// jobs and tasks, and the static pools' hosts. It works on any store.Store,
// so on the embedded store and on DynamoDB alike, and it is what
// `heddle tenant export`, `heddle tenant import` and `heddle migrate` drive
// through GET /v1/tenant/export and POST /v1/tenant/import.
//
// An export is a walk of the tenant's partitions in a fixed order, paged:
// each page holds at most MaxPageRecords records and about MaxPageBytes of
// item data, and ends with a cursor that says where the walk stands (a
// stack of partitions and the last sort key done in each). A record is a
// store item as it is (partition key inside the tenant's scope, sort key,
// status, counters, index entry, body), but for its secrets.
//
// Secrets. Items hold values sealed under the deployment's master key
// (provider credentials, cluster SSH keys, static hosts' login keys), each
// bound to a binding that names the tenant and the thing it belongs to. A
// sealed value is useless under another deployment's key, so the export
// opens each one, seals it to the recipient's X25519 public key (NaCl
// anonymous box) and puts Placeholder in its place. Only the holder of the
// recipient's private key (the CLI that asked for the export) can open it;
// it sends the plaintext to the target's API in the import request, over
// the same authenticated channel an admin uses to create a provider with
// its credentials, and the target seals it under its own key with the
// same binding. A sealed value at a place this package does not know the
// binding of stops the export (ErrUnknownSecret): it is never carried as
// ciphertext that cannot open, nor as plaintext.
//
// API keys are carried as their SHA-256 hashes, with the global lookup
// item rebuilt on import: users keep the keys they have and only change
// the endpoint. A key is 32 random bytes, so its hash reveals nothing
// usable; re-issuing every key would make a move a flag day for every
// script and person of the tenant.
//
// Import writes each record only where its key is free, under a
// MustNotExist condition, in transactions of at most store.MaxTransactItems
// operations and store.MaxTransactBytes. A record whose key already holds
// an equivalent item (the same body, status and index once sealed values
// are set aside; for a user, the same role) is left alone and counted as
// kept, so an import run again after a failure half way writes only what
// is missing. A key that holds something else is a Conflict, found by the
// check pass before anything is written. A live cluster's record takes its
// cluster and its NodeCount nodes from the tenant's quota counters in the
// same transaction, so the counters still equal what exists.
//
// Not carried: the audit trail, cluster events and usage records (history
// that stays readable on the source), jobs' delivery records (what became
// of deliveries from the source's queues, engine/deadletter.go; a job's
// end deletes them, and an export refuses a running job), webhook
// endpoints and trusted
// identity issuers (registered again on the target: their secrets and
// global lookups are per deployment), and clusters of the local provider,
// whose nodes are processes of the source machine: they are listed in the
// page's Skipped with the reason.
package tenantmove
