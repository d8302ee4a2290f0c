package sshexec

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
)

// quote makes s one word for a POSIX shell: s in single quotes, each single
// quote inside closed, escaped with a backslash and reopened.
func quote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// validEnvName is what a POSIX shell accepts after export.
func validEnvName(k string) bool {
	if k == "" {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !(c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// exports renders env as export lines, in name order so that the same
// command always renders the same way. sshd's AcceptEnv is usually off, so
// environment requests would be dropped: the script sets its own.
func exports(env map[string]string) (string, error) {
	names := make([]string, 0, len(env))
	for k, v := range env {
		if !validEnvName(k) {
			return "", fmt.Errorf("sshexec: %q is not a valid environment variable name", k)
		}
		if strings.IndexByte(v, 0) >= 0 {
			return "", fmt.Errorf("sshexec: environment variable %s holds a NUL byte, which no shell can carry", k)
		}
		names = append(names, k)
	}
	slices.Sort(names)
	var b strings.Builder
	for _, k := range names {
		b.WriteString("export " + k + "=" + quote(env[k]) + "\n")
	}
	return b.String(), nil
}

// maxScript bounds the script a command carries inline: Linux limits one
// argument of exec to 128 KiB, and `sh -c SCRIPT` is one argument.
const maxScript = 120 << 10

// sudoRelay runs the script given as $1 under sudo so that a signal still
// reaches all of it. sshd delivers a client's signal request to the
// session's process group as the login user; under sudo only sudo itself can
// receive it, and sudo relays it to its direct child alone, so a script's
// children (root-owned) would outlive a timeout. This shell, sudo's child,
// runs the script in a background subshell (stdin passed explicitly: an
// asynchronous list would get /dev/null; eval rather than a new sh saves an
// exec per command) and waits, which a trap may interrupt; the trap then
// signals the whole process group as root.
const sudoRelay = `exec 3<&0
trap 'trap - TERM INT HUP; kill -s TERM 0' TERM INT HUP
(trap - TERM INT HUP; eval "$1") <&3 3<&- &
wait $!`

// wrap turns a shell script into the command string sent to sshd: run by
// /bin/sh whatever the login shell is, and through `sudo -n` (never prompt,
// fail at once if a password would be needed) when the login user is not
// root.
func wrap(script string, sudo bool) (string, error) {
	if strings.IndexByte(script, 0) >= 0 {
		return "", errors.New("sshexec: the script holds a NUL byte")
	}
	if len(script) > maxScript {
		return "", fmt.Errorf("sshexec: the script is %d bytes; inline scripts are limited to %d (upload larger ones and run the file)", len(script), maxScript)
	}
	if sudo {
		return "sudo -n -- /bin/sh -c " + quote(sudoRelay) + " heddle " + quote(script), nil
	}
	return "/bin/sh -c " + quote(script), nil
}

// checkRemotePath accepts absolute, clean paths; anything else is a caller
// bug that could write somewhere unexpected as root.
func checkRemotePath(p string) error {
	if !strings.HasPrefix(p, "/") || path.Clean(p) != p || p == "/" {
		return fmt.Errorf("sshexec: remote path %q must be absolute and clean", p)
	}
	for _, c := range []byte(p) {
		if c < ' ' || c == 0x7f {
			return fmt.Errorf("sshexec: remote path %q holds a control character", p)
		}
	}
	return nil
}

// exitSaveStdin is the status of a run whose stdin could not be saved
// before its script started.
const exitSaveStdin = 125

// tempName is a shell word naming a temporary sibling of p, unique to the
// remote shell's process.
func tempName(p string) string { return quote(p) + `".tmp.$$"` }

// saveStdinScript saves stdin to p (0600, parents created 0700), then
// detaches stdin from the script that follows. The file is written in
// place: only the script that follows reads it, after cat is done, and a run
// cut short leaves a file the next attempt rewrites before using. No rename
// and no mkdir when the directory exists: every exec counts when a
// thousand nodes run one action each.
func saveStdinScript(p string) string {
	d := quote(path.Dir(p))
	return "(umask 077; { [ -d " + d + " ] || mkdir -p -- " + d + "; } && cat > " + quote(p) + ") ||" +
		" { echo " + quote("heddle: could not save stdin to "+p) + " >&2; exit " + strconv.Itoa(exitSaveStdin) + "; }\n" +
		"exec </dev/null\n"
}

// uploadScript writes stdin to p with mode, checking the byte count so a
// dropped connection cannot leave a short file in place.
func uploadScript(p string, size int64, mode uint32) string {
	t := tempName(p)
	return "umask 077\n" +
		"mkdir -p -- " + quote(path.Dir(p)) + " || exit 1\n" +
		"cat > " + t + " || exit 1\n" +
		"n=$(wc -c < " + t + ") || exit 1\n" +
		"if [ $((n)) -ne " + strconv.FormatInt(size, 10) + " ]; then rm -f -- " + t + "; echo \"heddle: upload truncated at $n bytes\" >&2; exit 1; fi\n" +
		"chmod " + strconv.FormatUint(uint64(mode), 8) + " " + t + " && mv -f -- " + t + " " + quote(p) + "\n"
}
