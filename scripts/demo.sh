#!/usr/bin/env bash
# heddle's main job, end to end, on this machine with no AWS account (the
# README's first command, `make demo`):
#
#   start `heddle server` on the embedded store in a fresh data directory,
#   create a tenant, apply the demo catalog (docs/examples/catalog.yaml),
#   create a 4-node cluster (a load balancer, web servers, a key-value store)
#   and watch it reach ACTIVE, show that requests through the load balancer
#   are answered by several web nodes, expand it by two nodes (the load
#   balancer is reconfigured through macros and reaches them too), delete it,
#   and stop the server, leaving no process and no node behind.
#
# Every step says what it does; any failure stops the demo with a non-zero
# exit and the server's log. HEDDLE_DEMO_KEEP=1 keeps the data directory.
set -euo pipefail
cd "$(dirname "$0")/.."

demo_name=demo
# shellcheck source=scripts/demo-lib.sh
source scripts/demo-lib.sh

step "Building heddle"
go build -o bin/heddle ./cmd/heddle
heddle=$PWD/bin/heddle

data=$(mktemp -d "${TMPDIR:-/tmp}/heddle-demo.XXXXXX")
server_pid=""
cleanup() {
  local rc=$?
  if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
    kill -TERM "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  # Nothing of the demo's may outlive it: its services run from the data
  # directory's node homes.
  pkill -f "$data/" 2>/dev/null || true
  if [ "${HEDDLE_DEMO_KEEP:-}" = 1 ]; then
    echo "data kept in $data"
  else
    rm -rf "$data"
  fi
  exit "$rc"
}
trap cleanup EXIT

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
export HEDDLE_ENDPOINT="http://127.0.0.1:$port"
export HEDDLE_CONFIG="$data/cli.yaml" # keep the user's own CLI config out of it
super=$("$heddle" keygen)

step "Starting heddle server on $HEDDLE_ENDPOINT (data in $data)"
HEDDLE_BOOTSTRAP_KEY=$super "$heddle" server --data-dir "$data/heddle" --listen "127.0.0.1:$port" >"$data/server.log" 2>&1 &
server_pid=$!
for _ in $(seq 100); do
  curl -fs "$HEDDLE_ENDPOINT/v1/status" >/dev/null 2>&1 && break
  kill -0 "$server_pid" 2>/dev/null || die "the server exited"
  sleep 0.1
done
curl -fs "$HEDDLE_ENDPOINT/v1/status" >/dev/null || die "the server did not answer"
echo "up: $(curl -fs "$HEDDLE_ENDPOINT/v1/status" | tr -d '\n ')"

step "Creating tenant 'demo' (admin 'ann') as the superadmin"
created=$(HEDDLE_KEY=$super "$heddle" tenants create demo --max-clusters 2 --max-nodes 10 --workers 4 --admin ann -o json)
HEDDLE_KEY=$(printf '%s' "$created" | python3 -c 'import json,sys; print(json.load(sys.stdin)["adminKey"]["secret"])')
export HEDDLE_KEY
echo "tenant demo: at most 2 clusters and 10 nodes, 4 tasks at a time"

step "Applying the demo catalog (docs/examples/catalog.yaml)"
"$heddle" apply -f docs/examples/catalog.yaml
echo "applying it again changes nothing:"
"$heddle" apply -f docs/examples/catalog.yaml

step "Previewing a 4-node cluster from template 'web' (a dry run: nothing changes)"
"$heddle" clusters create shop --template web --size 4 --dry-run

step "Creating it and watching the job"
out=$("$heddle" clusters create shop --template web --size 4 -o json)
cluster=$(printf '%s' "$out" | python3 -c 'import json,sys; print(json.load(sys.stdin)["cluster"]["id"])')
job=$(printf '%s' "$out" | python3 -c 'import json,sys; print(json.load(sys.stdin)["job"]["id"])')
echo "cluster $cluster, job $job"
"$heddle" jobs watch "$cluster" "$job" || die "the create job did not succeed"
"$heddle" clusters show "$cluster"

# through N EXPECTED: N requests through the load balancer; at least
# EXPECTED distinct web nodes must answer.
through() {
  local n=$1 expected=$2 lb
  lb=$("$heddle" clusters show "$cluster" -o json | python3 -c '
import json, sys
nodes = json.load(sys.stdin)["nodes"]
print(next(n["addresses"]["access_v4"] for n in nodes if n["services"] == ["lb"]))')
  echo "asking the load balancer at $lb:18000 $n times:"
  local answers
  answers=$(for _ in $(seq "$n"); do curl -fsS --max-time 5 "http://$lb:18000/" || echo "FAILED"; done)
  printf '%s\n' "$answers" | sed 's/^/  /'
  printf '%s\n' "$answers" | grep -q FAILED && die "a request through the load balancer failed"
  local distinct
  distinct=$(printf '%s\n' "$answers" | awk '{print $3}' | sort -u | wc -l)
  [ "$distinct" -ge "$expected" ] || die "only $distinct web nodes answered; expected $expected"
  echo "$distinct different web nodes answered"
}

step "Requests through the load balancer reach every web node"
through 6 3

step "Expanding the cluster by two nodes (the load balancer is reconfigured through %join(map(ip.service.web,...))%)"
"$heddle" clusters expand "$cluster" --count 2 --wait || die "the expand job did not succeed"
"$heddle" clusters show "$cluster"

step "The new web nodes answer too"
through 10 5

step "Deleting the cluster (services stop and are removed, then the nodes go)"
"$heddle" clusters delete "$cluster" --wait || die "the delete job did not succeed"
"$heddle" clusters list --all

step "Stopping heddle"
kill -TERM "$server_pid"
wait "$server_pid" || die "the server did not stop cleanly"
server_pid=""
if pgrep -f "$data/" >/dev/null; then
  pgrep -af "$data/" >&2
  die "processes of the demo's nodes are still running"
fi
left=$(find "$data/heddle/nodes/nodes" -mindepth 1 -maxdepth 1 -type d 2>/dev/null | wc -l)
[ "$left" -eq 0 ] || die "$left node directories are left"
echo "no process and no node left behind"

printf '\n\033[32mdemo passed\033[0m\n'
