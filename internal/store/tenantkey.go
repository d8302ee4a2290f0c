package store

import "strings"

// TenantPK returns the partition key pk takes inside tenant's scope. Scoped
// applies it to every key; code that must write one tenant's items and a
// system item in the same transaction (an API key and its global hash lookup)
// builds the tenant's keys with it, so both agree on the layout.
func TenantPK(tenant, pk string) string { return "T#" + tenant + "#" + pk }

// TenantOf splits a partition key written by TenantPK into the tenant and the
// key inside its scope. System code that finds items through the (unscoped)
// index uses it to learn whose item it holds.
func TenantOf(pk string) (tenant, rest string, ok bool) {
	after, ok := strings.CutPrefix(pk, "T#")
	if !ok {
		return "", "", false
	}
	tenant, rest, ok = strings.Cut(after, "#")
	return tenant, rest, ok && tenant != ""
}
