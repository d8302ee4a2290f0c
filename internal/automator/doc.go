// Package automator defines how heddle carries out service actions on a
// node (install, configure, initialize, start, stop, remove, check) and the
// node-level bootstrap: the Automator interface, the Request every automator
// gets, and the TaskContext a task hands to the node (as a JSON file and as
// HEDDLE_* environment variables).
//
// The dispatcher (internal/provision) picks the automator named by the
// service action's type ("shell"), expands macros in the action's fields and
// the cluster's config, resolves the node's SSH endpoint and the cluster's
// key, and calls it. Implementations live in subpackages (shell).
package automator
