// Package buildinfo says which build of heddle is running: the module
// version, the VCS revision and its time, and whether the tree it was built
// from had uncommitted changes. The CLI's version command, the API's
// /v1/status and each Lambda's start-up log line all read it here, so the
// three never disagree about what a build is.
//
// The Go toolchain stamps these into every binary built from a checkout
// (runtime/debug.ReadBuildInfo); a binary built without VCS information (a
// Docker build without .git, go run) reports what it has and no revision.
package buildinfo
