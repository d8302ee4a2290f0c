// Package shell is heddle's shell automator: every service action runs a
// script on the node over SSH.
//
// A shell action's fields:
//
//	script           inline script text (sh, or any interpreter named by a #! line)
//	script_resource  or the name of a script resource (catalog kind scripts:
//	                 per tenant, versioned; read through Config.Scripts)
//	script_version   the resource's version; the cluster service writes the
//	                 latest one into a cluster's spec when it plans the
//	                 cluster, so empty (the latest) only comes from older specs
//	args             arguments, in shell syntax ("--port 2181 'a b'")
//	detach           "true" or "false": overrides the detach threshold
//	anything else    passed on to the script
//
// For each action the automator saves the task's context in a file of the
// attempt's own (<workdir>/tasks/<job>~<task>-a<attempt>.json, mode 0600,
// in a directory of mode 0700 that bootstrap creates), then runs the script
// in <workdir> as root (through sudo -n when the login user is not root)
// with:
//
//	HEDDLE_CONTEXT      the context file (automator.TaskContext as JSON:
//	                    task, node, every node of the cluster, expanded
//	                    fields and cluster config)
//	HEDDLE_WORK_DIR     the automator's directory (the working directory)
//	HEDDLE_TENANT, HEDDLE_CLUSTER_ID, HEDDLE_JOB_ID, HEDDLE_TASK_ID,
//	HEDDLE_ATTEMPT, HEDDLE_ACTION, HEDDLE_SERVICE, HEDDLE_NODE_ID,
//	HEDDLE_NODE_NUM, HEDDLE_HOSTNAME, HEDDLE_ACCESS_IP, HEDDLE_BIND_IP,
//	HEDDLE_SERVICES     the task and node, for scripts that skip the JSON
//	HOME                the node's own home when its provider gives one
//	                    (automator.PropHome: static hosts shared by nodes)
//	HEDDLE_FIELD_<NAME> each action field
//	HEDDLE_ARGS         the args field; also the positional parameters
//
// A plain sh script runs in a subshell of the session's own shell; a script
// with a #! line is written next to the context file and run from there.
// Nothing needs scp or sftp on the node: files travel through a session's
// stdin (see sshexec). The exit status decides success; stdout and stderr
// are kept as 32 KiB tails with the task's secrets redacted. The attempt's
// files are removed when its result has been read.
//
// Synchronous or detached. An action whose timeout is at most DetachAfter
// (2 minutes by default) runs on an open SSH session: one round trip, the
// right choice for the many short configure and start scripts. A longer one
// runs detached: the script is started on the node under setsid (nohup
// where there is none) with its output and exit status written to files,
// and the automator polls it every PollInterval instead of holding a
// session open. The start, its wait, the polls and the cleanup are control
// scripts of heddle's own, which run in the connection's dispatcher (one
// root shell per pooled connection, see sshexec) rather than in a session
// and sudo each; Bootstrap starts that dispatcher if the provider's
// confirm has not. A
// poll that finds the node rebooted or the status missing fails the attempt
// clearly; a poll that cannot reach the node is retried at the next interval;
// a detached script still running when the action's timeout ends is stopped
// (SIGTERM to its process group, then SIGKILL). Run does all this within
// one call; Start and Check (automator.Detacher) do it in steps, so that the
// engine can park the attempt between polls instead of a worker waiting:
// Start starts the script, waits on it in place for QuickWait (2 s by
// default; the node's shell waits on the command: most scripts with a long
// default timeout end within it, and a trip through the queue plus a
// PollInterval would cost far more) and only then returns Pending, unless
// the engine expects the run to outlast the wait (Request.Expect, from what
// the action took before), when it returns Pending at once; each Check
// polls once. PollAfter is PollInterval: the engine's own schedule looks
// sooner when its estimate says the run is over (engine, estimate.go).
//
// Host keys: the pinned key (recorded by the provider's confirm) is checked
// on every connection; a changed key fails the task with an error naming the
// node and both fingerprints. A node never contacted before is pinned on
// first contact and the key is reported in Output.HostKey.
package shell
