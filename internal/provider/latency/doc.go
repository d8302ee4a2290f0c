// Package latency is a provider type for tests and benchmarks: its nodes
// are not machines but a model of a cloud's timings, so that what heddle
// does around a node's boot (parked confirms, polls, billed worker time)
// can be measured at 1,000 nodes on one machine.
//
// A provider entity of type "latency" says how long each step takes:
//
//	create_latency  how long Create takes before the request is accepted
//	                (RunInstances answers in about a second)
//	boot            from acceptance until the node runs (EC2: 60-90 s)
//	ssh_after       from running until SSH answers (EC2: 10-20 s more)
//	delete_after    from the terminate until the node is gone
//	poll_interval   how long after a check that found the node not there
//	                yet Confirm and Delete ask to be called again
//	failure_rate    the probability that a call fails with a transient
//	                provider error (the engine retries it)
//
// Nothing of a node lives in a worker: the node's acceptance time is in its
// provider id, the terminate time in Delete's poll state, so any worker, or
// a restarted server, answers the next check. The only memory is the
// model cloud's idempotency record (token to node), which a restart loses
// like a cloud would not; a create retried across a restart makes a new
// node id, harmless for a model.
//
// The nodes have an address (from 198.18.0.0/15, reserved for benchmarks)
// but no SSH server: services with actions fail on them. They are meant for
// templates whose services define no actions, where a create is create,
// confirm and bootstrap per node.
package latency
