#!/usr/bin/env bash
# fauxqs.sh start|stop|env|status
#
# Runs fauxqs, an SQS emulator on Node that speaks the JSON protocol of
# current aws-sdk-go-v2 (FIFO queues, message groups, deduplication ids,
# visibility changes, dead-letter queues), on 127.0.0.1 for the sqsqueue
# conformance suite. It keeps everything in memory: every start is empty.
# fauxqs 2.x needs Node 22.5, so we pin 1.9.2, which runs on Node 20.
#
#   scripts/fauxqs.sh start   # idempotent; waits until the port answers
#   eval "$(scripts/fauxqs.sh env)"
#   go test ./internal/queue/sqsqueue/
#   scripts/fauxqs.sh stop
#
# FAUXQS_PORT overrides the port (default 4577).
set -euo pipefail

readonly fauxqs_version=1.9.2
script_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo_root="$(cd "$script_dir/.." && pwd)"
readonly tools_dir="$repo_root/.tools"
readonly install_dir="$tools_dir/fauxqs"
readonly cli="$install_dir/node_modules/fauxqs/dist/cli.js" # proves the install is whole
readonly run_dir="$script_dir/.run"
readonly port="${FAUXQS_PORT:-4577}"
readonly pid_file="$run_dir/fauxqs-$port.pid"
readonly log_file="$run_dir/fauxqs-$port.log"
readonly endpoint="http://127.0.0.1:$port"

# serve_js is cli.js with the listen address pinned to 127.0.0.1.
# shellcheck disable=SC2016 # the $ are JavaScript's
readonly serve_js='
const { buildApp } = await import(process.env.FAUXQS_APP);
const app = buildApp({ logger: process.env.FAUXQS_LOGGER !== "false" });
await app.listen({ port: Number(process.env.FAUXQS_PORT), host: "127.0.0.1" });
for (const signal of ["SIGTERM", "SIGINT"]) {
	process.on(signal, () => app.close().then(() => process.exit(0)));
}
'

die() { echo "fauxqs: $*" >&2; exit 1; }

installed_version() {
	node -p "require('$install_dir/node_modules/fauxqs/package.json').version" 2>/dev/null
}

install_fauxqs() {
	[[ -f "$cli" && "$(installed_version)" == "$fauxqs_version" ]] && return 0
	command -v npm >/dev/null || die "npm is needed to install fauxqs@$fauxqs_version"
	local work
	work="$(mktemp -d)"
	# shellcheck disable=SC2064 # expand now: work is local
	trap "rm -rf '$work'" EXIT # gone already when the install succeeds
	# Install into a temporary directory and move it into place at the end, so
	# an interrupted install never leaves a half-installed emulator behind.
	(cd "$work" && npm install --silent --no-audit --no-fund --no-save --prefix "$work" "fauxqs@$fauxqs_version" >/dev/null)
	[[ -f "$work/node_modules/fauxqs/dist/cli.js" ]] || die "the package has no dist/cli.js"
	mkdir -p "$tools_dir"
	rm -rf "$install_dir"
	mv "$work" "$install_dir"
}

running_pid() {
	[[ -f "$pid_file" ]] || return 1
	local pid
	pid="$(cat "$pid_file")"
	[[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null || return 1
	echo "$pid"
}

port_answers() {
	(exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null
}

start() {
	if pid="$(running_pid)"; then
		echo "fauxqs: already running (pid $pid) at $endpoint"
		return 0
	fi
	port_answers && die "port $port is taken by another process; set FAUXQS_PORT"
	command -v node >/dev/null || die "node is needed to run fauxqs"
	install_fauxqs
	mkdir -p "$run_dir"
	# fauxqs's cli.js (startFauxqs) always listens on 0.0.0.0, which would
	# offer an unauthenticated SQS to the network; we build the same app
	# through its exported buildApp and listen on loopback only. Queue URLs
	# it hands out read http://sqs.<region>.localhost:<port>/<account>/<name>;
	# aws-sdk-go-v2 sends every call to its BaseEndpoint and the URL only
	# names the queue, so their host never has to resolve.
	local pid deadline=$((SECONDS + 30))
	pid="$(
		cd "$run_dir"
		FAUXQS_PORT="$port" FAUXQS_LOGGER=false FAUXQS_APP="$install_dir/node_modules/fauxqs/dist/app.js" \
			nohup node --input-type=module -e "$serve_js" >"$log_file" 2>&1 </dev/null &
		echo $!
	)"
	echo "$pid" >"$pid_file"
	until port_answers; do
		if ! kill -0 "$pid" 2>/dev/null; then
			rm -f "$pid_file"
			die "fauxqs exited; see $log_file"
		fi
		if ((SECONDS >= deadline)); then
			stop >/dev/null
			die "fauxqs did not answer on port $port within 30s; see $log_file"
		fi
		sleep 0.1
	done
	echo "fauxqs: started (pid $pid) at $endpoint"
}

stop() {
	local pid
	if ! pid="$(running_pid)"; then
		rm -f "$pid_file"
		echo "fauxqs: not running"
		return 0
	fi
	kill "$pid"
	for _ in $(seq 50); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -0 "$pid" 2>/dev/null && kill -9 "$pid"
	rm -f "$pid_file"
	echo "fauxqs: stopped (pid $pid)"
}

case "${1:-}" in
start) start ;;
stop) stop ;;
env) echo "export HEDDLE_SQS_ENDPOINT=$endpoint" ;;
status)
	if pid="$(running_pid)"; then echo "fauxqs: running (pid $pid) at $endpoint"; else echo "fauxqs: not running"; exit 1; fi
	;;
*) die "usage: $0 start|stop|env|status" ;;
esac
