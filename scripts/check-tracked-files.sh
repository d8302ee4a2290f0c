#!/usr/bin/env bash
# Fails when git tracks a compiled binary or a file over 1 MiB that is not
# listed as an intended fixture in .tracked-large-files (one path a line).
# Build outputs and test binaries belong in .gitignore, never in a clone.
# Usage: scripts/check-tracked-files.sh [REPO_DIR]   (make lint runs it)
set -euo pipefail
cd "${1:-$(dirname "$0")/..}"

limit=$((1024 * 1024))
allowed=()
if [ -f .tracked-large-files ]; then
  while IFS= read -r line; do
    line=${line%%#*}
    line=${line//[[:space:]]/}
    [ -n "$line" ] && allowed+=("$line")
  done <.tracked-large-files
fi
is_allowed() {
  local f=$1 a
  for a in "${allowed[@]+"${allowed[@]}"}"; do [ "$a" = "$f" ] && return 0; done
  return 1
}

bad=0
while IFS= read -r -d '' f; do
  [ -f "$f" ] || continue # deleted in the work tree, or a submodule
  # Executable formats by their magic bytes: ELF, Mach-O (both byte
  # orders, 32 and 64 bit, fat), PE/COFF ("MZ"), and WebAssembly.
  magic=$(head -c 4 -- "$f" | od -An -tx1 | tr -d ' \n')
  case $magic in
  7f454c46 | feedface | feedfacf | cefaedfe | cffaedfe | cafebabe | 0061736d | 4d5a*)
    echo "tracked binary: $f (a build output or test binary; remove it and let .gitignore cover it)"
    bad=1
    continue
    ;;
  esac
  size=$(stat -c %s -- "$f")
  if [ "$size" -gt "$limit" ] && ! is_allowed "$f"; then
    echo "tracked file over 1 MiB: $f ($size bytes); list it in .tracked-large-files if it is an intended fixture"
    bad=1
  fi
done < <(git ls-files -z)
exit $bad
