#!/usr/bin/env bash
# The demo catalog on a static pool (`make demo-static`): machines that
# already exist, here the OpenSSH servers of scripts/sshd-hosts.sh.
#
#   start `heddle server` in a fresh data directory, create a tenant, apply
#   the demo catalog and docs/examples/static-pool.yaml, import six hosts
#   from an Ansible inventory (--check logs in to each first), create a
#   4-node cluster from template web-static and send requests through its
#   load balancer, expand it by two nodes, delete it (the wipe script runs
#   on every host) and show every host back in the pool.
#
# The hosts come from HEDDLE_SSH_HOSTS, HEDDLE_SSH_USER, HEDDLE_SSH_KEY and
# HEDDLE_SSH_KNOWN_HOSTS, or from `scripts/sshd-hosts.sh env` (start them
# with `sudo scripts/sshd-hosts.sh start 6`). They may be shared with tests
# running at the same time: the demo claims the six it uses with flock on
# /tmp/heddle-sshd-claims/<address>.lock (as the end-to-end test does), and
# its wipe touches only its own nodes' homes.
set -euo pipefail
cd "$(dirname "$0")/.."

demo_name=demo-static
# shellcheck source=scripts/demo-lib.sh
source scripts/demo-lib.sh

. scripts/static-lib.sh
ssh_hosts_env 6
wanted=6

step "Claiming $wanted of the OpenSSH hosts ($HEDDLE_SSH_HOSTS)"
claim_hosts "$wanted"
echo "claimed: ${hosts[*]} (released when the demo ends)"

data=$(mktemp -d "${TMPDIR:-/tmp}/heddle-demo-static.XXXXXX")
cleanup() {
  local rc=$?
  stop_server
  if [ "${HEDDLE_DEMO_KEEP:-}" = 1 ]; then
    echo "data kept in $data"
  else
    rm -rf "$data"
  fi
  exit "$rc"
}
trap cleanup EXIT

step "Building and starting heddle server (data in $data)"
start_server "$data"
echo "up on $HEDDLE_ENDPOINT"

step "Creating tenant 'demo' (admin 'ann')"
created=$(HEDDLE_KEY=$super "$heddle" tenants create demo --max-clusters 2 --max-nodes 10 --workers 6 --admin ann -o json)
HEDDLE_KEY=$(printf '%s' "$created" | python3 -c 'import json,sys; print(json.load(sys.stdin)["adminKey"]["secret"])')
export HEDDLE_KEY

step "Applying the demo catalog and the static pool (docs/examples/static-pool.yaml)"
"$heddle" apply -f docs/examples/catalog.yaml
"$heddle" apply -f docs/examples/static-pool.yaml

step "Importing the hosts from an Ansible inventory, logging in to each first (--check)"
inventory="$data/inventory.ini"
{
  inventory_hosts demo sshd-
  echo
  echo "[demo:vars]"
  echo "ansible_user=$HEDDLE_SSH_USER"
  echo "ansible_ssh_private_key_file=$HEDDLE_SSH_KEY"
} >"$inventory"
sed 's/^/  /' "$inventory"
"$heddle" hosts import pool "$inventory" --known-hosts "$HEDDLE_SSH_KNOWN_HOSTS" --check
echo "importing it again changes nothing:"
"$heddle" hosts import pool "$inventory" --known-hosts "$HEDDLE_SSH_KNOWN_HOSTS"

step "Creating a 4-node cluster from template 'web-static' and watching the job"
out=$("$heddle" clusters create shop --template web-static --size 4 -o json)
cluster=$(printf '%s' "$out" | python3 -c 'import json,sys; print(json.load(sys.stdin)["cluster"]["id"])')
job=$(printf '%s' "$out" | python3 -c 'import json,sys; print(json.load(sys.stdin)["job"]["id"])')
"$heddle" jobs watch "$cluster" "$job" || die "the create job did not succeed"
"$heddle" clusters show "$cluster"
"$heddle" hosts list pool

# through N: N requests through the load balancer; every web node must answer.
through() {
  local n=$1 lb expected answers distinct
  read -r lb expected < <("$heddle" clusters show "$cluster" -o json | python3 -c '
import json, sys
nodes = json.load(sys.stdin)["nodes"]
lb = next(n["addresses"]["access_v4"] for n in nodes if n["services"] == ["lb"])
print(lb, sum("web" in n["services"] for n in nodes))')
  echo "asking the load balancer at $lb:18000 $n times:"
  answers=$(for _ in $(seq "$n"); do curl -fsS --max-time 5 "http://$lb:18000/" || echo "FAILED"; done)
  printf '%s\n' "$answers" | sed 's/^/  /'
  printf '%s\n' "$answers" | grep -q FAILED && die "a request through the load balancer failed"
  distinct=$(printf '%s\n' "$answers" | awk '{print $3}' | sort -u | wc -l)
  [ "$distinct" -ge "$expected" ] || die "only $distinct web nodes answered; expected $expected"
  echo "all $distinct web nodes answered"
}
step "Requests through the load balancer reach every web node"
through 8

step "Expanding the cluster by two nodes (two more hosts taken from the pool)"
"$heddle" clusters expand "$cluster" --count 2 --wait || die "the expand job did not succeed"
through 12
"$heddle" hosts list pool

step "A host a node holds cannot be removed"
if "$heddle" hosts remove pool sshd-0; then die "a taken host was removed"; fi

step "Deleting the cluster: services stop, each host is wiped and goes back to the pool"
"$heddle" clusters delete "$cluster" --wait || die "the delete job did not succeed"
"$heddle" hosts list pool
taken=$("$heddle" hosts list pool -o json | python3 -c 'import json,sys; print(sum(h["status"] != "FREE" for h in json.load(sys.stdin)["items"]))')
[ "$taken" -eq 0 ] || die "$taken hosts are not back in the pool"
# (The wipe removes the cluster's directory with its last node.)
left=$( (find "/var/tmp/heddle-nodes/demo/$cluster" -mindepth 1 -maxdepth 1 2>/dev/null || true) | wc -l)
[ "$left" -eq 0 ] || die "$left node homes were not wiped"
echo "every host is FREE again and every node home is wiped"

step "Stopping heddle"
kill -TERM "$server_pid"
wait "$server_pid" || die "the server did not stop cleanly"
server_pid=""
printf '\n\033[32mdemo-static passed\033[0m\n'
