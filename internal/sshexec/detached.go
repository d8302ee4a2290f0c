package sshexec

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"strconv"
	"strings"
	"time"
)

// Detached is a long command to start on a node and follow by polling.
//
// A worker that waits on an open session for a 20-minute install pays for
// every second of it (Lambda bills the wait and stops at 15 minutes), so
// actions longer than a threshold are started detached instead: the script
// runs under setsid (or nohup), outliving the session, and writes its output
// and exit status into Dir; the engine comes back later and Polls.
type Detached struct {
	// Dir is the command's own directory on the node, absolute, one per task
	// attempt (for example /var/tmp/heddle/tasks/<task>-<attempt>): a retried
	// start with the same Dir starts nothing new. Under /var/tmp it survives
	// a reboot, which Poll then detects; under a tmpfs it vanishes, which
	// Poll reports too.
	Dir    string
	Script string
	Env    map[string]string
	// Files are written before the command starts (parents made 0700, each
	// file 0600 or its Mode), through the start's own session: a task's
	// context and script cost no upload round trips of their own. Their
	// bytes travel on stdin, never on a command line.
	Files []File
	// Wait, when positive, keeps the start's session open while the command
	// runs, for up to Wait (rounded up to whole seconds; the node's shell
	// waits on the command, nothing polls): a command that ends within it
	// is reported at once in the start's answer, as Poll would report it.
	// Most actions are short; this saves the polls' round trips and the
	// poll interval's latency.
	Wait time.Duration
	// RemoveAfter, when set (absolute), is deleted in the same session once
	// a command that ended within Wait has been reported (its attempt's
	// files, which the caller no longer needs).
	RemoveAfter string
	// Secrets are redacted from the tails of a command reported at start.
	Secrets []string
}

// Started is what StartAndWait found.
type Started struct {
	// Started is false when a previous start with the same Dir had already
	// started the command.
	Started bool
	// Status is Running when no Wait was asked or the command still ran
	// after it; otherwise as Poll reports it.
	Status Status
}

// Files in a detached command's directory.
const (
	detachedScript = "script"  // exports + script, 0600 (not on a command line)
	detachedBoot   = "boot_id" // the node's boot id at start
	detachedPID    = "pid"     // the wrapper's pid, written by the wrapper
	detachedStatus = "status"  // exit code, written last, atomically
	detachedStop   = "stop"    // left by StopDetached: the wrapper runs nothing
)

// StartDetached starts d and returns once its wrapper process runs, and
// whether this call started it (false: a previous call with the same Dir
// already had). The script and its exports travel through stdin into a 0600
// file, so they do not show in the node's process list.
func (c *Client) StartDetached(ctx context.Context, d Detached) (started bool, err error) {
	d.Wait, d.RemoveAfter = 0, ""
	s, err := c.StartAndWait(ctx, d)
	return s.Started, err
}

// StartAndWait is StartDetached that writes d.Files first and, with
// d.Wait, follows the command for up to d.Wait in the same session: one
// session does what uploads, a start and polls would do in several.
func (c *Client) StartAndWait(ctx context.Context, d Detached) (Started, error) {
	if err := checkRemotePath(d.Dir); err != nil {
		return Started{}, err
	}
	if d.RemoveAfter != "" {
		if err := checkRemotePath(d.RemoveAfter); err != nil {
			return Started{}, err
		}
	}
	env, err := exports(d.Env)
	if err != nil {
		return Started{}, err
	}
	in, err := startInput(d.Files, env+d.Script)
	if err != nil {
		return Started{}, err
	}
	keep := newTailBuffer(TailLimit, d.Secrets)
	fetch := keep.limit + keep.context
	wait := waitSeconds(d.Wait)
	var stdout bytes.Buffer
	stderr := newTailBuffer(TailLimit, nil)
	_, err = c.control(ctx, startScript(d.Dir, stdinLoad(len(in)), wait, fetch, d.RemoveAfter),
		startScript(d.Dir, inlineLoad(in), wait, fetch, d.RemoveAfter), strings.NewReader(in), &stdout, stderr)
	var exit *ExitError
	if errors.As(err, &exit) {
		return Started{}, fmt.Errorf("sshexec: start detached command in %s on node %s: %w: %s", d.Dir, c.target.Node, err, strings.TrimSpace(stderr.tail(nil).Text))
	}
	if err != nil {
		return Started{}, err
	}
	first, rest, _ := strings.Cut(stdout.String(), "\n")
	var s Started
	switch strings.TrimSpace(first) {
	case "started":
		s.Started = true
	case "already":
	default:
		return Started{}, fmt.Errorf("sshexec: start detached command in %s on node %s: unexpected answer %q", d.Dir, c.target.Node, strings.TrimSpace(first))
	}
	if d.Wait <= 0 {
		s.Status = Status{State: Running}
		return s, nil
	}
	s.Status, err = c.status(strings.NewReader(rest), d.Dir, fetch, d.Secrets)
	return s, err
}

// waitSeconds is d in whole seconds, rounded up (sleep(1) takes integers
// everywhere).
func waitSeconds(d time.Duration) int {
	if d <= 0 {
		return 0
	}
	return int((d + time.Second - 1) / time.Second)
}

// startInput is the start's stdin: shell text that writes files (each a
// printf of a single-quoted literal, exact to the byte) and then the
// command's own script to "$d/script". The start sources it once it is
// saved whole (its size is checked), so a cut connection runs nothing.
func startInput(files []File, script string) (string, error) {
	var b strings.Builder
	for _, f := range files {
		if err := checkRemotePath(f.Path); err != nil {
			return "", err
		}
		if bytes.IndexByte(f.Data, 0) >= 0 {
			return "", fmt.Errorf("sshexec: file %s holds a NUL byte, which a detached start cannot carry (upload it)", f.Path)
		}
		mode := uint32(f.Mode.Perm())
		if mode == 0 {
			mode = 0o600
		}
		// Builtins where they do: every process started on the node
		// counts when a thousand nodes start an action at once.
		p, dir := quote(f.Path), quote(path.Dir(f.Path))
		b.WriteString("[ -d " + dir + " ] || mkdir -p -- " + dir + " || return 1\n")
		b.WriteString("printf '%s' " + quote(string(f.Data)) + " > " + p + " || return 1\n")
		if mode != 0o600 { // a new file under umask 077 is 0600 already
			b.WriteString("chmod " + strconv.FormatUint(uint64(mode), 8) + " " + p + " || return 1\n")
		}
	}
	if strings.IndexByte(script, 0) >= 0 {
		return "", errors.New("sshexec: the script holds a NUL byte")
	}
	b.WriteString("printf '%s' " + quote(script) + " > \"$d/" + detachedScript + "\" || return 1\n")
	return b.String(), nil
}

// startScript creates dir (failing if it exists but holds no started
// command; when its parent is missing too, the attempt's directory, both in
// one mkdir: it made both only if neither existed, so the start is this
// one's, and a process less per action), saves stdin (size bytes, checked: a cut connection leaves
// nothing behind) and sources it to write the files and the script, records
// the boot id and launches the wrapper, which records its pid, runs the
// script and writes the status to a temporary file renamed into place. The
// wrapper leads its own session and process group (setsid; nohup where
// there is no setsid); it ignores SIGHUP, which the script inherits, as
// nohup would have it, and traps (rather than ignores, which the script
// would inherit) SIGTERM, so that StopDetached's signal to the group ends
// the script and the wrapper still records the status (143 when the signal
// came before the script started, or when it finds StopDetached's stop
// file once its pid is written). The script file is sourced in a subshell
// of the wrapper (its traps reset, no positional parameters) rather than
// run by a new /bin/sh: one exec less per action. That subshell looks for
// the stop file again just before it sources the script: StopDetached
// writes the file before it signals, so a signal that lands between the
// wrapper's look and the subshell's birth (which the wrapper's trap
// absorbs) is caught by that look, and one that lands later finds the
// subshell, whose TERM is not trapped. It waits
// (up to 10 s) for the pid file, so a Poll right after a start never
// mistakes a starting command for a lost one.
//
// With wait > 0 the shell then waits for the wrapper (its child) for up to
// wait seconds: a timer subshell interrupts the wait with SIGUSR1, which
// the shell traps. $$ would name the parent of the subshell that sudo's
// relay runs this in, so the shell reads its own pid from /proc/self/stat
// (a builtin read: no process), or, without /proc, a child's $PPID. Then it reports as pollScript does, and removes removeAfter when
// the command has ended.
func startScript(dir, load string, wait, fetch int, removeAfter string) string {
	q := quote(dir)
	s := `umask 077
d=` + q + `
report_only= ended=
if [ -d "${d%/*}" ] || ! mkdir -- "${d%/*}" "$d" 2>/dev/null; then
[ -d "${d%/*}" ] || mkdir -p -- "${d%/*}" || exit 1
if ! mkdir -- "$d" 2>/dev/null; then
	if [ -f "$d/` + detachedPID + `" ]; then echo already; ` + map[bool]string{true: "report_only=1", false: "exit 0"}[wait > 0] + `
	else echo "heddle: $d exists but holds no started command" >&2; exit 1; fi
fi
fi
if [ -z "$report_only" ]; then
` + load + `read b < /proc/sys/kernel/random/boot_id 2>/dev/null || b=unknown
echo "$b" > "$d/` + detachedBoot + `"
s=nohup; command -v setsid >/dev/null 2>&1 && s=setsid
$s /bin/sh -c 'trap "" HUP; trap "stop=1" TERM INT
echo $$ > "$1/pid.tmp" && mv -f "$1/pid.tmp" "$1/` + detachedPID + `"
[ -f "$1/` + detachedStop + `" ] && stop=1
if [ -z "$stop" ]; then ( [ -f "$1/` + detachedStop + `" ] && exit 143; heddle_script="$1/` + detachedScript + `"; set --; unset stop; . "$heddle_script" ) > "$1/stdout" 2> "$1/stderr" < /dev/null; s=$?; else : > "$1/stdout"; : > "$1/stderr"; s=143; fi
echo $s > "$1/status.tmp" && mv -f "$1/status.tmp" "$1/` + detachedStatus + `"' heddle-detached "$d" > /dev/null 2>&1 < /dev/null &
w=$!
`
	if wait > 0 {
		// Waiting first: a command that ends within it has long written
		// its pid, so the loop below starts no sleep.
		s += `me=; read -r me _ < /proc/self/stat 2>/dev/null || me=$(exec /bin/sh -c 'echo $PPID')
timed=
trap 'timed=1' USR1
( sleep ` + strconv.Itoa(wait) + `; kill -s USR1 "$me" ) > /dev/null 2>&1 < /dev/null &
t=$!
wait "$w"
kill "$t" 2> /dev/null
# Ended (its status written, or its directory gone): nothing to wait for.
[ -z "$timed" ] && { [ -f "$d/` + detachedStatus + `" ] || [ ! -d "$d" ]; } && ended=1
`
	}
	s += `i=0
while [ -z "$ended" ] && [ ! -f "$d/` + detachedPID + `" ]; do
	i=$((i + 1))
	if [ $i -gt 1000 ]; then echo "heddle: the detached command did not start" >&2; exit 1; fi
	sleep 0.01 2>/dev/null || sleep 1
done
echo started
fi
`
	if wait <= 0 {
		return s
	}
	after := ""
	if removeAfter != "" {
		after = "rm -rf -- " + quote(removeAfter) + "\n"
	}
	return s + pollScriptThen(dir, fetch, after)
}

// stdinLoad is startScript's load step for a session of its own: the
// files' text (size bytes) arrives on stdin and is saved, size-checked (a
// cut connection leaves nothing behind) and sourced.
func stdinLoad(size int) string {
	return `cat > "$d/in" || { rm -rf -- "$d"; exit 1; }
n=$(wc -c < "$d/in")
if [ $((n)) -ne ` + strconv.Itoa(size) + ` ]; then rm -rf -- "$d"; echo "heddle: start input truncated at $n bytes" >&2; exit 1; fi
. "$d/in" || { rm -rf -- "$d"; exit 1; }
`
}

// inlineLoad is startScript's load step for a dispatcher, which has the
// whole request before it runs any of it: the files' text is a function
// of the script itself (no file, no cat, no wc).
func inlineLoad(in string) string {
	if !strings.HasSuffix(in, "\n") {
		in += "\n"
	}
	return "heddle_files() {\n" + in + "}\nheddle_files || { rm -rf -- \"$d\"; exit 1; }\n"
}

// State is where a detached command stands.
type State int

const (
	Running State = iota + 1
	Exited
	Lost
)

func (s State) String() string {
	switch s {
	case Running:
		return "running"
	case Exited:
		return "exited"
	case Lost:
		return "lost"
	}
	return "State(" + strconv.Itoa(int(s)) + ")"
}

// Status is what a Poll found.
type Status struct {
	State State
	// ExitCode, Stdout and Stderr are set when State is Exited.
	ExitCode int
	Stdout   Tail
	Stderr   Tail
	// Reason says why a command is Lost.
	Reason string
	err    error
}

// Err is nil for a command that exited 0 and otherwise says what went wrong:
// an *ExitError, a *LostError, or, for a running command, nil.
func (s Status) Err() error { return s.err }

// Poll looks once at a detached command: Running, Exited with its code and
// output tails (secrets redacted), or Lost when its directory is gone, the
// node rebooted since the start (the boot id changed), or its process ended
// without writing a status. An error is returned only when the node could
// not be asked.
func (c *Client) Poll(ctx context.Context, dir string, secrets []string) (Status, error) {
	if err := checkRemotePath(dir); err != nil {
		return Status{}, err
	}
	keep := newTailBuffer(TailLimit, secrets)
	fetch := keep.limit + keep.context
	var stdout bytes.Buffer
	stderr := newTailBuffer(TailLimit, nil)
	if _, err := c.control(ctx, pollScript(dir, fetch), "", nil, &stdout, stderr); err != nil {
		var exit *ExitError
		if errors.As(err, &exit) {
			return Status{}, fmt.Errorf("sshexec: poll %s on node %s: %w: %s", dir, c.target.Node, err, strings.TrimSpace(stderr.tail(nil).Text))
		}
		return Status{}, err
	}
	return c.status(&stdout, dir, fetch, secrets)
}

// status reads pollScript's answer about the command in dir.
func (c *Client) status(r io.Reader, dir string, fetch int, secrets []string) (Status, error) {
	st, err := parsePoll(r, fetch, secrets)
	if err != nil {
		return Status{}, fmt.Errorf("sshexec: poll %s on node %s: %w", dir, c.target.Node, err)
	}
	switch st.State {
	case Lost:
		st.err = &LostError{Node: c.target.Node, Address: c.target.Address, Dir: dir, Reason: st.Reason}
	case Exited:
		if st.ExitCode != 0 {
			st.err = &ExitError{Node: c.target.Node, Address: c.target.Address, Code: st.ExitCode}
		}
	}
	return st, nil
}

// Reasons a detached command is lost.
const (
	LostMissing  = "its directory is missing"
	LostRebooted = "the node rebooted since it started"
	LostVanished = "its process ended without recording an exit status"
)

// pollScript prints "state=..." and, for an exited command, its code, the
// sizes of its output files, a "--" line and the last fetch bytes of stdout
// then of stderr.
func pollScript(dir string, fetch int) string { return pollScriptThen(dir, fetch, "") }

// pollScriptThen is pollScript that runs after (shell text) once it has
// reported an exited command.
func pollScriptThen(dir string, fetch int, after string) string {
	f := strconv.Itoa(fetch)
	return `d=` + quote(dir) + `
if [ ! -d "$d" ]; then echo state=lost; echo reason=missing; exit 0; fi
read -r b < /proc/sys/kernel/random/boot_id 2>/dev/null || b=unknown
b0=; read -r b0 < "$d/` + detachedBoot + `" 2>/dev/null
if [ "$b" != "$b0" ]; then echo state=lost; echo reason=rebooted; exit 0; fi
report() {
	echo state=exited
	read c < "$d/` + detachedStatus + `"
	echo "code=$c"
	o=0; e=0
	[ -s "$d/stdout" ] && o=$(wc -c < "$d/stdout")
	[ -s "$d/stderr" ] && e=$(wc -c < "$d/stderr")
	echo "stdout=$o"
	echo "stderr=$e"
	echo --
	[ $((o)) -eq 0 ] || tail -c ` + f + ` "$d/stdout"
	[ $((e)) -eq 0 ] || tail -c ` + f + ` "$d/stderr"
	` + after + `exit 0
}
[ -f "$d/` + detachedStatus + `" ] && report
p=$(cat "$d/` + detachedPID + `" 2>/dev/null)
if [ -n "$p" ]; then
	if [ -r /proc/$p/cmdline ]; then
		tr '\0' '\n' < /proc/$p/cmdline | grep -qxF -- "$d" && { echo state=running; exit 0; }
	elif [ ! -d /proc/self ] && kill -0 "$p" 2>/dev/null; then
		echo state=running; exit 0
	fi
fi
# The command may have finished between the two looks.
[ -f "$d/` + detachedStatus + `" ] && report
echo state=lost; echo reason=vanished
`
}

// parsePoll reads pollScript's output.
func parsePoll(r io.Reader, fetch int, secrets []string) (Status, error) {
	br := bufio.NewReader(r)
	fields := map[string]string{}
	for {
		line, err := br.ReadString('\n')
		line = strings.TrimSuffix(line, "\n")
		if line == "--" {
			break
		}
		if k, v, ok := strings.Cut(line, "="); ok {
			fields[k] = strings.TrimSpace(v)
		}
		if err != nil {
			break
		}
	}
	switch fields["state"] {
	case "running":
		return Status{State: Running}, nil
	case "lost":
		reason := map[string]string{"missing": LostMissing, "rebooted": LostRebooted, "vanished": LostVanished}[fields["reason"]]
		if reason == "" {
			return Status{}, fmt.Errorf("unexpected lost reason %q", fields["reason"])
		}
		return Status{State: Lost, Reason: reason}, nil
	case "exited":
	default:
		return Status{}, fmt.Errorf("unexpected answer: state %q", fields["state"])
	}
	st := Status{State: Exited}
	var err error
	if st.ExitCode, err = strconv.Atoi(fields["code"]); err != nil {
		return Status{}, fmt.Errorf("unreadable exit status %q", fields["code"])
	}
	for _, s := range []struct {
		name string
		tail *Tail
	}{{"stdout", &st.Stdout}, {"stderr", &st.Stderr}} {
		size, err := strconv.ParseInt(fields[s.name], 10, 64)
		if err != nil || size < 0 {
			return Status{}, fmt.Errorf("unreadable %s size %q", s.name, fields[s.name])
		}
		buf := make([]byte, min(size, int64(fetch)))
		if _, err := io.ReadFull(br, buf); err != nil {
			return Status{}, fmt.Errorf("short %s tail: %w", s.name, err)
		}
		*s.tail = redactTail(buf, size, TailLimit, secrets)
	}
	return st, nil
}

// StopDetached ends a detached command: SIGTERM to its process group (the
// wrapper leads its own session), repeated once if no status appears within
// 2 s (for wrappers started before the stop file existed, a signal that
// lands while the wrapper is still starting the script stops nothing), then
// SIGKILL after 5 s in all, in which case the command
// will poll as Lost. It returns when the command has ended; it is not an
// error if it already had.
//
// It also stops a start still in flight. A start whose caller gave up (its
// deadline passed while the session was on the wire) goes on in the node's
// shell, which may launch the command after the caller has already failed
// the action. So the stop first leaves a stop file in the directory (making
// the directory if no start has yet: a later start then finds it holding no
// command and starts nothing), and only then looks for the pid. The wrapper
// writes its pid before it looks for the stop file, so one of the two sees
// the other: either the stop finds the pid and signals, or the wrapper finds
// the stop file and runs nothing (status 143, as when a signal came before
// the script started).
func (c *Client) StopDetached(ctx context.Context, dir string) error {
	if err := checkRemotePath(dir); err != nil {
		return err
	}
	script := `umask 077
d=` + quote(dir) + `
mkdir -p -- "$d" 2>/dev/null
: > "$d/` + detachedStop + `" 2>/dev/null
p=$(cat "$d/` + detachedPID + `" 2>/dev/null) || exit 0
alive() { if [ -d /proc/self ]; then [ -d "/proc/$p" ]; else kill -0 "$p" 2>/dev/null; fi; }
i=0
while [ ! -f "$d/` + detachedStatus + `" ] && alive; do
	case $i in
	0|20) kill -s TERM -- "-$p" 2>/dev/null || kill -s TERM "$p" 2>/dev/null ;;
	50) kill -s KILL -- "-$p" 2>/dev/null || kill -s KILL "$p" 2>/dev/null ;;
	60) exit 0 ;;
	esac
	i=$((i + 1))
	sleep 0.1 2>/dev/null || sleep 1
done
`
	_, err := c.control(ctx, script, "", nil, io.Discard, io.Discard)
	return err
}

// RemoveDetached deletes a detached command's directory once its result is
// recorded.
func (c *Client) RemoveDetached(ctx context.Context, dir string) error {
	if err := checkRemotePath(dir); err != nil {
		return err
	}
	_, err := c.control(ctx, "rm -rf -- "+quote(dir), "", nil, io.Discard, io.Discard)
	return err
}
