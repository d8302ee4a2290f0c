// Package opsmodel holds the model-based operations test (design brief,
// invariant 14): TestOperationsModel drives a local heddle server
// (internal/localserver, in process, on its embedded store) through its
// public Go client with random interleavings of the ways in, and checks
// after every step, at quiescence and at the end that the invariants hold
// against a model of its own. The package has no code outside its tests.
//
// # The world
//
// Each check (one random sequence) starts its own server in a directory
// under the test's TempDir, a tenant "ops" (3 clusters, 6 nodes: small
// enough that creates and expands run into the quotas), the catalog of
// testdata/catalog.yaml (template "ops" on the local provider, template
// "sim" on the latency provider) and a pre-start webhook served by the
// test. The actions of the local nodes' services read a faults file the
// test writes: they succeed, fail, hang past their timeout, or fail one
// time in two, and are never retried.
//
// # The steps
//
// create (a free name, or any name once names are unique; template,
// size, sometimes a lease of 2 s that the janitor ends), two racing creates
// of one name, a catalog import racing a create, delete (plain and
// forced), expand, shrink (plain and forced), start, stop, restart,
// rolling restart, reconfigure (with and without restart), add and remove
// a service, sync to the latest template version, a rollback to a revision drawn
// from the cluster's history (every step of it, each job awaited), lease extension, abort,
// pause, resume and retry of a cluster's latest job, the faults mode, the
// hook's veto, a restart of the server on its data directory, a wait, and
// settle (wait for every job to end, resuming the paused ones).
//
// # The invariants
//
// After every step, with jobs in flight: the tenant's counters are within
// 0 and the quotas, the cluster counter equals the clusters that are not
// TERMINATED (read between two tenant reads that agree), live names are
// unique, every cluster listed was made by an accepted create and every
// accepted one is listed, a refused request (any 4xx, with a code and a
// sentence; a 5xx fails the check) started no job of the user's, made no
// cluster, moved no lease. A rollback step reads the cluster's history: its
// revisions are numbered once each, newest first, up to its last; and once
// the server answers that the rollback to N is done, the cluster's
// definition (template version, services, config, node count) has
// revision N's digest.
//
// At quiescence (settle, and the end of each check): every job of every
// cluster is terminal, the node counter equals the clusters' node counts
// and the nodes not DELETED, a TERMINATED cluster has none, every service
// of every node of an ACTIVE "ops" cluster carries a run state that is not
// failed (running after a successful create, start or restart, stopped
// after a stop), between two usage reports each cluster's node-hours grow
// by exactly its live nodes times the time between them, and every
// accepted mutation has a "done" audit record of its route and cluster.
//
// After every push of a metric (pushLoad, autoscale_test.go; the "sim"
// template has an autoscale policy): no decision of any cluster's policy
// is outside the policy's [min, max], each job a decision names is the
// policy's expand or shrink, and no job of a policy overlaps another job
// of its cluster (a user's, or the janitor's delete of an expired lease).
//
// At the end of each check, with faults and veto cleared and every policy
// brought to rest (a value at its target), the policies are checked again,
// then every live cluster's way out, a plain delete, is accepted and
// succeeds, and the counters come back to zero.
//
// # Budget and replay
//
// The default budget (TestMain: 5 checks of about 30 steps; a fifth of
// the checks and half the steps with -short) runs in `make test`.
// HEDDLE_OPSMODEL_CHECKS and HEDDLE_OPSMODEL_STEPS, or rapid's
// -rapid.checks and -rapid.steps, set others; `make opsmodel-long` runs a
// long budget. A failure prints the seed and the shrunk sequence of steps
// with every drawn value; run it again with
//
//	go test ./internal/opsmodel/ -run TestOperationsModel -rapid.seed=<seed>
//
// The server runs jobs concurrently with the steps, so a seed replays the
// steps exactly but not always the timing between them: rapid says
// "flaky" when a replay does not fail the same way.
//
// Steps that find a defect whose fix is under way are gated by the
// constants in opsmodel_test.go; each says what it leaves out until then.
package opsmodel
