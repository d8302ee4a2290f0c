//go:build race

package infra

// Under -race (make test-unit), the functions are built with it too, so that
// they reuse the packages the race-enabled tests compiled.
func init() { buildFlags = append(buildFlags, "-race") }
