// Package cluster is heddle's cluster service: it turns a user's request on a
// cluster into a job and hands it to the engine.
//
// Every mutation follows the same pipeline, the one the design brief draws:
//
//	read     the cluster, its nodes and its spec (what it was built from)
//	solve    solver: the layout after the operation, or why none exists
//	plan     planner: the task graph (and its rollback plan)
//	preview  a dry run stops here and returns planner.Preview
//	submit   engine.Submit: one conditional transaction takes the cluster's
//	         lock and the tenant's quota and checks the catalog revision the
//	         plan was made from; then tasks are written and the first sent
//
// A cluster is created from a template resolved at that moment; the resolved
// template, the provider, the hardware and image types and the services the
// cluster uses are kept with it (its spec), so later catalog edits never
// change a running cluster until the user syncs it. The spec also holds the
// cluster's SSH key, sealed with the Keyring, and the provider's user fields,
// sensitive ones sealed. The provisioning dispatcher reads the spec through
// Spec (it implements provision.Clusters).
//
// Leases: a cluster from a template with a lease policy expires at
// createdAt + initial (or the shorter lease the request asks for). Extend moves
// the expiry by at most the policy's step and never past createdAt + max. The
// janitor calls ExpireLease for clusters past their expiry, which submits an
// ordinary delete job.
package cluster
