// Package provision is the engine's executor for real nodes: it turns one
// attempt of a task into a provider call (create, confirm, delete) or an
// automator run (bootstrap and the service actions), and the outcome into
// the engine's Result, with what was learned about the node as NodeFacts.
//
// The engine knows tasks and nodes; the rest of what an action needs comes
// from the cluster service through the narrow Clusters interface: the
// cluster's provider (sensitive fields sealed), its hardware and image
// types, its services' action definitions, its config, its current nodes
// (for macros) and its sealed SSH key. The dispatcher opens what is sealed
// with the Keyring only for the duration of the attempt, and redacts the
// opened values from everything it returns.
//
// Per attempt:
//
//	create     provider.Create with a token derived from the task (tenant,
//	           cluster, job, task), the same for every attempt, so a retried
//	           create never makes a second node (EC2's ClientToken)
//	confirm    provider.Confirm, one check per Execute: while the node
//	           boots or does not answer SSH yet the attempt is parked (see
//	           below); once it answers, addresses and host key are
//	           recorded, the key pinned from then on
//	bootstrap  each automator the node's services use prepares the node
//	install .. the service action's automator runs it, its fields and the
//	check      cluster config macro-expanded against the current layout
//	delete     provider.Delete, parked likewise until the provider says
//	           the node is gone
//
// Errors name the node and the action. A host key that changed fails the
// attempt with both fingerprints; an action a service does not define
// succeeds without doing anything (Coopr skipped them too).
//
// Long actions: the shell automator runs an action whose timeout exceeds
// its threshold (shell.Config.DetachAfter, 2 minutes by default; the
// action's "detach" field overrides it) detached, and the dispatcher uses
// it through automator.Detacher so that no worker waits on it: Execute
// starts the script on the node and returns at once with
// engine.Result.PollAfter (the automator's PollInterval) and a poll state
// naming the automator type; the engine parks the attempt and, after the
// delay, calls Execute again for the same attempt with Attempt.Poll set,
// which polls the run once over a short session (Detacher.Check) and
// returns either PollAfter again or the final result. Nothing of the run is
// kept in memory between polls (the run's directory on the node derives
// from the task and attempt), so any worker may take the next poll. A poll
// that finds the node rebooted or the run's status missing fails the
// attempt with sshexec.LostError; a poll that cannot reach the node asks to
// be polled again; a poll that finds the action's timeout spent stops the
// script and fails the attempt as timed out. Actions at or below the
// threshold and bootstrap run synchronously within one Execute; a poll for
// one of those is refused.
//
// Provider checks are parked the same way: a Confirm or Delete that answers
// provider.Progress.Again returns PollAfter with the poll state
// "provider:" + the provider's Progress.Poll, and the next Execute hands
// that back in provider.Request.Poll. Create never parks: it returns once
// the provider accepted the request. A node's host
// key first seen by a detached start (rather than at confirm) is pinned
// again by the first poll, whose final result reports it.
package provision
