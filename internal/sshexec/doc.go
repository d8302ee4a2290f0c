// Package sshexec is the SSH client layer of heddle's shell automator: it
// connects to nodes with a cluster's ed25519 key, pins host keys, runs
// scripts with a timeout, environment and stdin, uploads files, and starts
// long scripts detached so that a worker can poll instead of waiting.
//
// It assumes as little of a node as possible: an OpenSSH-compatible server,
// /bin/sh and the usual POSIX tools (cat, mkdir, mv, wc, tail), sudo when the
// login user is not root. No scp or sftp: an upload is cat reading the
// session's stdin, into a temporary file renamed into place.
//
// Security, where Coopr (Net::SSH with host-key checking off) was lax:
//   - host keys are pinned on first contact and checked exactly afterwards; a
//     change is a *HostKeyError naming the node and both SHA256 fingerprints;
//   - output is kept as bounded tails (TailLimit, the last bytes, where a
//     failure is explained) with the caller's secrets redacted, including a
//     secret split across write boundaries or cut by the start of the tail;
//   - detached scripts and uploaded context travel through stdin into 0600
//     files. Command scripts travel on the command line (sshd's AcceptEnv is
//     usually off, so environment variables are exported by the script
//     itself) and are therefore visible in the node's process list while
//     they run: secrets go in files.
//
// Errors say what happened, so the engine can decide between retrying and
// failing: *UnreachableError (no TCP connection, nothing ran),
// *HostKeyError, *TransportError (handshake, authentication, session or a
// connection lost mid-run), *TimeoutError (the context ended; the command's
// process group got SIGTERM), *ExitError (the command ran and failed) and,
// for detached commands, *LostError (directory gone, node rebooted, or the
// process died without a status).
//
// A Client is one connection and may be used for many commands; a Pool keeps
// one per node login and replaces stale ones. heddle's own control scripts
// (a detached command's start, wait and report, its polls, stop and
// removal; RunControl for the automator's bootstrap) run in the
// connection's dispatcher: one root shell started once through `sudo -n`
// in a session of the connection, reading requests on its stdin, ended
// with the connection (see dispatcher.go for the protocol and the security
// argument). A node where it cannot start gets a session per script, as
// before. Actions themselves still run detached under setsid, or, for
// synchronous runs (Run), in a session of their own.
package sshexec
