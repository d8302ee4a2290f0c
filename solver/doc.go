// Package solver turns a resolved cluster template and a request into a
// cluster layout: which services, hardware type and image type each node
// gets. It serves create, expand, shrink, add services, remove services and
// the template sync check. It is pure and deterministic: no I/O, no clock,
// no randomness, no map-order dependence; identical input gives identical
// output, node ids included ("<cluster id>-<num>", nums from 1000).
//
// # Constraints
//
// A cluster's services must exist, be compatible with the template, have
// every install and runtime requirement on the cluster (by name or by what a
// service provides) and conflict with none of the others (again by name or by
// what they provide). Every service runs
// on at least one node and within its quantities (max 0: no bound); the node
// count is within the template's size (min 0 means 1, max 0 means
// domain.MaxClusterSize). A mustCoexist group, reduced to the services on the
// cluster, is on a node wholly or not at all; a cantCoexist group whose
// members are all on the cluster is never wholly on one node. A node's
// hardware (image) type must be compatible with the template, exist on the
// cluster's provider and be allowed by every service on the node.
//
// # How it solves
//
// Coopr enumerated every subset of the constrained services and then walked
// every split of N nodes over the resulting node layouts, with no time
// limit. This package never enumerates splits and never looks at N nodes one
// by one:
//
//   - mustCoexist groups collapse into units that are placed whole;
//     cantCoexist groups become edges between units; a unit with no
//     constraint at all is "free" and simply runs on every node.
//   - Valid node contents are closed under taking subsets, so a layout of N
//     nodes exists exactly when every unit's minimum is at most N, the
//     maxima together can fill N nodes (unless free services fill any node),
//     and the minima can be covered by at most N valid nodes. Only units
//     that conflict with something take part in that cover, split into
//     independent components; the rest fit anywhere.
//   - Each component's cover is decided by cheap tests first (the sum of
//     minima fits; a first-fit placement fits; a clique of pairwise
//     conflicting units, or a group of which a node holds only some, needs
//     more than N nodes), then by the linear relaxation over maximal valid
//     node contents (its dual proves "no layout" with weights per service;
//     rounding its solution usually gives a layout), and only then by an
//     exact search over those contents with pattern counts, bounded by all
//     of the above. None of this depends on N: ten or ten thousand nodes
//     cost the same, and the per-node assignment is a final O(N) step.
//   - Every enumeration and search spends from a work budget
//     (DefaultBudget, or the request's Budget). When it runs out the answer
//     is a *TooComplexError (errors.Is(err, ErrTooComplex)), never a hang.
//     Questions of preference only (one more node for a unit, one more
//     copied layout, one new node fewer) may each spend an eighth of what is
//     left above a quarter of the budget; one they cannot settle counts as
//     "no", so the answer stays valid but may be less preferred than the
//     order below.
//
// # Which layout wins
//
// When several layouts are valid, the solver returns the first by this order
// of preference (it is dense, as Coopr's was: services share nodes as much
// as the constraints let them):
//
//  1. Free services run on every node.
//  2. Node counts per unit: units are ranked most constrained first
//     (smallest maximum, then largest minimum, then name). Within each group
//     of units that constrain one another, each unit in rank order gets as
//     many nodes as its maximum allows while a valid layout remains; a unit
//     that constrains nothing gets min(maximum, N). So a service limited to
//     5 nodes runs on 5 when it can, and an unbounded one fills what is left.
//  3. Placement: within a group, units are placed most nodes first (then by
//     rank), each on the first nodes that can take it, so masters gather on
//     the same nodes and workers share nodes with whatever may join them;
//     groups and unconstrained units are stacked from the first node. Only
//     when that placement does not fit are they placed by the rounded
//     linear relaxation, or failing that by the exact search.
//  4. If the services cannot give every node something to run (every
//     maximum reached and no free service), the lowest-ranked unit of the
//     last shared nodes moves onto nodes of its own until none is empty.
//  5. Each node gets the most preferred hardware type its services allow:
//     the requested type, then the template's default, then by name; the
//     same for image types.
//  6. Node layouts are numbered in the order of Layout.Groups: fewest nodes
//     first, then most services, then by types and names; so rare layouts
//     (masters) get the lowest numbers, the commonest (workers) the highest,
//     and shrinking, which takes the highest first, takes workers.
//
// Expand keeps every existing node as it is. New nodes first copy existing
// layouts, the one on most nodes first, each as many times as a valid layout
// remains; any nodes left get layouts solved as above. Shrink removes the
// named nodes, or the highest-numbered ones, skipping a node only when
// taking it would leave no valid choice for the rest. AddServices uses the
// fewest new nodes (none unless MaxNewNodes allows them), then follows the
// order above, with every existing layout a fixed block of nodes whose
// oldest nodes come first; old services move nowhere and go onto new nodes
// only alongside a new service they must coexist with. RemoveServices only
// takes services off nodes; a node left with none stays, for a shrink to
// remove. CheckSync changes nothing and lists every violation.
//
// # Failures
//
// A *RequestError means the request is wrong (an unknown or incompatible
// service, a missing dependency, conflicting services, an unusable type, a
// bad size or node). A *NoLayoutError means no layout satisfies the
// constraints; its reasons name the services and template constraints in
// conflict and say what would fix them, e.g. "zookeeper needs at least 3
// nodes but the cluster has 2", or which cantCoexist groups and type
// restrictions keep a set of services from fitting. A *TooComplexError means
// the budget ran out.
package solver
