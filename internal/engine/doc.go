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
// A claim is READY -> RUNNING under the task's version; the attempt's
// deadline is a lease (TaskLease) that the worker's heartbeat renews, capped
// at the action's timeout plus DeadlineGrace, so the janitor notices a dead
// worker after a lease rather than after a 30-minute timeout.
//
// Success commits, in one transaction, the task's SUCCEEDED and one update
// per dependent (invariant 3). A dependent's count of remaining dependencies
// is a counter: a dependency that is not the last subtracts one on the
// condition that at least two remain, so siblings finishing at once do not
// conflict; the last one (the condition fails for the others, who re-read)
// makes it READY under its version, in the same transaction, and it is sent
// after the commit. Two shortcuts keep the queue out of the way:
//
//   - a join that becomes ready completes inside the same transaction (it is
//     bookkeeping, not work), as long as the transaction stays within 100
//     items;
//   - a dependent on the same node as the task that just succeeded is claimed
//     in that transaction instead of being sent (a continuation), and the
//     worker runs it at once. The worker still holds the message of the
//     node's queue group, so the node still runs one task at a time; the
//     transaction checks the job still runs, so a pause or failure meanwhile
//     sends the task through the queue instead.
//
// Writes per work task: its creation, its claim (or the continuation that
// readied it), its completion, and one subtraction per dependency beyond
// the first; plus the job's counters. BenchmarkNoopTasks prints the figure.
// Progress (done/total) is a view: workers count it in memory and write it
// once per job per ProgressInterval.
//
// # Retry
//
// Retry continues a FAILED or ABORTED job: its failed tasks (and those that
// were waiting out a backoff) get fresh attempts, what succeeded stays done,
// and the job takes its cluster's lock again; a job whose rollback had
// started continues its rollback; one that was rolled back has nothing to
// retry.
//
// # Janitor
//
// RunJanitor (a ticker in the local server, a scheduled Lambda in AWS) fails
// running attempts past their deadline, re-sends READY tasks that no worker
// claimed within ResendAfter (their message was lost), moves on jobs whose
// last step was lost (a FAILING job whose last task ended, a finish cut
// short), undoes submissions stuck PENDING, and hands clusters whose lease
// ran out to ExpireLease. Every action is conditional on what it read, so
// two janitors at once do no harm.
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
