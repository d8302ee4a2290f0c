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
// time in two, and are never retried. With OpenSSH hosts
// (scripts/sshd-hosts.sh, HEDDLE_SSH_HOSTS) the tenant also has a static
// pool of 3 of them (provider "pool", template "static"; static_test.go),
// fewer than its quota of nodes, so the pool runs out first. Without them
// the static part is left out and the test says so, except under CI=true,
// where it fails. The server's ERROR lines go to the check's log, which
// rapid prints with a failing sequence.
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
// settle (wait for every job to end, resuming the paused ones). The later
// steps, each in a file of its own:
//
//   - staticPool (static_test.go): a create on the static pool (refused
//     pool_exhausted, naming the pool, when its free hosts are too few), and
//     an operator's drain or readmit of a host; the ordinary steps expand,
//     shrink and delete the pool's clusters.
//   - applyRace (apply_test.go): two `heddle apply` of one document at once,
//     each planning with internal/desired before either sends its first step.
//   - backupWhileBusy (backup_test.go): a backup as `heddle backup` takes it,
//     with jobs running, restored as `heddle restore` does and opened by a
//     server with no workers.
//   - importOrphaned (import_test.go): a staged import (120 entities) whose
//     request is cut short after a drawn delay, then another import.
//   - failedAddExpand (inconsistent_test.go): an add-services that fails or
//     is aborted, a successful expand, then the failed add's retry.
//   - killImport, killBackup (kill_test.go, the kill variant only): a kill -9
//     during a staged import, or during a backup, and a start.
//
// Each step's comment says which path gives back the reservations
// (quota, cluster lock, name, pool hosts, staged versions) it takes.
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
// accepted mutation has a "done" audit record of its route and cluster,
// and the static pool's hosts agree with the nodes: none WIPING or DIRTY,
// each TAKEN one held by one live node of the pool's clusters, each ACTIVE
// node of theirs holding one.
//
// The steps check their own: at most one create of a name is accepted
// however many applies race; a backup restores to one consistent store (the
// clusters known before it, none unknown, counters equal to what the
// clusters hold, a cluster's lock and its job's state agreeing, a cluster no
// job holds counting exactly its live nodes) and leaves no temporary copy;
// an import right after one cut short, or killed, succeeds at once; after a
// kill during a backup and a start, no temporary copy is left; a successful
// expand leaves an INCONSISTENT cluster INCONSISTENT, and the failed add's
// retry makes it ACTIVE with every service's run state.
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
// # The kill -9 variant
//
// With HEDDLE_OPSMODEL_KILL=1 (make opsmodel-kill, outside CI) each
// check's server is a child process (this test binary run again, serving
// the local server on its data directory: TestMain, kill_test.go), every
// restart step is a SIGKILL followed by a start, and killImport and
// killBackup kill it mid-request. Nothing the dead process held is given
// back by it: the next process, its janitor and the next requests must.
//
// Steps that find a defect whose fix is under way are gated by the
// constants in opsmodel_test.go; each says what it leaves out until then.
package opsmodel
