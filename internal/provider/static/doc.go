// Package static is the provider for machines that already exist: an
// administrator registers hosts (address, port, login user, private key,
// optionally the host key) in a provider's pool, and each node of a
// cluster takes one.
//
// The pool lives in the store, per tenant and provider entity. Taking a
// host is one transaction: the host item moves FREE -> TAKEN on its version,
// and the node's claim item is created on the condition that it does not
// exist, so two nodes never get one host and one node never gets two hosts;
// a repeated create (same token) finds its claim and returns the same host.
// Hosts' login keys are sealed at rest (secrets) and never returned.
//
// Create only takes the host (no SSH), so a bad host shows where a
// booting machine's problems do: Confirm logs in with the host's own key
// and installs the cluster's public key in the login user's
// authorized_keys (a line whose comment names the node; edits are locked
// with flock, or a lock directory where flock is missing, so concurrent
// edits of one file lose nothing), pins the host key on first contact (or
// checks the registered one), all in one login. With the worker's SSH
// connection pool that login then serves the node's bootstrap and actions
// (sshexec.Client.As, Pool.Adopt): it is the same user on the same pinned
// host that the cluster's key logs in as, so a second handshake would cost
// time and check nothing the edit did not; the node's next login (after a
// connection ended, or on another worker) is the cluster key's. Without a
// pool the confirm logs in with the cluster's key itself. A host that is
// unreachable, refuses its key or presents another host key fails the
// confirm with the reason. Delete drops the node's pooled login, runs the
// provider's wipe script as root, removes the node's key line and returns
// the host to the pool in one transaction with the claim's deletion; a
// failing wipe keeps the host out of the pool and fails the delete, so a
// dirty host is never handed to the next cluster.
//
// A job that creates nodes on a pool holds their hosts from its
// submission (Pool.Reserve, taken in the job's first transaction and given
// back when it ends), so a layout the pool cannot hold is refused before
// anything is written, in the dry run too, and of two submissions that each
// fit alone but not together only one is accepted (holds.go).
//
// A host is FREE, TAKEN, WIPING (its node's delete runs the wipe) or DIRTY
// (the wipe failed; the reason is kept, and a retried delete wipes again);
// any of them may be drained (given to no new node). An administrator
// registers hosts all or nothing, optionally logging in to each first
// (Static.Register with check), and readmits a dirty or drained host
// (Static.Readmit, which removes the old node's key line first). A host
// registered without a host key has the key it presents to its first
// node's confirm pinned on the host. With the node_homes field, each node's
// scripts get a HOME of their own on the host, for hosts that several
// nodes, pools or users share.
package static
