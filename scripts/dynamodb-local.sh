#!/usr/bin/env bash
# dynamodb-local.sh start|stop|env|status
#
# Runs AWS's DynamoDB Local on 127.0.0.1 for the dynamostore conformance suite.
# The emulator ships inside the npm package amplify-dynamodb-simulator (its
# emulator/ folder); we `npm pack` the tarball and unpack only that folder, so
# none of the package's Node dependencies are installed. It runs with the
# machine's Java, in memory: every start is an empty database.
#
#   scripts/dynamodb-local.sh start   # idempotent; waits until the port answers
#   eval "$(scripts/dynamodb-local.sh env)"
#   go test ./internal/store/dynamostore/
#   scripts/dynamodb-local.sh stop
#
# HEDDLE_DYNAMODB_PORT overrides the port (default 8000).
set -euo pipefail

readonly simulator_version=2.9.30
script_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo_root="$(cd "$script_dir/.." && pwd)"
readonly tools_dir="$repo_root/.tools"
readonly emulator_dir="$tools_dir/dynamodb-local-$simulator_version"
readonly run_dir="$script_dir/.run"
readonly port="${HEDDLE_DYNAMODB_PORT:-8000}"
readonly pid_file="$run_dir/dynamodb-local-$port.pid"
readonly log_file="$run_dir/dynamodb-local-$port.log"
readonly endpoint="http://127.0.0.1:$port"

die() { echo "dynamodb-local: $*" >&2; exit 1; }

install_emulator() {
	[[ -f "$emulator_dir/DynamoDBLocal.jar" ]] && return 0
	command -v npm >/dev/null || die "npm is needed to fetch amplify-dynamodb-simulator@$simulator_version"
	local work
	work="$(mktemp -d)"
	# Unpack into a temporary directory and move it into place at the end, so an
	# interrupted download never leaves a half-installed emulator behind.
	(cd "$work" && npm pack --silent "amplify-dynamodb-simulator@$simulator_version" >/dev/null)
	tar -xzf "$work"/amplify-dynamodb-simulator-*.tgz -C "$work" package/emulator
	[[ -f "$work/package/emulator/DynamoDBLocal.jar" ]] || die "the package has no emulator/DynamoDBLocal.jar"
	mkdir -p "$tools_dir"
	rm -rf "$emulator_dir"
	mv "$work/package/emulator" "$emulator_dir"
	rm -rf "$work"
}

running_pid() {
	[[ -f "$pid_file" ]] || return 1
	local pid
	pid="$(cat "$pid_file")"
	[[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null || return 1
	echo "$pid"
}

port_answers() {
	# Any HTTP answer means the server is up; DynamoDB Local replies 400 to a bare GET.
	curl -s -o /dev/null --max-time 1 "$endpoint" 2>/dev/null ||
		(exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null
}

start() {
	if pid="$(running_pid)"; then
		echo "dynamodb-local: already running (pid $pid) at $endpoint"
		return 0
	fi
	port_answers && die "port $port is taken by another process; set HEDDLE_DYNAMODB_PORT"
	command -v java >/dev/null || die "java is needed to run DynamoDB Local"
	install_emulator
	mkdir -p "$run_dir"
	# -sharedDb would merge regions/credentials into one database; we keep the
	# default so tests with different dummy credentials do not collide.
	# It runs from the run directory because it writes a metadata file into
	# its working directory.
	local pid deadline=$((SECONDS + 60))
	pid="$(
		cd "$run_dir"
		nohup java -Djava.library.path="$emulator_dir/DynamoDBLocal_lib" \
			-jar "$emulator_dir/DynamoDBLocal.jar" \
			-inMemory -port "$port" -disableTelemetry \
			>"$log_file" 2>&1 </dev/null &
		echo $!
	)"
	echo "$pid" >"$pid_file"
	until port_answers; do
		if ! kill -0 "$pid" 2>/dev/null; then
			rm -f "$pid_file"
			die "DynamoDB Local exited; see $log_file"
		fi
		if ((SECONDS >= deadline)); then
			stop >/dev/null
			die "DynamoDB Local did not answer on port $port within 60s; see $log_file"
		fi
		sleep 0.2
	done
	echo "dynamodb-local: started (pid $pid) at $endpoint"
}

stop() {
	local pid
	if ! pid="$(running_pid)"; then
		rm -f "$pid_file"
		echo "dynamodb-local: not running"
		return 0
	fi
	kill "$pid"
	for _ in $(seq 50); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -0 "$pid" 2>/dev/null && kill -9 "$pid"
	rm -f "$pid_file"
	echo "dynamodb-local: stopped (pid $pid)"
}

case "${1:-}" in
start) start ;;
stop) stop ;;
env) echo "export HEDDLE_DYNAMODB_ENDPOINT=$endpoint" ;;
status)
	if pid="$(running_pid)"; then echo "dynamodb-local: running (pid $pid) at $endpoint"; else echo "dynamodb-local: not running"; exit 1; fi
	;;
*) die "usage: $0 start|stop|env|status" ;;
esac
