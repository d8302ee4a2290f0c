#!/usr/bin/env bash
# Builds the Dex release pinned in scripts/dex/go.mod (v2.45.1) for the
# end-to-end sign-in test (TestDexSignIn, cmd/heddle), once, into
# .tools/dex/<version>/dex (git-ignored; HEDDLE_DEX_DIR moves it), and
# prints the binary's path. The Go module and build caches make a rebuild
# in a fresh clone cheap; the first build on a machine downloads Dex's
# modules and compiles them (minutes).
#   scripts/dex.sh [build]   build if missing, print the path
#   scripts/dex.sh path      print the path only
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
version=v2.45.1
dir="${HEDDLE_DEX_DIR:-$root/.tools/dex}/$version"
bin="$dir/dex"
case "${1:-build}" in
build)
  if [ ! -x "$bin" ]; then
    mkdir -p "$dir"
    # go.sum pins every module; -mod=readonly refuses anything else.
    (cd "$root/scripts/dex" && GOWORK=off GOFLAGS=-mod=readonly GOBIN="$dir" \
      go install -ldflags "-X main.version=$version" github.com/dexidp/dex/cmd/dex)
  fi
  echo "$bin"
  ;;
path)
  echo "$bin"
  ;;
*)
  echo "usage: $0 [build|path]" >&2
  exit 2
  ;;
esac
