// Package audit keeps who did what: one record for every change asked of
// the API (catalog writes and imports, tenants, users, keys, cluster
// operations, job control), with who asked (user and key id, never the
// secret), what (method, route and the entity its path names), the request
// id and the outcome. Records live in the tenant's own partition of the
// store, newest first, so a tenant's admins read theirs and nothing else.
package audit
