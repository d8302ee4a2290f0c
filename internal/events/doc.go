// Package events keeps each cluster's event stream: every change of the
// cluster's or one of its jobs' status, and every verification result, as
// a small record with an id, a type and a time.
//
// An event is written by the same store transaction as the change it
// records (the engine adds Op to that transaction), so there is no event
// for a change that did not commit and no change whose event a crash can
// lose. Events live in the cluster's partition, EVENTS#<cluster> under the
// tenant's scope, keyed by their id: a fixed-width Unix time in nanoseconds
// and a random suffix, made strictly increasing within a process. One job
// runs on a cluster at a time and each of its transitions is a conditional
// write on the one before, so ids follow the order of the changes (across
// processes, up to the clocks' skew, which is far below the time between
// two transitions of one cluster).
//
// A new event is indexed in the outbox (OUTBOX#<shard>): the webhook
// dispatcher reads it there, makes the deliveries its subscribers asked
// for, and moves the event's index entry to when it expires
// (EVENTEXP#<shard>, Retention after its time), where the janitor deletes
// it (Expire): the same passes in the local server and in AWS, with no
// scan of the clusters.
package events
