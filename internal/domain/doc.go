// Package domain holds heddle's entities and the rules every one of them obeys
// on its own: the catalog an administrator writes (providers, hardware types,
// image types, services, cluster and partial templates), the tenants, users and
// API keys that own it, and the clusters, nodes, jobs and tasks heddle keeps.
//
// Decoding is strict (unknown fields and trailing data are errors) and
// validation reports every problem at once, each with the JSON path of the
// field it concerns, so an API caller can fix a whole document in one go.
// Rules that need more than one entity (a template naming a service that must
// exist) live with the catalog, not here.
package domain
