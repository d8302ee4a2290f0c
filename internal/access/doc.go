// Package access keeps tenants, users and API keys, and answers who a request
// is: Authenticate turns a bearer key into a Principal (tenant, user, role).
//
// An API key is 32 random bytes, shown once when it is made; heddle stores only
// its SHA-256 hash. A high-entropy secret needs no slow hash: nobody can guess
// a preimage, and authentication stays one lookup. The hash is the key of a
// system item (PK "APIKEYS") pointing at the tenant and user; the tenant's own
// list of keys lives under the tenant's scope, and both are written in one
// transaction so a key can never exist without being listed and revocable.
//
// Quotas are kept as free counters on the tenant item (freeClusters,
// freeNodes): taking capacity is "add -n if free >= n", a single conditional
// write that can never overshoot, and lowering a quota below what is in use is
// refused by the same condition.
package access
