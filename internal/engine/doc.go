// Package engine runs jobs: it writes a planned job to the store, hands ready
// tasks to workers through the tenant's queue, records every attempt, makes
// dependents ready the moment their last dependency succeeds, retries, rolls
// back, and finishes the job. The store is the only truth (invariant 1): a
// queue message carries a task reference and nothing else, and every state
// change is a conditional write (invariant 2), so duplicates, crashes and
// racing workers cannot run an attempt twice or lose work.
//
// # Items (under the tenant's scope)
//
//	CLUSTERS            <cluster>   the cluster; ActiveJobID is its lock (invariant 4)
//	NODES#<cluster>     <node>      one per node
//	JOBS#<cluster>      <job>       the job; counters sinks and rollbackSinks
//	TASKS#<job>         <task>      one per task (forward and rollback plans)
//
// and, unscoped, the tenant item whose free counters hold its quotas
// (invariant 5). Three partitions of the sparse index drive the janitor:
// RUNNING#<shard> (running tasks by deadline), READY#<shard> (ready tasks by
// when they became ready) and JOB#<shard> (unfinished jobs by last change).
//
// # Submission (crash-safe beyond 100 items)
//
//  1. One transaction takes the cluster lock, takes quota, checks the
//     catalog revision the plan was made from, and writes the job PENDING.
//  2. Nodes and tasks are written in batches. Nothing acts on a PENDING job.
//  3. One conditional write moves the job PENDING -> RUNNING; then the tasks
//     with no dependencies are sent.
//
// A crash before 3 leaves a PENDING job that the janitor undoes after
// SubmitTimeout (job FAILED, lock and quota released, nothing ran); the
// janitor's first write is conditional on PENDING, so a slow submitter's
// step 3 then fails instead of racing it. A crash after 3 leaves READY tasks
// that the janitor re-sends.
//
// # Task lifecycle
//
//	BLOCKED --(last dependency succeeds)--> READY --(claim, attempt n)--> RUNNING
//	RUNNING --(success)--> SUCCEEDED
//	RUNNING --(failure, attempts left)--> READY (attempt n+1, after a backoff)
//	RUNNING --(failure, none left; or deadline passed and none left)--> FAILED
//
// A claim is READY -> RUNNING under the task's version. Success commits, in
// one transaction, the task's SUCCEEDED and each dependent's count of
// remaining dependencies, each under its version (invariant 3); a dependent
// whose count reaches zero becomes READY in that same write and is sent after
// the commit. Writes per task: the claim, the task's completion and one per
// dependent (the planner bounds dependents at 32), plus the job's sink
// counter for tasks nothing depends on. Joins (zero-work tasks) skip the
// claim. Progress (done/total) is counted in batches per worker receive, as a
// view only.
//
// # Failure and rollback
//
// A task out of attempts fails the job (RUNNING -> FAILING). Once no forward
// task is running, a job with a rollback plan (create, expand) releases the
// rollback plan's roots and becomes ROLLING_BACK; when the rollback's sinks
// are done the job is FAILED and the cluster gets the status the operation
// declared for "rolled back" (a failed create: TERMINATED). A job without a
// rollback plan, or whose rollback fails, is FAILED and the cluster gets the
// failure status (INCONSISTENT, or FAILED for a create). Tasks still BLOCKED
// or READY in a failed job are never run; the API shows them as canceled.
package engine
