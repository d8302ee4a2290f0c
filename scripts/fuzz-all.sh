#!/usr/bin/env bash
# Runs every Go fuzz target in the module for a while each (default 30s).
# Outside CI: fuzzing is open-ended. A crasher lands in the package's
# testdata/fuzz/ and becomes a regression test on the next `go test`.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime=${1:-30s}
for pkg in $(go list ./...); do
  for target in $(go test -list '^Fuzz' "$pkg" 2>/dev/null | grep '^Fuzz' || true); do
    echo "== $pkg $target ($fuzztime)"
    go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" "$pkg"
  done
done
