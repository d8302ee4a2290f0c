package shell

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"
	"time"

	"github.com/heddle-io/heddle/internal/automator"
	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/macros"
	"github.com/heddle-io/heddle/internal/sshexec"
)

// Type is the automator type name service actions use.
const Type = "shell"

// Fields of a shell service action. Any other field is passed to the
// script (context file and HEDDLE_FIELD_<NAME>).
const (
	FieldScript         = "script"                   // inline script text
	FieldScriptResource = domain.FieldScriptResource // or: a named script resource
	FieldScriptVersion  = domain.FieldScriptVersion  // its version (default: latest)
	FieldArgs           = "args"                     // arguments, in shell syntax
	FieldDetach         = "detach"                   // "true"/"false": override the threshold
)

// Defaults for Config.
const (
	DefaultDetachAfter  = 2 * time.Minute
	DefaultPollInterval = 5 * time.Second
	DefaultQuickWait    = 2 * time.Second
)

// Config tunes a Shell.
type Config struct {
	// Scripts holds the tenants' script resources; nil refuses actions that
	// name one.
	Scripts Scripts
	// DetachAfter is the threshold between synchronous and detached runs:
	// an action whose timeout is longer runs detached (started on the node
	// with its output and status written to files there, then polled), so
	// no SSH session stays open for a long install; a shorter one runs on
	// an open session, which costs one round trip less. The action's
	// "detach" field overrides it. Negative: never detach unless asked.
	DetachAfter time.Duration
	// PollInterval is how often a detached run is polled.
	PollInterval time.Duration
	// QuickWait is how long Start watches a detached run in place before
	// handing it to the engine's polls: most actions end within it, and a
	// trip through the queue plus a poll would cost more than the wait.
	// A run the engine expects to take longer (Request.Expect) is handed
	// off at once. Zero means DefaultQuickWait; negative hands off at once.
	QuickWait time.Duration
	// Pool keeps SSH connections across tasks; nil: the Shell's own.
	Pool *sshexec.Pool
}

// Shell is the shell automator: each action runs a script on the node over
// SSH (internal/sshexec), with the task's context uploaded as a JSON file
// next to it and described by HEDDLE_* environment variables; sudo when the
// login user is not root; host keys pinned; output kept as bounded tails
// with secrets redacted.
type Shell struct {
	cfg     Config
	pool    *sshexec.Pool
	ownPool bool
}

var _ automator.Detacher = (*Shell)(nil)

// New returns a shell automator.
func New(cfg Config) *Shell {
	if cfg.DetachAfter == 0 {
		cfg.DetachAfter = DefaultDetachAfter
	}
	if cfg.QuickWait == 0 {
		cfg.QuickWait = DefaultQuickWait
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = DefaultPollInterval
	}
	s := &Shell{cfg: cfg, pool: cfg.Pool}
	if s.pool == nil {
		s.pool, s.ownPool = sshexec.NewPool(), true
	}
	return s
}

// Close closes the connections of the Shell's own pool.
func (s *Shell) Close() {
	if s.ownPool {
		s.pool.Close()
	}
}

// ValidateAction checks a shell action's fields: exactly one script source,
// a valid version and detach flag, and macros that parse in every value.
func (s *Shell) ValidateAction(fields map[string]string) domain.Problems {
	var ps domain.Problems
	add := func(field, code, msg string) {
		ps = append(ps, domain.Problem{Field: "fields." + field, Code: code, Message: msg})
	}
	inline, resource := fields[FieldScript], fields[FieldScriptResource]
	switch {
	case inline == "" && resource == "":
		add(FieldScript, domain.CodeRequired, "a shell action needs a script (inline) or a script_resource (by name)")
	case inline != "" && resource != "":
		add(FieldScriptResource, domain.CodeConflict, "give either script or script_resource, not both")
	}
	if resource != "" && !domain.ValidName(resource) {
		add(FieldScriptResource, domain.CodeInvalid, fmt.Sprintf("%q is not a valid script name", resource))
	}
	if v := fields[FieldScriptVersion]; v != "" {
		if resource == "" {
			add(FieldScriptVersion, domain.CodeInvalid, "script_version needs script_resource")
		} else if _, err := parseVersion(v); err != nil {
			add(FieldScriptVersion, domain.CodeInvalid, err.Error())
		}
	}
	if d := fields[FieldDetach]; d != "" && d != "true" && d != "false" {
		add(FieldDetach, domain.CodeInvalid, fmt.Sprintf("%q is not true or false", d))
	}
	if strings.IndexByte(inline, 0) >= 0 {
		add(FieldScript, domain.CodeInvalid, "the script holds a NUL byte")
	}
	for k, v := range fields {
		if _, err := macros.Parse(v); err != nil {
			add(k, domain.CodeInvalid, err.Error())
		}
	}
	return ps
}

// Bootstrap creates the automator's working directory on the node, which
// also proves that sudo works without a password when the login user is
// not root. It runs through the connection's dispatcher (sshexec.Client.
// RunControl), which it starts, so that the node's first action finds one
// ready. Who and where are read without a process where the node allows.
func (s *Shell) Bootstrap(ctx context.Context, req automator.Request) automator.Output {
	if err := checkWorkDir(req.WorkDir); err != nil {
		return failed(err)
	}
	script := "umask 077\n[ -d " + shellQuote(req.WorkDir+"/tasks") + " ] || mkdir -p -- " + shellQuote(req.WorkDir+"/tasks") + " || exit 1\n" +
		"h=; read -r h < /proc/sys/kernel/hostname 2>/dev/null || h=$(uname -n)\n" +
		"echo \"heddle: bootstrapped as ${USER:-$(id -un)} on $h\"\n"
	var out automator.Output
	err := s.pool.Do(ctx, req.Target, func(c *sshexec.Client) error {
		res, err := c.RunControl(ctx, script, req.Secrets)
		out = fromResult(res, c)
		return err
	})
	out.Err = describe(err, "bootstrap", req.Context)
	if out.Err != nil && out.ExitCode == 0 {
		out.ExitCode = -1
	}
	return out
}

// Run carries out one action: synchronously on an open session, or
// detached and polled (see Config.DetachAfter).
func (s *Shell) Run(ctx context.Context, req automator.Request) automator.Output {
	r, out, ok := s.prepare(ctx, req)
	if !ok {
		return out
	}
	if s.detach(req) {
		return r.detached(ctx)
	}
	return r.sync(ctx)
}

// Start begins one action: a synchronous one runs to its end, as in Run;
// a detached one is started on the node (context and script uploaded, the
// command started under setsid; a Start repeated for the same attempt finds
// it started) and returned Pending at once, to be finished by Check.
func (s *Shell) Start(ctx context.Context, req automator.Request) automator.Output {
	r, out, ok := s.prepare(ctx, req)
	if !ok {
		return out
	}
	if !s.detach(req) {
		return r.sync(ctx)
	}
	// Watched in place for QuickWait by the start's own session (the node's
	// shell waits on the command; nothing polls): most actions end within
	// it, and a trip through the queue plus a poll would cost more than
	// the wait. An action known to take longer is handed off at once: the
	// wait would be spent for nothing.
	out, st, err := r.start(ctx, s.quickWait(req))
	if err != nil {
		r.stopCutStart(err)
		out.Err = describe(err, string(req.Context.Action), req.Context)
		return out
	}
	if st.State != sshexec.Running {
		return r.reported(st, out.HostKey)
	}
	out.Pending, out.PollAfter = true, s.cfg.PollInterval
	return out
}

// Check polls a detached action once (see automator.Detacher). A node that
// cannot be reached is tried again at the next poll: a detached command
// outlives a network blip, and the action's timeout bounds the attempt.
func (s *Shell) Check(ctx context.Context, req automator.Request) automator.Output {
	if err := checkWorkDir(req.WorkDir); err != nil {
		return failed(err)
	}
	r := run{shell: s, req: req, base: attemptBase(req.WorkDir, req.Context)}
	runDir := r.base + "/run"
	if ctx.Err() != nil {
		return r.timedOut(ctx, runDir)
	}
	var st sshexec.Status
	out := automator.Output{ExitCode: -1}
	err := s.pool.Do(ctx, req.Target, func(c *sshexec.Client) error {
		out.HostKey, _ = c.NewlyPinned()
		var err error
		st, err = c.Poll(ctx, runDir, req.Secrets)
		return err
	})
	switch {
	case err == nil && st.State != sshexec.Running:
		return r.ended(ctx, st, out.HostKey)
	case ctx.Err() != nil:
		return r.timedOut(ctx, runDir)
	}
	out.Pending, out.PollAfter = true, s.cfg.PollInterval
	return out
}

// prepare checks and resolves what an action runs.
func (s *Shell) prepare(ctx context.Context, req automator.Request) (run, automator.Output, bool) {
	if err := checkWorkDir(req.WorkDir); err != nil {
		return run{}, failed(err), false
	}
	body, err := s.resolveScript(ctx, req.Context.Tenant, req.Context.Fields)
	if err != nil {
		return run{}, failed(describe(err, string(req.Context.Action), req.Context)), false
	}
	doc, err := json.Marshal(req.Context)
	if err != nil {
		return run{}, failed(err), false
	}
	return run{shell: s, req: req, body: body, contextDoc: doc, base: attemptBase(req.WorkDir, req.Context)}, automator.Output{}, true
}

// quickWait is how long Start watches a detached run in place: QuickWait,
// or nothing when the engine expects the run to outlast it.
func (s *Shell) quickWait(req automator.Request) time.Duration {
	if s.cfg.QuickWait < 0 || req.Expect > s.cfg.QuickWait {
		return 0
	}
	return s.cfg.QuickWait
}

func (s *Shell) detach(req automator.Request) bool {
	switch req.Context.Fields[FieldDetach] {
	case "true":
		return true
	case "false":
		return false
	}
	return s.cfg.DetachAfter > 0 && req.Timeout > s.cfg.DetachAfter
}

func (s *Shell) resolveScript(ctx context.Context, tenant string, fields map[string]string) (string, error) {
	if inline := fields[FieldScript]; inline != "" {
		return inline, nil
	}
	name := fields[FieldScriptResource]
	if name == "" {
		return "", errors.New("the action has neither a script nor a script_resource")
	}
	if s.cfg.Scripts == nil {
		return "", fmt.Errorf("script resource %s: this automator has no script store", name)
	}
	version, err := parseVersion(fields[FieldScriptVersion])
	if err != nil {
		return "", fmt.Errorf("script_version: %w", err)
	}
	sc, err := s.cfg.Scripts.Script(ctx, tenant, name, version)
	if err != nil {
		return "", err
	}
	return sc.Content, nil
}

// run is one action being carried out.
type run struct {
	shell      *Shell
	req        automator.Request
	body       string
	contextDoc []byte
	// base names the attempt's files on the node:
	// <workdir>/tasks/<job>~<task>-a<attempt>. A synchronous run uses
	// base.json (and base.script when the script needs a file of its own);
	// a detached run uses the directory base/.
	base string
}

// env is the script's environment: the task's, plus where its files are.
func (r run) env(contextPath string) map[string]string {
	env := r.req.Context.Env()
	env["HEDDLE_WORK_DIR"] = r.req.WorkDir
	env["HEDDLE_CONTEXT"] = contextPath
	env["HEDDLE_ARGS"] = r.req.Context.Fields[FieldArgs]
	return env
}

// inlineLimit is the largest script carried in the command line; a bigger
// one is uploaded first (Linux caps one exec argument at 128 KiB, and the
// command line also carries the environment and the sudo wrapper).
const inlineLimit = 64 << 10

// sync runs the action on one session: the context is saved from stdin,
// the script runs, the context file is removed. Every process started on
// the node counts when an action runs on a thousand nodes at once, so a
// plain sh script runs inside the session's own shell (a subshell, no
// exec) instead of from a file; only a script with a #! line, or one too
// big for the command line, gets a file.
func (r run) sync(ctx context.Context) automator.Output {
	contextPath, scriptPath := r.base+".json", r.base+".script"
	upload := len(r.body) > inlineLimit
	var out automator.Output
	err := r.shell.pool.Do(ctx, r.req.Target, func(c *sshexec.Client) error {
		if upload {
			if err := c.Upload(ctx, sshexec.File{Path: scriptPath, Data: []byte(r.body), Mode: 0o700}); err != nil {
				out = fromResult(sshexec.Result{ExitCode: -1}, c)
				return err
			}
		}
		script, err := syncScript(r.body, scriptPath, upload)
		if err != nil {
			return err
		}
		res, err := c.Run(ctx, sshexec.Command{
			Script:      script,
			Env:         r.env(contextPath),
			Stdin:       bytes.NewReader(r.contextDoc),
			SaveStdinTo: contextPath,
			Secrets:     r.req.Secrets,
		})
		out = fromResult(res, c)
		return err
	})
	out.Err = describe(err, string(r.req.Context.Action), r.req.Context)
	if out.Err != nil && out.ExitCode == 0 {
		out.ExitCode = -1
	}
	return out
}

// detached uploads the context and the script, starts the script detached
// and polls it until it exits, is lost, or the context ends (then it is
// stopped), all within this call: Run's way. Start and Check do the same
// in steps, so that the caller need not wait. A Run repeated for the same
// attempt (a worker that restarted) finds the command already started and
// only polls.
func (r run) detached(ctx context.Context) automator.Output {
	runDir := r.base + "/run"
	out, st, err := r.start(ctx, max(r.shell.cfg.QuickWait, 0))
	if err != nil {
		r.stopCutStart(err)
		out.Err = describe(err, string(r.req.Context.Action), r.req.Context)
		return out
	}
	if st.State != sshexec.Running {
		return r.reported(st, out.HostKey)
	}
	for {
		timer := time.NewTimer(r.shell.cfg.PollInterval)
		select {
		case <-ctx.Done():
			timer.Stop()
			o := r.timedOut(ctx, runDir)
			o.HostKey = out.HostKey
			return o
		case <-timer.C:
		}
		// A poll that could not reach the node is tried again at the next
		// interval: a detached command outlives a network blip.
		st, err := r.poll(ctx, runDir)
		if err == nil && st.State != sshexec.Running {
			return r.ended(ctx, st, out.HostKey)
		}
	}
}

// start writes the context and the script and starts the script detached
// (or finds it started), all in one session, and follows it there for up
// to wait: a command that ended within it comes back with its status and
// its files already removed.
func (r run) start(ctx context.Context, wait time.Duration) (automator.Output, sshexec.Status, error) {
	dir := r.base
	out := automator.Output{ExitCode: -1}
	var st sshexec.Status
	if dl, ok := ctx.Deadline(); ok && wait > 0 {
		// The wait must end before the action's time does: a session cut
		// by the deadline would leave the command running unstopped.
		if room := (time.Until(dl) - time.Second).Truncate(time.Second); room < wait {
			wait = max(room, 0)
		}
	}
	// A script with a #! line is run as a program and needs its x bit; any
	// other is read by /bin/sh, and a chmod is one process less per action.
	mode := fs.FileMode(0o600)
	if strings.HasPrefix(r.body, "#!") {
		mode = 0o700
	}
	err := r.shell.pool.Do(ctx, r.req.Target, func(c *sshexec.Client) error {
		out.HostKey, _ = c.NewlyPinned()
		s, err := c.StartAndWait(ctx, sshexec.Detached{
			Dir:    dir + "/run",
			Script: detachedScript(r.body, dir+"/script"),
			Env:    r.env(dir + "/context.json"),
			Files: []sshexec.File{
				{Path: dir + "/context.json", Data: r.contextDoc},
				{Path: dir + "/script", Data: []byte(r.body), Mode: mode},
			},
			Wait:        wait,
			RemoveAfter: dir,
			Secrets:     r.req.Secrets,
		})
		st = s.Status
		return err
	})
	return out, st, err
}

// reported is the output of a command that ended within the start's wait
// (its files are already removed).
func (r run) reported(st sshexec.Status, hostKey string) automator.Output {
	out := automator.Output{ExitCode: st.ExitCode, Stdout: st.Stdout, Stderr: st.Stderr, HostKey: hostKey}
	if st.State == sshexec.Lost {
		out.ExitCode = -1
	}
	out.Err = describe(st.Err(), string(r.req.Context.Action), r.req.Context)
	return out
}

// ended turns the status of a detached command that is no longer running
// into the action's output: its exit, or a LostError (node rebooted, status
// missing) that fails it. An exited command's files are removed.
func (r run) ended(ctx context.Context, st sshexec.Status, hostKey string) automator.Output {
	out := automator.Output{ExitCode: st.ExitCode, Stdout: st.Stdout, Stderr: st.Stderr, HostKey: hostKey}
	if st.State == sshexec.Lost {
		out.ExitCode = -1
	}
	out.Err = describe(st.Err(), string(r.req.Context.Action), r.req.Context)
	if st.State == sshexec.Exited {
		r.cleanup(ctx)
	}
	return out
}

// timedOut stops a detached command whose action's time ran out.
func (r run) timedOut(ctx context.Context, runDir string) automator.Output {
	r.stop(runDir)
	return automator.Output{ExitCode: -1, Err: describe(&sshexec.TimeoutError{Node: r.req.Target.Node, Address: r.req.Target.Address, Op: "run", Err: ctx.Err()},
		string(r.req.Context.Action), r.req.Context)}
}

func (r run) poll(ctx context.Context, runDir string) (sshexec.Status, error) {
	var st sshexec.Status
	err := r.shell.pool.Do(ctx, r.req.Target, func(c *sshexec.Client) error {
		var err error
		st, err = c.Poll(ctx, runDir, r.req.Secrets)
		return err
	})
	return st, err
}

// stopCutStart stops the command of a start that failed after its session
// reached the node: the action's deadline passed, or the connection broke,
// while the start was on the wire. The node's shell goes on with such a
// start and may launch the command after the action has failed (and its
// retry has begun), so it is stopped as a timed-out run is; StopDetached
// also stops a start still in flight. A start that never reached the node
// (no connection, a refused login) or that the node refused (an exit
// status) started nothing.
func (r run) stopCutStart(err error) {
	var (
		timeout   *sshexec.TimeoutError
		transport *sshexec.TransportError
	)
	switch {
	case errors.As(err, &timeout) && timeout.Op != "connect",
		errors.As(err, &transport) && transport.Op != "handshake" && transport.Op != "authenticate":
		r.stop(r.base + "/run")
	}
}

// stop ends a detached command whose action timed out, on a context of its
// own: the action's has ended.
func (r run) stop(runDir string) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	_ = r.shell.pool.Do(ctx, r.req.Target, func(c *sshexec.Client) error { return c.StopDetached(ctx, runDir) })
}

// cleanup removes a detached run's directory once its result is read: the
// context file may hold configuration that should not linger.
func (r run) cleanup(ctx context.Context) {
	_ = r.shell.pool.Do(ctx, r.req.Target, func(c *sshexec.Client) error { return c.RemoveDetached(ctx, r.base) })
}

// prologue starts every action: the working directory, and the
// positional parameters from HEDDLE_ARGS.
const prologue = `cd "$HEDDLE_WORK_DIR" 2>/dev/null || cd /
eval "set -- $HEDDLE_ARGS" || { echo 'heddle: args do not parse as shell words' >&2; exit 125; }
`

// syncScript is the shell text of a synchronous action. A plain script
// runs in a subshell of the session's shell, from a single-quoted literal
// (eval reports a syntax error in it as status 2 rather than breaking the
// wrapper). A script with a #! line is written to scriptPath first (a
// here-document with a delimiter the script does not contain) and run from
// there; uploaded says it is there already. The context file (and the
// script file) are removed afterwards, and the script's status returned.
func syncScript(body, scriptPath string, uploaded bool) (string, error) {
	var b strings.Builder
	b.WriteString(prologue)
	shebang := strings.HasPrefix(body, "#!")
	if !shebang && !uploaded {
		b.WriteString("heddle_script=" + shellQuote(body) + "\n(eval \"$heddle_script\")\ns=$?\n")
		b.WriteString("rm -f -- \"$HEDDLE_CONTEXT\"\nexit $s\n")
		return b.String(), nil
	}
	b.WriteString("f=" + shellQuote(scriptPath) + "\n")
	if !uploaded {
		delim, err := hereDocDelimiter(body)
		if err != nil {
			return "", err
		}
		b.WriteString("cat > \"$f\" <<'" + delim + "' || exit 125\n")
		b.WriteString(body)
		if !strings.HasSuffix(body, "\n") {
			b.WriteByte('\n')
		}
		b.WriteString(delim + "\n")
		b.WriteString("chmod 700 \"$f\" || exit 125\n")
	}
	if shebang {
		b.WriteString("\"$f\" \"$@\"\n")
	} else {
		b.WriteString("/bin/sh \"$f\" \"$@\"\n")
	}
	b.WriteString("s=$?\nrm -f -- \"$HEDDLE_CONTEXT\" \"$f\"\nexit $s\n")
	return b.String(), nil
}

// detachedScript runs the uploaded script file of a detached action.
func detachedScript(body, scriptPath string) string {
	run := "exec /bin/sh " + shellQuote(scriptPath) + " \"$@\"\n"
	if strings.HasPrefix(body, "#!") {
		run = "exec " + shellQuote(scriptPath) + " \"$@\"\n"
	}
	return prologue + run
}

// hereDocDelimiter picks a delimiter that is no line of body.
func hereDocDelimiter(body string) (string, error) {
	for range 8 {
		var b [8]byte
		if _, err := rand.Read(b[:]); err != nil {
			return "", err
		}
		d := "HEDDLE_SCRIPT_" + hex.EncodeToString(b[:])
		if !strings.Contains(body, d) {
			return d, nil
		}
	}
	return "", errors.New("shell: no here-document delimiter fits the script")
}

// attemptBase names one task attempt's files on the node:
// <workdir>/tasks/<job>~<task>-a<attempt>, each id made path-safe (and
// suffixed by a hash when that changed it, so two ids never share a name).
// One flat directory, which bootstrap creates: no mkdir per task.
func attemptBase(workDir string, tc automator.TaskContext) string {
	return path.Join(workDir, "tasks", fmt.Sprintf("%s~%s-a%d", pathSafe(tc.JobID), pathSafe(tc.TaskID), tc.Attempt))
}

func pathSafe(id string) string {
	var b strings.Builder
	changed := id == "" || id[0] == '.'
	for i := 0; i < len(id) && i < 80; i++ {
		c := id[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.' {
			b.WriteByte(c)
		} else {
			b.WriteByte('_')
			changed = true
		}
	}
	if changed || len(id) > 80 {
		sum := sha256.Sum256([]byte(id))
		b.WriteString("~" + hex.EncodeToString(sum[:6]))
	}
	return b.String()
}

// checkWorkDir accepts an absolute, clean directory other than "/".
func checkWorkDir(dir string) error {
	if !strings.HasPrefix(dir, "/") || path.Clean(dir) != dir || dir == "/" || strings.ContainsAny(dir, "\x00\n") {
		return fmt.Errorf("shell: work directory %q must be an absolute, clean path", dir)
	}
	return nil
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func fromResult(res sshexec.Result, c *sshexec.Client) automator.Output {
	out := automator.Output{ExitCode: res.ExitCode, Stdout: res.Stdout, Stderr: res.Stderr}
	out.HostKey, _ = c.NewlyPinned()
	return out
}

func failed(err error) automator.Output { return automator.Output{Err: err, ExitCode: -1} }

// describe puts the action and service in front of an error, so a task's
// record reads "install of zookeeper on node c1-1000: ...".
func describe(err error, what string, tc automator.TaskContext) error {
	if err == nil {
		return nil
	}
	if tc.Service != "" {
		what += " of " + tc.Service
	}
	return fmt.Errorf("%s on node %s: %w", what, tc.Node.ID, err)
}
