// Package local is the provider of the embedded all-in-one server: every
// node is an SSH server inside the heddle process (golang.org/x/crypto/ssh)
// listening on a loopback address of its own (127.42.x.y, port SSHPort),
// with its own ed25519 host key, accepting only the cluster's key, and running each command with
// /bin/sh as heddle's own user in the node's own directory. A new user gets
// working clusters (create, install scripts, delete) with no cloud account
// and no root, and the automator runs exactly as it does against real
// nodes: the same SSH client, host-key pinning, uploads and detached runs.
//
// State lives under the data directory, one directory per node
// (nodes/<node>~<hash>/: node.json, host_key, home/), so nodes come back
// after heddle restarts: Restore starts the servers of every node on disk
// again, on the same ports with the same host keys, so the addresses and
// pinned keys the store holds stay valid. Stopping a server shuts its
// listener down (shutdown(2)) before closing it: a fork elsewhere in the
// process holds a copy of every descriptor until the child execs, and a
// listener merely closed stays bound that long. A node whose address
// another process took meanwhile is not moved (its address is what the
// store and the cluster's services know it by): it stays down, the error
// says why, and Restore tries it again every RetryInterval until the
// address is free.
//
// A node's address starts from a hash of its name and is claimed by
// binding its SSH port there: an address whose port another process holds
// (another heddle's node on the same machine) is skipped for the next one,
// so two heddle processes never give two nodes one address, and services
// that bind fixed ports on their node's address do not collide.
//
// Create is idempotent on the request's token: a repeated create finds the
// node on disk and returns it; a create with another token for an existing
// node is refused (it would be two tasks claiming one node). Delete stops
// the server and removes the node's directory.
//
// Commands run with a clean environment (HOME is the node's home directory,
// a standard PATH, nothing of heddle's own environment such as cloud
// credentials). The node is not a sandbox: a script can read what heddle's
// user can. Every command carries HEDDLE_LOCAL_NODE (the node's directory)
// in its environment, and its children inherit it: Delete kills every
// process that still carries it, those a script detached (setsid, nohup)
// included, as deleting a machine would. Close, heddle stopping, leaves
// detached processes running, as a restarted control plane leaves a
// machine's services. A process that clears its environment escapes.
package local
