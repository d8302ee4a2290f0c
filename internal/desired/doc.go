// Package desired is the desired-state half of `heddle apply`: it reads the
// clusters a document declares and computes, against the clusters that
// exist, the operations that converge them (create, adopt, sync, remove and
// add services, shrink, expand, reconfigure, delete for --prune) in the
// order they run. It reads and writes nothing itself: the CLI previews the
// steps as dry runs and runs them through the public client, planning again
// after each job, so a step always starts from the cluster as it is.
package desired
