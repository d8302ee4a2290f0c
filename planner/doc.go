// Package planner turns a cluster operation into a task graph: which action
// runs on which node for which service, with what timeout and retry budget, and
// which tasks must succeed before each one may start. It is pure: the same
// Request always gives the same Plan (same task IDs, same order, same edges),
// and it touches no store, queue or clock, so the API can plan, preview and
// persist a job in one transaction and a dry run can show exactly what would
// happen.
//
// # Why a graph and not stages
//
// Coopr planned strict stages: every task of stage n had to finish before any
// task of stage n+1 began, and a node ran at most one task per stage, so one
// slow node held every other node back. heddle hands the engine the graph
// itself and the engine dispatches each task as soon as its own dependencies
// have succeeded. Stages survive only as a view (Plan.Stages), computed the
// way Coopr computed them, for progress display and for comparison with
// Plan.CriticalPath.
//
// # Semantics
//
// Each node runs one task at a time, in a fixed chain. The chain walks the
// phases below in order and, inside a phase, the node's services in dependency
// order; an action a service does not define is skipped and the chain closes
// over the gap:
//
//	create, confirm, bootstrap            node-level (Service "")
//	stop        runtime order, dependents first
//	remove      install order, dependents first
//	install     install order, dependencies first
//	configure   install order
//	initialize, start   runtime order, per service (initialize s, start s, next service)
//	delete      node-level
//
// Running one task per node at a time is deliberate: automators share node-wide
// resources (the package manager lock, configuration directories) and Coopr's
// one-task-per-node stages never exposed scripts to concurrent runs.
//
// Across nodes, edges follow the catalog's dependencies, with requires and uses
// treated alike (a used service only matters when it is on the cluster) and a
// provided name standing for every service on the cluster that provides it:
//
//   - install dependencies: install(dep) before install(svc); remove(svc)
//     before remove(dep);
//   - runtime dependencies: start(dep) before initialize(svc) and start(svc);
//     stop(svc) before stop(dep).
//
// An edge always runs from every task of one (service, action) group to every
// task of another, on every node of the plan. When the nearest dependency has
// no task of the action in the plan (it does not define it, or the operation
// does not touch it), the edge is walked through to that dependency's own
// dependencies, as Coopr did. Redundant service-level edges are dropped
// (transitive reduction). A dependency cycle among the services on the cluster
// is a *CycleError naming it.
//
// Because each node's chain follows the phase order and, within a phase, the
// service order that cross-node edges follow, every edge goes forward in one
// global order (phase, service rank): plans are acyclic by construction. (A
// rolling restart has no cross-node service edges; its batch edges follow node
// order.)
//
// # Operations
//
// Build derives each operation's work from the old and new layouts:
//
//	create           new nodes: create, confirm, bootstrap, then install,
//	                 configure, initialize, start every service
//	delete           stop and remove every service, then delete the node;
//	                 Force: delete only
//	expand           new nodes as in create; existing nodes reconfigure what
//	                 refers to a service that gained nodes
//	shrink           leaving nodes: stop, remove, delete (Force: delete only);
//	                 remaining nodes reconfigure what referred to them
//	add-services     new nodes (if the solver needed any) as in create;
//	                 existing nodes bootstrap, then set up the added
//	                 services where added;
//	                 reconfigure what refers to them
//	remove-services  stop and remove where removed; reconfigure what referred
//	                 to them
//	reconfigure      bootstrap, configure the selection everywhere
//	sync-template    bootstrap every node, add and remove services as the
//	                 new layout says, configure every kept service
//	start            start the selection and what it needs at runtime
//	stop             stop the selection and what needs it at runtime
//	restart          stop, then start, the selection and what needs it
//	rolling-restart  stop and start the selection only, BatchSize nodes at
//	                 a time (nodes in Num order); no cross-node service edges,
//	                 each batch waits for the whole previous one
//
// With Restart, every reconfiguration also stops and starts the reconfigured
// services and what depends on them at runtime. "Reconfigure" never
// initializes again, and the check action is never planned. Create and expand
// come with a rollback plan (Plan.Rollback): delete the created nodes at once
// (Force: a half-built node is not worth stopping) after reconfiguring, against
// the old layout, whatever the forward plan reconfigured.
//
// # Configuration references
//
// A task's scripts and the cluster config may contain macros such as
// %host.service.zookeeper% that expand, when the task runs, from the current
// layout. The planner does not read macros (the macros package does); the
// caller passes Request.ConfigReferences, service -> services its action fields
// refer to, with ClusterConfigKey for the cluster config (read by every task,
// so it counts as a reference from every service). It is used three ways:
//
//   - a service task never starts before every new node hosting a service it
//     refers to has been confirmed (its address is known);
//   - after an expand, shrink, service addition or removal, existing services
//     that refer to a service whose set of nodes changed are reconfigured
//     (configure, plus stop and start with Request.Restart);
//   - on a shrink or service removal they are reconfigured after the
//     referenced service has been stopped and removed from the leaving nodes,
//     and leaving nodes are deleted only after that reconfiguration.
//
// A nil map means "unknown" and is read conservatively: every service refers
// to every service. An empty non-nil map means no references.
//
// # Joins
//
// A dependency of a 1,000-node service on another 1,000-node service would be a
// million edges, and the engine keeps a remaining-dependencies counter on every
// task and settles a completion in one 100-item transaction. So an edge between
// two large groups goes through a join: a zero-work task (Kind "join", Action
// "join", no node) that depends on the whole source group and that the target
// tasks depend on, turning m*n edges into m+n. Limits then bound every task,
// join or not, to at most MaxDependsOn dependencies and MaxDependents
// dependents by inserting trees of joins. The engine runs a join as soon as it
// is ready, doing no work and spending no attempt.
package planner
