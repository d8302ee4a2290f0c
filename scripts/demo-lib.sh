#!/usr/bin/env bash
# demo-lib.sh: what scripts/demo.sh and scripts/demo-static.sh share. Source
# it after setting demo_name; a failure prints the server's log when $data
# holds one.

step() { printf '\n\033[1m==> %s\033[0m\n' "$*"; }
die() {
  printf '\n\033[31m%s failed: %s\033[0m\n' "${demo_name:-demo}" "$*" >&2
  if [ -n "${data:-}" ] && [ -f "$data/server.log" ]; then
    echo "--- last lines of the server's log ($data/server.log):" >&2
    tail -n 40 "$data/server.log" >&2
  fi
  exit 1
}
need() { command -v "$1" >/dev/null 2>&1 || die "$1 is needed on this machine ($2)"; }
need go "to build heddle"
need python3 "the demo's services are python3 scripts"
need curl "to send requests through the load balancer"
