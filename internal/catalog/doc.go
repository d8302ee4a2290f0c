// Package catalog keeps each tenant's versioned catalog: providers, hardware
// types, image types, services, partial and cluster templates.
//
// A PUT writes version max+1 and keeps every earlier version readable; a GET
// returns the latest or a named version; a DELETE is refused, naming the
// referrers, while a template or a live cluster still refers to the entity.
//
// # Storage
//
// Under the tenant's scope (store.Scoped), each entity has a head item
// (PK "CAT#<kind>", SK name) holding the latest version's body and status
// (live or deleted), and one item per version (PK "CAT#<kind>#<name>",
// SK the zero-padded version). Every write transaction also conditionally
// bumps one catalog revision item (PK "CAT", SK "REV"): catalog writes of a
// tenant are therefore serialised, so a delete whose referrer scan saw no
// referrer cannot commit after a template that refers to it was written, and
// cluster creation can check the revision it resolved against.
//
// # Staged imports
//
// A write whose items do not fit in one store transaction (an import of 50
// entities or more, or over 4 MB) is staged: an import record and manifest
// (PK "CAT#IMP"), then every new version item with the status
// "staged:<id>", invisible because its head still names the previous
// version; then one transaction flips the revision item to "importing
// <id>" on the condition that it is still at the version the import read,
// and marks the record committed; then the heads are rolled forward and the
// revision goes back to idle. Every read settles the revision first (a
// reader that finds an import rolling forward finishes it), and reads of many
// items (List, Export) read again when the revision moved meanwhile, so no
// reader sees a part of an import. An import that dies before its flip
// leaves the old catalog current. It is dead once its lease (StagingLease,
// renewed while it stages) runs out, or at once, under WithSoleWriter, when
// another process recorded it; CollectStaged (the janitor's hourly pass)
// deletes what a dead import staged, and a write that needs one of its
// version numbers aborts it first and takes the number back. See staged.go.
//
// # Templates
//
// Resolve merges a cluster template with what it extends and includes, in
// Coopr's order (the parent's includes, the parent, its own includes, itself),
// and refuses overrides of keys an immutable partial template fixed. Cluster
// creation calls it; Coopr never resolved templates there.
//
// # Write-time rules
//
// A write is refused, at the field, when cluster creation would refuse what
// it refers to: a pinned script_version the script does not have, templates
// that extend or include each other in a cycle, services whose install or
// runtime requires and uses form a cycle (see rules.go). They run in the
// write transaction's view, for a PUT and an import of any size alike, and a
// refused write changes nothing. Writing an entity's latest content again
// writes nothing and says so (OutcomeUnchanged); WriteScriptText, a script's
// bare text, keeps the label and description of its latest version.
//
// # Providers
//
// With WithProviders (the local server and any deployment with provider
// plugins), a provider entity written by Put or Import is checked against
// its type in the provider registry (paths "providerType" and
// "fields.<name>"), and its sensitive fields are sealed with the keyring,
// bound to the tenant, the provider and the field, before anything is
// stored. A field sent as "[REDACTED]" (what every read shows) keeps the
// stored value, and a plaintext equal to what the stored sealed value opens
// to keeps that sealed value, so writing the same provider again is still a
// no-op although each sealing gives different bytes. Get, List, Versions
// and Export return the stored, sealed form for heddle's own use; the API
// passes every entity it answers with through Redacted (RedactedDocument
// for an export).
package catalog
