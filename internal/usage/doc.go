// Package usage answers how many node-hours a tenant, user, cluster,
// template or hardware type used over a time range, per hour or day.
//
// The engine records each node's lifetime when a job's end changes the
// node's status: a node that becomes ACTIVE opens its record (from when it
// was planned, since a booting machine is billed too), and one that is
// DELETED closes it, whichever job deleted it (a user's delete or shrink, a
// create rolled back, the janitor's delete of an expired lease). Records
// are batches: one item per transaction of the job's end, holding the
// lifetimes of the nodes that transaction marks (BatchItem), so a job's
// end costs one usage write per hundred nodes rather than one per node.
// Records written before batches, one small item per node (Item), are
// read as before; a node opened in one record and closed in another is
// one lifetime (Reader.Lifetimes).
package usage
