#!/usr/bin/env bash
# bench-fanout.sh: the fan-out benchmark of issue 6 with every contender.
# A script that sleeps 1 s runs on 50 OpenSSH hosts through heddle's
# automator, through a minimal golang.org/x/crypto/ssh program, and through
# parallel-ssh (Debian pssh), on the same hosts with the same keys.
#
#   scripts/bench-fanout.sh              # BENCHTIME=3x by default
#   BENCHTIME=5x scripts/bench-fanout.sh
#
# It installs Debian's pssh when parallel-ssh is missing (apt-get, so it
# needs root, as scripts/sshd-hosts.sh does), starts 50 sshd hosts unless
# they already run, runs
#
#   go test -run '^$' -bench FanOut50 ./internal/provision ./internal/sshexec -benchtime 3x
#
# and stops the hosts again if it started them. The benchmarks look for the
# binary named parallel-ssh; where the package installs it as pssh only, a
# parallel-ssh link to it is put first on PATH for this run.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

readonly hosts=50
readonly benchtime="${BENCHTIME:-3x}"

die() { echo "bench-fanout: $*" >&2; exit 1; }

tmp="$(mktemp -d)"
started_hosts=0
cleanup() {
	if ((started_hosts)); then scripts/sshd-hosts.sh stop >/dev/null 2>&1 || true; fi
	rm -rf "$tmp"
}
trap cleanup EXIT

if ! command -v parallel-ssh >/dev/null; then
	if ! command -v pssh >/dev/null; then
		command -v apt-get >/dev/null || die "parallel-ssh is missing and apt-get is not available to install pssh"
		((EUID == 0)) || die "parallel-ssh is missing; installing pssh needs root"
		echo "bench-fanout: installing pssh" >&2
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq pssh >/dev/null ||
			{ DEBIAN_FRONTEND=noninteractive apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq pssh >/dev/null; }
	fi
	if ! command -v parallel-ssh >/dev/null; then
		psshbin="$(command -v pssh)" || die "pssh was installed but neither parallel-ssh nor pssh is on PATH"
		ln -s "$psshbin" "$tmp/parallel-ssh"
		export PATH="$tmp:$PATH"
	fi
fi
echo "bench-fanout: parallel-ssh is $(command -v parallel-ssh)" >&2

# Start the hosts unless 50 already run; stop at exit only what this run
# started (servers found running are left as they were).
status="$(scripts/sshd-hosts.sh status 2>/dev/null)" && running=1 || running=0
if ((running == 0)); then
	scripts/sshd-hosts.sh start "$hosts"
	started_hosts=1
elif [[ "$status" =~ ^([0-9]+)\ of\ ([0-9]+) ]] && ((BASH_REMATCH[2] < hosts)); then
	scripts/sshd-hosts.sh start "$hosts" # adds the missing ones
fi
vars="$(scripts/sshd-hosts.sh env)"
eval "$vars"

go test -run '^$' -bench FanOut50 ./internal/provision ./internal/sshexec -benchtime "$benchtime"
