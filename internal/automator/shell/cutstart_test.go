package shell

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/heddle-io/heddle/internal/sshexec"
	"github.com/stretchr/testify/require"
)

// TestDetachedStartCutByTheDeadlineLeavesNothingRunning: an action whose
// time runs out while its detached start is still on the wire (a loaded
// machine: the connection and the start's session take most of a short
// timeout) must not leave its script running. The node's shell goes on
// with a start whose session the client gave up on, so the command may
// start after the action has already failed; the stop must catch it
// either way. The deadlines swept here land before, during and after the
// start's session.
func TestDetachedStartCutByTheDeadlineLeavesNothingRunning(t *testing.T) {
	t.Parallel()
	b := inProcess(t, 1)
	sh := newShell(t, Config{PollInterval: 50 * time.Millisecond})
	markers := t.TempDir()
	errs := map[string]string{}
	for i := range 60 {
		marker := filepath.Join(markers, strconv.Itoa(i))
		req := request(b.targets[0], workDir(t), map[string]string{
			FieldScript: "sleep 4; touch " + marker,
			FieldDetach: "true",
		})
		out := sh.Run(runCtx(t, time.Duration(i)*time.Millisecond), req)
		var timeout *sshexec.TimeoutError
		require.ErrorAs(t, out.Err, &timeout, "deadline %d ms", i)
		errs[strconv.Itoa(i)] = out.Err.Error()
	}
	// The script sleeps 4 s before its mark, longer than a loaded machine
	// takes to give up on a cut session (up to 2 s after the deadline, for
	// the session to end on its signal) and stop the command; a command that
	// nothing stopped leaves its mark within 5 s.
	time.Sleep(5 * time.Second)
	left, err := os.ReadDir(markers)
	require.NoError(t, err)
	var names []string
	for _, e := range left {
		names = append(names, e.Name()+" ms: "+errs[e.Name()])
	}
	require.Empty(t, names, "detached scripts that ran on after their action timed out")
}
