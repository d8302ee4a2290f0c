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
//	TASKS#<job>         <task>      one per task that needs one (below)
//	DEFERRED#<job>      <n>         chunks: forward tasks with at most one dependency
//	ROLLBACK#<job>      <n>         chunks: the rollback plan
//	TASKIDX#<job>       <key>       a big job's task index, written once (taskindex.go)
//	DELIVERIES#<job>    <task>#<n>  deliveries of attempt n's messages that went wrong (deadletter.go), deleted at the job's end
//
// A task gets an item when it first needs one: a task with two dependencies
// or more at submission (its remaining count lives there), a root when a
// worker claims it, a task with one dependency when the transaction that
// completes that dependency readies it, a rollback task when the job fails
// (see chunks.go). Until then its definition in the job's chunks says what
// it is: a root is READY, any other BLOCKED. Most jobs succeed, so most
// never write their rollback plan's tasks at all.
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
//  2. Nodes, the tasks that need an item and the chunks are written in
//     batches. Nothing acts on a PENDING job.
//  3. One conditional write moves the job PENDING -> RUNNING; then the tasks
//     with no dependencies are sent.
//
// A step 2 longer than a request should take is staged instead: the
// request writes its ops as a few items and answers with the job PENDING,
// and ContinueSubmission, in the background and in every janitor pass,
// writes them and takes step 3 (stage.go).
//
// A crash before 3 leaves a PENDING job that the janitor undoes after
// SubmitTimeout (job FAILED, lock and quota released, nothing ran); the
// janitor's first write is conditional on PENDING, so a slow submitter's
// step 3 then fails instead of racing it. Such a job, like one a pre-start
// hook refused, is withdrawn: its new nodes are DELETED, the nodes it
// changed are put back from its undo items (nodeundo.go), and a retry
// submits it again, taking back the lock, quota and name in one
// transaction and making its node changes again (withdraw.go; names.go
// for name reservations). A crash after 3 leaves roots that
// no worker claims: when nothing else of the job is READY or RUNNING and
// the job started more than ResendAfter ago, the janitor gives them an item,
// READY, and sends them again (a resume, a retry and ResendReady do too).
//
// # Task lifecycle
//
//	BLOCKED --(last dependency succeeds)--> READY --(claim, attempt n)--> RUNNING
//	RUNNING --(executor asks to be polled)--> RUNNING, parked (see below)
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
//     bookkeeping, not work), as long as the transaction stays within
//     maxInlineItems; a wider one completes right after the commit, in a
//     transaction of its own, by the same worker (not through the queue:
//     the round trip would give its dependents' other dependencies time
//     to complete and cancel it; if the worker dies first the janitor
//     sends it, READY, like any task);
//   - a dependent on the same node as the task that just succeeded is claimed
//     in that transaction instead of being sent (a continuation), and the
//     worker runs it at once. The worker still holds the message of the
//     node's queue group, so the node still runs one task at a time; the
//     transaction checks the job still runs, so a pause or failure meanwhile
//     sends the task through the queue instead.
//
// A failed attempt with attempts left goes back to READY with ReadyAt after
// its backoff, and its message is sent again; a worker that receives it
// early keeps it (its visibility set to the wait) instead of acknowledging
// it.
//
// A canceled completion (another dependency of a dependent completed
// between the reads and the commit) reads again after a random wait of up
// to 10 ms per attempt so far, so the completions under way land first.
//
// Writes per work task: its creation (only for tasks with two dependencies
// or more), its claim (or the continuation that readied it), its
// completion, one subtraction per dependency beyond the first, and every op
// of a canceled transaction; plus its node's share (created, then marked at
// the job's end, with one usage record per transaction of that end, not
// per node) and the job's counters. BenchmarkNoopTasks prints the figure;
// for a 100-node create it is about 3.85 (0.34 creations, 0.17 node items,
// 0.27-0.49 claims, 2.52 completions with their dependents' updates, 0.17
// node statuses at the end, the rest canceled transactions: 0.1-0.2,
// mostly wide joins' completions canceled by a dependent's other
// dependency completing meanwhile).
// Progress (done/total) is a view: workers count it in memory and write it
// once per job per ProgressInterval.
//
// # Detached attempts (polls)
//
// An executor that starts something which runs on without it (the shell
// automator's detached scripts) answers Result.PollAfter with an opaque
// PollState instead of waiting. The engine then parks the attempt: it stays
// RUNNING, a task param (pollParam) records the attempt, its poll state,
// when the next poll is due and the message that carries the polls, and the
// delivery is kept with its visibility set to PollAfter (the Disposition
// Delay that retries use), so the worker is free and the node's queue group
// stays blocked. When the message comes back, Handle finds the task RUNNING
// and parked for its current attempt, takes the poll with a conditional
// write under the task's version, and calls the executor again with the
// same attempt and Attempt.Poll set; the executor only looks at what it
// started, never starts it twice. This repeats until a final result, which
// is recorded like any other. Every other delivery for a running task (a
// duplicate, a message that does not carry the polls) is acknowledged, so
// a redelivered message cannot start a second run nor multiply the polls.
//
// Bounds: each poll gets what is left of the action's timeout (none left:
// the executor stops its run and the attempt fails as timed out), and the
// last poll is never scheduled after the timeout. While parked, the
// attempt's deadline is the poll's due time plus ResendAfter (capped at
// its last deadline); no heartbeat runs. When it passes with time left, the
// janitor takes the poll message for lost (dropped, sent to the
// dead-letter queue, or its worker died mid-poll) and sends a fresh one
// instead of failing the attempt; past the last deadline the attempt fails
// as any timed-out one. Each poll is a delivery, and SQS moves a message
// delivered MaxReceiveCount times to the dead-letter queue: after
// PollReceives deliveries (and when a continuation parks, whose message
// names the task before it) the polls move to a fresh message of the
// task's own and the old one is acknowledged. The fresh message joins the
// node's group, where nothing else waits: the planner chains each node's
// tasks, so no other task of the node is ready meanwhile.
//
// # Worker batches (the Lambda SQS event)
//
// HandleBatch handles a batch in order and returns the indexes of the
// messages to report in BatchItemFailures; every other message has been
// acknowledged, and the event source deletes whatever is not reported. A
// message stays (is reported) when handling it failed, or when it was
// delayed (a retry waiting out its backoff, a job not started yet, a parked
// attempt waiting for its next poll): its
// visibility already says when it comes back, and were it not reported the
// event source would delete it and only the janitor's re-send would save the
// retry. FIFO order holds per group: once a message of a group stays, every
// later message of that group in the batch stays too, unhandled and made
// visible at once (the group waits behind the earlier message anyway), while
// other groups go on; a failure, a message without a group or a worker that
// is stopping keeps everything after it. A plain "first failed index" would
// not do: a delayed message is no failure of the batch.
//
// A panic while handling a message is that message's failure, and a panic
// in an executor fails its attempt; a message whose deliveries keep going
// wrong before its task's claim (failing, or dying with their worker) is
// poison and fails its job once they reach the queue's maxReceiveCount
// (deadletter.go).
//
// # Attempt records
//
// A task item keeps its last maxAttemptHistory attempts. Output is made
// valid UTF-8 with control characters replaced, and bounded by the size of
// its JSON encoding (a control byte or '<' encodes to six bytes): the latest
// attempt keeps 32 KiB tails of stdout and stderr and a 4 KiB error, older
// attempts 1 KiB of each. A task item so stays near 100 KB at most, well
// under DynamoDB's 400 KB, and every attempt can be recorded.
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
// claimed within ResendAfter (their message was lost) and the question of
// jobs PENDING for their pre-start hooks left unanswered (hooks.go), moves
// on jobs whose last step was lost (a FAILING job whose last task ended, a
// finish cut short), undoes submissions stuck PENDING, fails stuck jobs, and hands
// clusters whose lease ran out to ExpireLease. Every action is conditional on
// what it read, so two janitors at once do no harm (TestTwoJanitorsAtOnce).
//
// A RUNNING or ROLLING_BACK job is stuck, and failed through the path a
// task's last failure takes (FAILING, then its rollback plan or FAILED;
// a stuck rollback ends the job FAILED), releasing the cluster's lock, when:
//
//   - dead end: sinks remain but no task of its plan is READY or RUNNING.
//     Nothing can move it: every transition that readies a task is made in
//     the transaction that ends another. The tasks are walked twice and
//     every version must match (so the second walk is a snapshot, though
//     pages are read one by one), and the job item, with its sink
//     counters, must be unchanged from before the first walk to after the
//     second. The walk stops at the first READY or RUNNING task, so a
//     healthy job costs a partial read per pass.
//   - idle: no task RUNNING, and neither an attempt started or ended nor
//     the job's status changed for StuckAfter (default an hour): its ready
//     tasks are never claimed (no worker on the queue, or a message that
//     always fails before its claim).
//
// PAUSED jobs are never failed, however long they wait: a person paused
// them, and resumes or aborts them.
//
// # Failure and rollback
//
// A task out of attempts fails the job (RUNNING -> FAILING). Once no forward
// task is running, a job with a rollback plan (create, expand) writes the
// rollback plan's tasks from its chunks (each only if absent, so a second
// settler never resets one), becomes ROLLING_BACK and releases their roots;
// when the rollback's sinks
// are done the job is FAILED and the cluster gets the status the operation
// declared for "rolled back" (a failed create: TERMINATED). A job without a
// rollback plan, or whose rollback fails, is FAILED and the cluster gets the
// failure status (INCONSISTENT, or FAILED for a create). Tasks still BLOCKED
// or READY in a failed job are never run; the API shows them as canceled.
package engine
