package store

// TenantPK returns the partition key pk takes inside tenant's scope. Scoped
// applies it to every key; code that must write one tenant's items and a
// system item in the same transaction (an API key and its global hash lookup)
// builds the tenant's keys with it, so both agree on the layout.
func TenantPK(tenant, pk string) string { return "T#" + tenant + "#" + pk }
