#!/usr/bin/env bash
# bench-static.sh: a 50-node create on a static pool of 50 OpenSSH hosts,
# from POST to ACTIVE, beside the same steps in the same order done by
# ansible-playbook (strategies linear and free, forks 50) and by
# parallel-ssh stage by stage, in one run, with the critical path as the
# floor. Outside CI (it takes a few minutes and wants a quiet machine).
#
#   scripts/bench-static.sh            # RUNS=3 rounds of every contender
#   RUNS=5 scripts/bench-static.sh
#   ONLY=heddle RUNS=1 scripts/bench-static.sh   # one contender (while tuning)
#   HEDDLE_BIN=/tmp/heddle-old ONLY=heddle RUNS=1 scripts/bench-static.sh
#       # a heddle built elsewhere (go build -o /tmp/heddle-old ./cmd/heddle):
#       # alternate two builds run by run on a machine whose load varies
#
# The template has three services, each of whose install, configure and
# start runs a 1 s script: base on every node, app (requires base) on every
# node but one, and one lb (uses app). A node runs one step at a time, its
# services' installs, then configures, then starts; app starts after base
# started everywhere, lb after app started everywhere. The floor is the
# plan's longest chain counting only the 1 s steps (the script computes it
# from the job's task graph and prints it): 7 s, the lb node's install,
# install, configure, configure and start base (5 s) while the app nodes'
# starts end at 6 s, then start lb. Provider calls and bootstrap count as 0.
#
# Ansible and pssh run the same seven rounds: install base; install app|lb;
# configure base; configure app|lb; start base; start app; start lb. Ansible
# runs them as three plays (the starts are barriers, as their dependencies
# require), with pipelining and SSH connection reuse (its best settings).
#
# Needs HEDDLE_SSH_HOSTS with 50 hosts (scripts/sshd-hosts.sh start 50),
# ansible-playbook (Debian ansible-core) and parallel-ssh (Debian pssh).
# Every host is claimed from other tests (see scripts/static-lib.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

readonly nodes=50 runs="${RUNS:-3}" floor=7
die() { echo "bench-static: $*" >&2; [ -n "${data:-}" ] && [ -f "$data/server.log" ] && tail -n 30 "$data/server.log" >&2; exit 1; }
for tool in go python3 curl ansible-playbook; do command -v "$tool" >/dev/null || die "$tool is needed"; done
pssh=$(command -v parallel-ssh || command -v pssh) || die "parallel-ssh (Debian pssh) is needed"

. scripts/static-lib.sh
ssh_hosts_env "$nodes"
claim_hosts "$nodes"
echo "bench-static: claimed ${#hosts[@]} hosts" >&2

data=$(mktemp -d "${TMPDIR:-/tmp}/heddle-bench-static.XXXXXX")
cleanup() {
  local rc=$?
  stop_server
  rm -rf "$data"
  exit "$rc"
}
trap cleanup EXIT

# --- the same hosts for ansible and pssh -------------------------------
{
  inventory_hosts nodes n
  echo "[nodes:vars]"
  echo "ansible_user=$HEDDLE_SSH_USER"
  echo "ansible_ssh_private_key_file=$HEDDLE_SSH_KEY"
  echo "ansible_python_interpreter=/usr/bin/python3"
  echo "ansible_ssh_common_args='-o UserKnownHostsFile=$HEDDLE_SSH_KNOWN_HOSTS -o StrictHostKeyChecking=yes'"
} >"$data/inventory.ini"
lb=n$((nodes - 1))
cat >"$data/ansible.cfg" <<CFG
[defaults]
forks = $nodes
host_key_checking = True
gathering = explicit
interpreter_python = /usr/bin/python3
[ssh_connection]
pipelining = True
ssh_args = -o ControlMaster=auto -o ControlPersist=120s
control_path_dir = $data/cp
CFG
cat >"$data/playbook.yml" <<PLAY
- hosts: nodes
  gather_facts: false
  tasks:
    - {name: install base, command: sleep 1}
    - {name: install app or lb, command: sleep 1}
    - {name: configure base, command: sleep 1}
    - {name: configure app or lb, command: sleep 1}
    - {name: start base, command: sleep 1}
- hosts: nodes:!$lb
  gather_facts: false
  tasks:
    - {name: start app, command: sleep 1}
- hosts: $lb
  gather_facts: false
  tasks:
    - {name: start lb, command: sleep 1}
PLAY
: >"$data/pssh-all"
: >"$data/pssh-app"
for addr in "${hosts[@]}"; do
  echo "$HEDDLE_SSH_USER@$addr" >>"$data/pssh-all"
done
head -n $((nodes - 1)) "$data/pssh-all" >"$data/pssh-app"
tail -n 1 "$data/pssh-all" >"$data/pssh-lb"

now() { date +%s.%N; }
elapsed() { python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.2f}')" "$1" "$2"; }

run_ansible() { # strategy
  local t0 t1
  rm -rf "$data/cp"
  t0=$(now)
  ANSIBLE_CONFIG="$data/ansible.cfg" ANSIBLE_STRATEGY=$1 ansible-playbook -i "$data/inventory.ini" "$data/playbook.yml" >"$data/ansible-$1.log" 2>&1 ||
    { tail -n 20 "$data/ansible-$1.log" >&2; die "ansible-playbook ($1) failed"; }
  t1=$(now)
  elapsed "$t0" "$t1"
}

run_pssh() {
  local t0 t1 stage hostsfile
  t0=$(now)
  for stage in all all all all all app lb; do
    hostsfile="$data/pssh-$stage"
    "$pssh" -h "$hostsfile" -p "$nodes" -t 60 -x "-i $HEDDLE_SSH_KEY -o UserKnownHostsFile=$HEDDLE_SSH_KNOWN_HOSTS -o StrictHostKeyChecking=yes" \
      'sleep 1' >"$data/pssh.log" 2>&1 || { cat "$data/pssh.log" >&2; die "parallel-ssh failed"; }
  done
  t1=$(now)
  elapsed "$t0" "$t1"
}

# --- heddle ---------------------------------------------------------------
start_server "$data"
created=$(HEDDLE_KEY=$super "$heddle" tenants create bench --max-clusters 2 --max-nodes "$nodes" --workers 200 --admin ann -o json)
HEDDLE_KEY=$(printf '%s' "$created" | python3 -c 'import json,sys; print(json.load(sys.stdin)["adminKey"]["secret"])')
export HEDDLE_KEY
script='{"type": "shell", "fields": {"script": "sleep 1"}}'
actions="{\"install\": $script, \"configure\": $script, \"start\": $script}"
cat >"$data/catalog.json" <<JSON
{"apiVersion": "heddle/v1",
 "providers": [{"name": "pool", "providerType": "static", "fields": {"node_homes": "/var/tmp/heddle-nodes",
   "wipe_script": "case \"\$HEDDLE_NODE_HOME\" in /var/tmp/heddle-nodes/*/*/*) rm -rf -- \"\$HEDDLE_NODE_HOME\"; rmdir -- \"\${HEDDLE_NODE_HOME%/*}\" \"\${HEDDLE_NODE_HOME%/*/*}\" 2>/dev/null ;; esac; true"}}],
 "hardwareTypes": [{"name": "host", "providerMap": {"pool": {"flavor": "host"}}}],
 "imageTypes": [{"name": "installed", "providerMap": {"pool": {"image": "installed"}}}],
 "services": [
   {"name": "base", "actions": $actions},
   {"name": "app", "dependencies": {"runtime": {"requires": ["base"]}}, "actions": $actions},
   {"name": "lb", "dependencies": {"runtime": {"uses": ["app"]}}, "actions": $actions}],
 "clusterTemplates": [{"name": "three", "compatibility": {"services": ["base", "app", "lb"]},
   "defaults": {"services": ["base", "app", "lb"], "provider": "pool", "hardwareType": "host", "imageType": "installed"},
   "constraints": {"size": {"min": 2, "max": $nodes}, "layout": {"cantCoexist": [["lb", "app"]]},
     "services": {"lb": {"quantities": {"min": 1, "max": 1}}, "app": {"quantities": {"min": $((nodes - 1))}}, "base": {"quantities": {"min": $nodes}}}}}]}
JSON
curl -fsS -H "Authorization: Bearer $HEDDLE_KEY" -H 'Content-Type: application/json' --data-binary @"$data/catalog.json" "$HEDDLE_ENDPOINT/v1/catalog" >/dev/null ||
  die "the benchmark catalog was refused: $(curl -sS -H "Authorization: Bearer $HEDDLE_KEY" -H 'Content-Type: application/json' --data-binary @"$data/catalog.json" "$HEDDLE_ENDPOINT/v1/catalog")"
inventory_hosts pool h >"$data/hosts.ini"
"$heddle" hosts import pool "$data/hosts.ini" --user "$HEDDLE_SSH_USER" --key-file "$HEDDLE_SSH_KEY" --known-hosts "$HEDDLE_SSH_KNOWN_HOSTS" --check >/dev/null

# run_heddle: POST a create, poll until ACTIVE (every 50 ms), print the
# seconds, delete the cluster (not timed) and wait for every host to be free.
run_heddle() {
  HEDDLE_BENCH_CPU_FILE="$data/heddle-cpu" python3 - "$HEDDLE_ENDPOINT" "$HEDDLE_KEY" "$nodes" "$floor" "$server_pid" "$super" <<'PY'
import json, re, sys, time, urllib.error, urllib.request
base, key, n, expected_floor, pid, superkey = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5], sys.argv[6]
import os
def cpu():
    """The server's CPU seconds, and the machine's busy and total seconds."""
    tick = os.sysconf("SC_CLK_TCK")
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    m = [int(x) for x in open("/proc/stat").readline().split()[1:]]
    return (int(f[11]) + int(f[12])) / tick, (sum(m) - m[3] - m[4]) / tick, sum(m) / tick
def call(method, path, body=None):
    req = urllib.request.Request(base + path, method=method, data=None if body is None else json.dumps(body).encode(),
                                 headers={"Authorization": "Bearer " + key, "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req) as r:
            return json.load(r) if r.length != 0 else None
    except urllib.error.HTTPError as e:
        sys.exit(f"{method} {path}: {e.code} {e.read().decode()}")
def metrics():
    """The worker time of attempts by action (sum, count) and store calls by kind."""
    req = urllib.request.Request(base + "/v1/metrics", headers={"Authorization": "Bearer " + superkey})
    out = {}
    with urllib.request.urlopen(req) as r:
        for line in r.read().decode().splitlines():
            for pat in (r'heddle_task_attempt_seconds_(sum|count)\{action="([^"]+)"\} (\S+)', r'heddle_store_(calls)_total\{call="([^"]+)"\} (\S+)'):
                m = re.match(pat, line)
                if m:
                    out[(m.group(1), m.group(2))] = float(m.group(3))
    return out
m0 = metrics()
cpu0 = cpu()
t0, wall0 = time.monotonic(), time.time()
res = call("POST", "/v1/clusters", {"name": "bench", "template": "three", "size": n})
cid = res["cluster"]["id"]
while True:
    c = call("GET", "/v1/clusters/" + cid)
    if c["status"] == "ACTIVE":
        break
    if c["status"] in ("FAILED", "INCONSISTENT", "TERMINATED"):
        sys.exit("create " + c["status"] + ": " + c.get("statusMessage", ""))
    time.sleep(0.05)
took = time.monotonic() - t0
cpu1 = cpu()
m1 = metrics()
# Where the time went (stderr): the job's tasks by action, when the last of
# each ended, and the longest chain counting the 1 s steps only (the floor).
from datetime import datetime
from statistics import median
# The job's view and its task pages are bounded and leave dependencies out:
# page through the task ids, then read each task whole.
from urllib.parse import quote
jobpath = f"/v1/clusters/{cid}/jobs/{res['job']['id']}"
ids, cursor = [], ""
while True:
    page = call("GET", jobpath + "/tasks?limit=500&rollback=false" + ("&cursor=" + quote(cursor) if cursor else ""))
    ids += [t["id"] for t in page["items"]]
    cursor = page.get("nextCursor", "")
    if not cursor:
        break
ts = lambda s: datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()
tasks = {i: call("GET", jobpath + "/tasks/" + quote(i, safe="")) for i in ids}
tasks = {i: t for i, t in tasks.items() if not t.get("rollback")}
first = min(ts(t["attempts"][0]["startedAt"]) for t in tasks.values() if t.get("attempts"))
by = {}
for t in tasks.values():
    if not t.get("attempts"):
        continue
    a = t["attempts"][-1]
    name = t["action"] + ("/" + t["service"] if t.get("service") else "")
    by.setdefault(name, []).append((ts(a["endedAt"]) - ts(a["startedAt"]), ts(a["endedAt"]) - first, len(t["attempts"])))
steps = ("install", "configure", "start")
memo = {}
def chain(tid):
    if tid not in memo:
        t = tasks[tid]
        memo[tid] = (1 if t["action"] in steps and t.get("service") else 0) + max((chain(d) for d in t.get("dependsOn") or [] if d in tasks), default=0)
    return memo[tid]
floor = max(chain(t) for t in tasks)
if floor != expected_floor:
    sys.exit(f"the plan's longest chain of 1 s steps is {floor}, not the {expected_floor} this script divides by")
print(f"  heddle {took:.2f} s; the plan's longest chain of 1 s steps: {floor}; first task started {first - wall0:.2f} s after the POST", file=sys.stderr)
busy, total = cpu1[1] - cpu0[1], cpu1[2] - cpu0[2]
print(f"  CPU during the create: heddle server {cpu1[0] - cpu0[0]:.1f} s; the machine {busy:.1f} of {total:.1f} CPU-seconds busy ({100 * busy / total:.0f}%)", file=sys.stderr)
open(os.environ["HEDDLE_BENCH_CPU_FILE"], "w").write(f"{cpu1[0] - cpu0[0]:.2f}\n")
# Overheads, less sensitive to the machine's load than the total: how long
# a task waited after its last dependency ended (dispatch), and how much
# longer than its 1 s script a step ran (run overhead, SSH and bookkeeping).
ends = {}
def ended(tid):
    """When a task ended; a join (no attempts) when its last dependency did."""
    if tid not in ends:
        t = tasks[tid]
        ends[tid] = ts(t["attempts"][-1]["endedAt"]) if t.get("attempts") else max((ended(d) for d in t.get("dependsOn") or [] if d in tasks), default=None)
    return ends[tid]
gaps = {}
for t in tasks.values():
    if not t.get("attempts"):
        continue
    name = t["action"] + ("/" + t["service"] if t.get("service") else "")
    deps = [ended(d) for d in t.get("dependsOn") or [] if d in tasks]
    deps = [e for e in deps if e is not None]
    if deps:
        gaps.setdefault(name, []).append(ts(t["attempts"][0]["startedAt"]) - max(deps))
for name, v in sorted(by.items(), key=lambda kv: max(x[1] for x in kv[1])):
    g = gaps.get(name, [])
    gap = f"dispatch median {median(g) * 1000:4.0f} ms max {max(g) * 1000:4.0f} ms" if g else "dispatch      -"
    print(f"    {name:18s} {len(v):3d} tasks  median {median(x[0] for x in v):5.2f} s  max {max(x[0] for x in v):5.2f} s  last ended {max(x[1] for x in v):5.2f} s after the first began  {gap}  retried {sum(x[2] > 1 for x in v)}", file=sys.stderr)
# The executor's own time (provider call or SSH action), from the server's
# metrics: what a task's recorded duration spends beyond it is the engine's
# bookkeeping (claim, node read, result write).
d = {k: m1.get(k, 0) - m0.get(k, 0) for k in m1}
execs = ", ".join(f"{a} {d[('sum', a)] / d[('count', a)] * 1000:.0f} ms" for (kind, a) in sorted(d) if kind == "count" and d[(kind, a)] > 0)
print(f"  executor time per attempt (mean, by action): {execs}", file=sys.stderr)
print("  store calls: " + ", ".join(f"{a} {d[(kind, a)]:.0f}" for (kind, a) in sorted(d) if kind == "calls"), file=sys.stderr)
# The critical path, from the task that ended last back through the
# dependency that ended last each time: where every second between the POST
# and ACTIVE went, split into the 1 s steps, their run overhead, the
# provider calls and bootstrap, and the waits between a task's last
# dependency and its start (joins, which run nothing, are skipped over).
def last_dep(tid):
    deps = [d for d in tasks[tid].get("dependsOn") or [] if d in tasks and ended(d) is not None]
    return max(deps, key=ended) if deps else None
path, tid = [], max((i for i in tasks if tasks[i].get("attempts")), key=lambda i: ended(i))
while tid is not None:
    if tasks[tid].get("attempts"):
        path.append(tid)
    tid = last_dep(tid)
path.reverse()
parts = {"1 s steps": 0.0, "step overhead": 0.0, "provider and bootstrap": 0.0, "waits": first - wall0}
print(f"  critical path ({len(path)} tasks; the POST at 0.00 s, the first task started at {first - wall0:.2f} s):", file=sys.stderr)
for tid in path:
    t = tasks[tid]
    a0, a1 = ts(t["attempts"][0]["startedAt"]), ts(t["attempts"][-1]["endedAt"])
    dep = last_dep(tid)
    wait = a0 - ended(dep) if dep else a0 - first
    name = t["action"] + ("/" + t["service"] if t.get("service") else "")
    if t["action"] in steps and t.get("service"):
        parts["1 s steps"] += 1
        parts["step overhead"] += a1 - a0 - 1
    else:
        parts["provider and bootstrap"] += a1 - a0
    parts["waits"] += wait
    print(f"    {name:18s} {t.get('nodeId', ''):>14s}  started {a0 - wall0:6.2f} s  took {a1 - a0:5.2f} s  waited {wait * 1000:5.0f} ms", file=sys.stderr)
print("  the critical path's time: " + ", ".join(f"{k} {v:.2f} s" for k, v in parts.items()) + f"; the rest to ACTIVE {took - sum(parts.values()):.2f} s (the last write and the 50 ms poll)", file=sys.stderr)
over = [x[0] - 1 for name, v in by.items() if name.split("/")[0] in steps and "/" in name for x in v]
allgaps = [x for v in gaps.values() for x in v]
print(f"  per step: run overhead (duration - 1 s) median {median(over) * 1000:.0f} ms, p90 {sorted(over)[int(0.9 * len(over))] * 1000:.0f} ms; dispatch after the last dependency median {median(allgaps) * 1000:.0f} ms, p90 {sorted(allgaps)[int(0.9 * len(allgaps))] * 1000:.0f} ms", file=sys.stderr)
call("DELETE", "/v1/clusters/" + cid)
while call("GET", "/v1/clusters/" + cid)["status"] != "TERMINATED":
    time.sleep(0.2)
print(f"{took:.2f}")
PY
}

# The controller's CPU, which the machine's other load moves less than
# wall time: heddle's server, or ansible-playbook / parallel-ssh with their
# ssh clients. (The hosts' side is not measured: sshd does not account its
# ended sessions' CPU to the listener, so it cannot be summed per host.)
# reaped_cpu: CPU seconds of this shell's reaped children so far.
reaped_cpu() { awk -v tick="$(getconf CLK_TCK)" '{printf "%.2f\n", ($16 + $17) / tick}' "/proc/$$/stat"; }
sub() { python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.2f}')" "$1" "$2"; }

declare -A results ctlcpu
want() { [ -z "${ONLY:-}" ] || [ "$ONLY" = "$1" ]; }
contend() { # name command...
  local name=$1 c0 took c1 ctl
  shift
  c0=$(reaped_cpu)
  took=$("$@")
  c1=$(reaped_cpu)
  if [ "$name" = heddle ]; then ctl=$(cat "$data/heddle-cpu"); else ctl=$(sub "$c0" "$c1"); fi
  results[$name]+=" $took" ctlcpu[$name]+=" $ctl"
  echo "  $name: $took s; controller CPU $ctl s" >&2
}
for round in $(seq "$runs"); do
  echo "bench-static: round $round of $runs" >&2
  want heddle && contend heddle run_heddle
  want ansible-linear && contend ansible-linear run_ansible linear
  want ansible-free && contend ansible-free run_ansible free
  want parallel-ssh && contend parallel-ssh run_pssh
done

summary() { # name "walls" "controller CPU"
  python3 - "$floor" "$@" <<'PY'
import statistics, sys
floor, name = float(sys.argv[1]), sys.argv[2]
vals, ctl = ([float(v) for v in a.split()] for a in sys.argv[3:5])
med = statistics.median(vals)
print(f"{name:15s} median {med:6.2f} s  min {min(vals):6.2f}  max {max(vals):6.2f}  x floor {med / floor:4.2f}   ({' '.join(f'{v:.2f}' for v in vals)})"
      f"   controller CPU median {statistics.median(ctl):5.1f} s")
PY
}
echo
echo "50-node create, 3 services x install/configure/start of 1 s each; floor (critical path) $floor.00 s; $runs rounds"
for name in heddle ansible-linear ansible-free parallel-ssh; do
  want "$name" || continue
  summary "$name" "${results[$name]}" "${ctlcpu[$name]}"
done
