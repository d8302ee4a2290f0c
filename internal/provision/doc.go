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
//	confirm    provider.Confirm: the node answers SSH; addresses and host
//	           key are recorded, the key pinned from then on
//	bootstrap  each automator the node's services use prepares the node
//	install .. the service action's automator runs it, its fields and the
//	check      cluster config macro-expanded against the current layout
//	delete     provider.Delete
//
// Errors name the node and the action. A host key that changed fails the
// attempt with both fingerprints; an action a service does not define
// succeeds without doing anything (Coopr skipped them too).
//
// Long actions: the shell automator runs an action whose timeout exceeds
// its threshold detached (started on the node, then polled over short
// sessions); the poll loop runs inside Execute, because engine.Result has
// no way yet to say "check again later", so the worker still waits, though
// no SSH session stays open.
package provision
