#!/usr/bin/env bash
# sshd-hosts.sh start N|stop|env|status
#
# Runs N real OpenSSH servers (Debian openssh-server) for the SSH automator's
# tests and benchmark: server i listens on 127.0.0.(i+1):2222 with its own
# generated ed25519 host key, and accepts one generated client key for a
# dedicated test user. Everything generated lives in scripts/.run/sshd/
# (gitignored); host keys are kept across restarts so pinned keys stay valid.
#
#   scripts/sshd-hosts.sh start 50    # idempotent: starts the missing servers
#   eval "$(scripts/sshd-hosts.sh env)"
#   go test ./internal/sshexec/
#   scripts/sshd-hosts.sh stop
#
# The test user (HEDDLE_SSHD_USER, default heddle-test) is created if missing:
# shell /bin/sh (a login shell with a heavy profile would slow every
# connection and hide the automator's own cost), password field '*' rather
# than a locked '!' (OpenSSH without PAM refuses locked accounts), and
# passwordless sudo so the automator's `sudo -n` path runs for real. This
# changes the machine (useradd, /etc/sudoers.d): run it on test machines only.
#
# If 127.0.0.2 cannot be bound, every server uses 127.0.0.1 on ports
# 2222, 2223, ... instead. HEDDLE_SSHD_PORT overrides 2222. Needs root.
set -euo pipefail

script_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
readonly run_dir="$script_dir/.run/sshd"
readonly port="${HEDDLE_SSHD_PORT:-2222}"
readonly user="${HEDDLE_SSHD_USER:-heddle-test}"
readonly client_key="$run_dir/id_ed25519"
readonly known_hosts="$run_dir/known_hosts"
readonly max_hosts=250

die() { echo "sshd-hosts: $*" >&2; exit 1; }

install_sshd() {
	[[ -x /usr/sbin/sshd ]] && command -v ssh-keygen >/dev/null && command -v sudo >/dev/null && return 0
	command -v apt-get >/dev/null || die "/usr/sbin/sshd is missing and apt-get is not available to install openssh-server"
	DEBIAN_FRONTEND=noninteractive apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openssh-server sudo >/dev/null
}

ensure_user() {
	if ! id "$user" >/dev/null 2>&1; then
		useradd --create-home --shell /bin/sh "$user"
	fi
	[[ "$(getent passwd "$user" | cut -d: -f7)" == /bin/sh ]] || usermod --shell /bin/sh "$user"
	# '*' matches no password but is not a lock, so public-key logins work
	# with UsePAM no.
	[[ "$(getent shadow "$user" | cut -d: -f2)" == '*' ]] || usermod -p '*' "$user"
	local home
	home="$(getent passwd "$user" | cut -d: -f6)"
	install -d -m 700 -o "$user" -g "$(id -gn "$user")" "$home/.ssh"
	# Append this checkout's client key rather than replace the file: another
	# checkout's servers (a second test run, a benchmark) share the user, and
	# replacing its key made their logins fail mid-run. The lock keeps two
	# starts from interleaving their edits.
	authorized_keys "$home" add
	if [[ -d /etc/sudoers.d ]]; then
		# One rule file per user: with another HEDDLE_SSHD_USER a shared file
		# would be overwritten and the first user would lose sudo. sudo skips
		# files whose names hold a dot, so the user's dots become dashes.
		local rule="/etc/sudoers.d/heddle-sshd-hosts-${user//./-}"
		printf '%s ALL=(ALL) NOPASSWD:ALL\nDefaults:%s !requiretty\n' "$user" "$user" >"$rule.tmp"
		chmod 440 "$rule.tmp"
		mv "$rule.tmp" "$rule"
		# The file all users once shared goes when it holds this user's rule.
		local shared=/etc/sudoers.d/heddle-sshd-hosts
		if [[ -f "$shared" ]] && grep -q "^$user ALL=" "$shared"; then rm -f "$shared"; fi
	fi
}

# authorized_keys HOME add|remove: adds this checkout's client key to the
# test user's authorized_keys, or removes it, under a lock, keeping every
# other line.
authorized_keys() {
	local home="$1" what="$2" file="$1/.ssh/authorized_keys" line
	local lock="$1/.ssh/.heddle.lock" # the static provider's lock too
	line="$(cut -d' ' -f1-2 "$client_key.pub")"
	# The user opens the lock for its own edits: it must own the file.
	[[ -f "$lock" ]] || install -m 600 -o "$user" -g "$(id -gn "$user")" /dev/null "$lock"
	(
		flock 9
		touch "$file"
		if [[ "$what" == add ]]; then
			grep -qxF -- "$line" <(cut -d' ' -f1-2 "$file") || cat "$client_key.pub" >>"$file"
		else
			grep -vF -- "$line" "$file" >"$file.tmp" || true
			cat "$file.tmp" >"$file"
			rm -f "$file.tmp"
		fi
		chown "$user:$(id -gn "$user")" "$file"
		chmod 600 "$file"
	) 9>>"$lock"
}

# loopback_aliases reports whether 127.0.0.2 can be bound (Linux routes all
# of 127/8 to lo; some sandboxes do not).
loopback_aliases() {
	[[ -f "$run_dir/mode" ]] && { [[ "$(cat "$run_dir/mode")" == aliases ]]; return; }
	local ok=1
	if command -v python3 >/dev/null; then
		python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.2", 0))' 2>/dev/null && ok=0
	else
		ok=0 # assume Linux behaviour; a failed start says otherwise
	fi
	if ((ok == 0)); then echo aliases >"$run_dir/mode"; else echo ports >"$run_dir/mode"; fi
	return $ok
}

# address i prints server i's host:port (i from 1).
address() {
	if loopback_aliases; then
		echo "127.0.0.$(($1 + 1)):$port"
	else
		echo "127.0.0.1:$(($port + $1 - 1))"
	fi
}

running_pid() {
	local pid_file="$run_dir/host-$1/pid"
	[[ -f "$pid_file" ]] || return 1
	local pid
	pid="$(cat "$pid_file")"
	[[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null || return 1
	echo "$pid"
}

answers() {
	local hp="$1"
	(exec 3<>"/dev/tcp/${hp%:*}/${hp##*:}") 2>/dev/null
}

start_host() {
	local i="$1" dir="$run_dir/host-$1" hp
	hp="$(address "$i")"
	running_pid "$i" >/dev/null && return 0
	mkdir -p "$dir"
	[[ -f "$dir/ssh_host_ed25519_key" ]] || ssh-keygen -q -t ed25519 -N '' -C "heddle-test-host-$i" -f "$dir/ssh_host_ed25519_key"
	cat >"$dir/sshd_config" <<-EOF
		ListenAddress $hp
		HostKey $dir/ssh_host_ed25519_key
		PidFile $dir/sshd.pid
		UsePAM no
		PubkeyAuthentication yes
		PasswordAuthentication no
		KbdInteractiveAuthentication no
		AuthorizedKeysFile .ssh/authorized_keys
		AllowUsers $user
		PermitRootLogin no
		StrictModes yes
		UseDNS no
		PrintMotd no
		PrintLastLog no
		# Many concurrent logins land on one server when N is small: do not
		# drop unauthenticated connections early (the default is 10:30:100).
		MaxStartups 1000
		MaxSessions 100
		LogLevel ERROR
	EOF
	/usr/sbin/sshd -t -f "$dir/sshd_config" || die "host $i: sshd rejects $dir/sshd_config"
	# setsid: the server outlives this script and its terminal.
	setsid /usr/sbin/sshd -D -e -f "$dir/sshd_config" >>"$dir/sshd.log" 2>&1 </dev/null &
	echo $! >"$dir/pid"
}

write_known_hosts() {
	local n="$1" i hp tmp="$known_hosts.tmp"
	: >"$tmp"
	for ((i = 1; i <= n; i++)); do
		hp="$(address "$i")"
		printf '[%s]:%s %s\n' "${hp%:*}" "${hp##*:}" "$(cut -d' ' -f1-2 "$run_dir/host-$i/ssh_host_ed25519_key.pub")" >>"$tmp"
	done
	mv "$tmp" "$known_hosts"
}

cmd_start() {
	local n="${1:-3}"
	[[ "$n" =~ ^[0-9]+$ ]] && ((n >= 1 && n <= max_hosts)) || die "start takes a count from 1 to $max_hosts, not '$n'"
	((EUID == 0)) || die "start needs root (it creates a user and runs sshd)"
	install_sshd
	mkdir -p "$run_dir" /run/sshd
	chmod 755 /run/sshd
	[[ -f "$client_key" ]] || ssh-keygen -q -t ed25519 -N '' -C heddle-test-client -f "$client_key"
	ensure_user
	local i previous=0
	[[ -f "$run_dir/count" ]] && previous="$(cat "$run_dir/count")"
	for ((i = 1; i <= n; i++)); do start_host "$i"; done
	# Keep servers beyond n that still run: env lists every running one.
	((previous > n)) && n="$previous"
	echo "$n" >"$run_dir/count"
	write_known_hosts "$n"
	local deadline=$((SECONDS + 20))
	for ((i = 1; i <= n; i++)); do
		until answers "$(address "$i")"; do
			running_pid "$i" >/dev/null || die "host $i died: $(tail -n 5 "$run_dir/host-$i/sshd.log")"
			((SECONDS < deadline)) || die "host $i does not answer on $(address "$i")"
			sleep 0.1
		done
	done
	echo "sshd-hosts: $n servers up" >&2
}

cmd_stop() {
	[[ -d "$run_dir" ]] || return 0
	local dir pid
	for dir in "$run_dir"/host-*; do
		[[ -f "$dir/pid" ]] || continue
		pid="$(cat "$dir/pid")"
		[[ -n "$pid" ]] && kill "$pid" 2>/dev/null || true
		rm -f "$dir/pid"
	done
	rm -f "$run_dir/count"
	local home
	if [[ -f "$client_key.pub" ]] && home="$(getent passwd "$user" | cut -d: -f6)" && [[ -d "$home/.ssh" ]]; then
		authorized_keys "$home" remove
	fi
}

cmd_env() {
	[[ -f "$run_dir/count" ]] || die "not started: run scripts/sshd-hosts.sh start N"
	local n i hosts=""
	n="$(cat "$run_dir/count")"
	for ((i = 1; i <= n; i++)); do
		running_pid "$i" >/dev/null || die "host $i is not running: run start again"
		hosts+="${hosts:+,}$(address "$i")"
	done
	echo "export HEDDLE_SSH_HOSTS=$hosts"
	echo "export HEDDLE_SSH_USER=$user"
	echo "export HEDDLE_SSH_KEY=$client_key"
	echo "export HEDDLE_SSH_KNOWN_HOSTS=$known_hosts"
}

cmd_status() {
	# Exits non-zero unless every server runs, so callers can start what is missing.
	[[ -f "$run_dir/count" ]] || { echo "stopped"; return 1; }
	local n i up=0
	n="$(cat "$run_dir/count")"
	for ((i = 1; i <= n; i++)); do running_pid "$i" >/dev/null && up=$((up + 1)); done
	echo "$up of $n servers running"
	((up == n))
}

case "${1:-}" in
start) cmd_start "${2:-3}" ;;
stop) cmd_stop ;;
env) cmd_env ;;
status) cmd_status ;;
*) die "usage: $0 start N|stop|env|status" ;;
esac
