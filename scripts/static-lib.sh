# Shared by scripts/demo-static.sh and scripts/bench-static.sh (sourced):
# OpenSSH hosts claimed from other tests, and a heddle server in a fresh
# data directory. Callers define die().

# ssh_hosts_env imports HEDDLE_SSH_* from scripts/sshd-hosts.sh unless set.
ssh_hosts_env() {
  if [ -z "${HEDDLE_SSH_HOSTS:-}" ]; then
    local vars
    vars=$(scripts/sshd-hosts.sh env) || die "no OpenSSH hosts: start them with 'sudo scripts/sshd-hosts.sh start $1', or set HEDDLE_SSH_HOSTS and friends"
    eval "$vars"
  fi
  : "${HEDDLE_SSH_USER:?}" "${HEDDLE_SSH_KEY:?}" "${HEDDLE_SSH_KNOWN_HOSTS:?}"
}

# claim_hosts N: sets hosts=(N addresses) that no other test or demo holds,
# each held by an flock on /tmp/heddle-sshd-claims/<address>.lock until
# this shell exits (the Go tests' providertest.Claim takes the same locks).
# The services of a static pool listen on the hosts' addresses: two users
# of one address would collide. Waits up to 5 minutes while too few are free.
claim_hosts() {
  local wanted=$1 claims=/tmp/heddle-sshd-claims addr lock f fd=20
  command -v flock >/dev/null || die "flock (util-linux) is needed to claim hosts other tests may be using"
  mkdir -p "$claims"
  hosts=()
  for _ in $(seq 60); do
    for addr in ${HEDDLE_SSH_HOSTS//,/ }; do
      [ "${#hosts[@]}" -lt "$wanted" ] || break
      lock="$claims/${addr//:/_}.lock"
      eval "exec $fd>>\"\$lock\""
      if flock -n "$fd"; then
        hosts+=("$addr")
        fd=$((fd + 1))
      else
        eval "exec $fd>&-"
      fi
    done
    [ "${#hosts[@]}" -lt "$wanted" ] || return 0
    # Too few: let go of all (two claimers must not each hold half) and wait.
    for ((f = 20; f < fd; f++)); do eval "exec $f>&-"; done
    hosts=() fd=20
    echo "only some of the hosts are free of other tests' claims; waiting" >&2
    sleep 5
  done
  die "$wanted OpenSSH hosts free of other tests' claims are needed (of $HEDDLE_SSH_HOSTS)"
}

# start_server DATA: builds bin/heddle (or uses $HEDDLE_BIN), starts `heddle server` on a free
# port with its data in DATA, and sets heddle, server_pid, HEDDLE_ENDPOINT,
# HEDDLE_CONFIG and super (the superadmin key).
start_server() {
  local data=$1 port
  if [ -n "${HEDDLE_BIN:-}" ]; then
    # A binary built elsewhere (to compare two versions run by run).
    heddle=$HEDDLE_BIN
  else
    go build -o bin/heddle ./cmd/heddle
    heddle=$PWD/bin/heddle
  fi
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  export HEDDLE_ENDPOINT="http://127.0.0.1:$port"
  export HEDDLE_CONFIG="$data/cli.yaml" # keep the user's own CLI config out of it
  super=$("$heddle" keygen)
  HEDDLE_BOOTSTRAP_KEY=$super "$heddle" server --data-dir "$data/heddle" --listen "127.0.0.1:$port" >"$data/server.log" 2>&1 &
  server_pid=$!
  for _ in $(seq 100); do
    curl -fs "$HEDDLE_ENDPOINT/v1/status" >/dev/null 2>&1 && return 0
    kill -0 "$server_pid" 2>/dev/null || die "the server exited"
    sleep 0.1
  done
  die "the server did not answer"
}

# stop_server: SIGTERM and wait (nothing when it is not running).
stop_server() {
  if [ -n "${server_pid:-}" ] && kill -0 "$server_pid" 2>/dev/null; then
    kill -TERM "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  server_pid=""
}

# inventory_hosts GROUP PREFIX: prints an Ansible INI group of the claimed
# hosts, named PREFIX0, PREFIX1, ...
inventory_hosts() {
  local i=0 addr
  echo "[$1]"
  for addr in "${hosts[@]}"; do
    echo "$2$i ansible_host=${addr%:*} ansible_port=${addr##*:}"
    i=$((i + 1))
  done
}
