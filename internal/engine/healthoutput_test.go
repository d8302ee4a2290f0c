package engine

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/domain"
)

// TestHealthOutputShowsTheCheck: a health problem shows what the check
// printed, not the SSH wrapper's exit status; other errors lead, and the
// tail is kept when the output is long.
func TestHealthOutputShowsTheCheck(t *testing.T) {
	t.Parallel()
	exit := "sshexec: node n1 at 127.0.0.1:22: command exited with status 75"
	for _, tc := range []struct {
		name    string
		attempt domain.TaskAttempt
		want    string
	}{
		{"stderr over the exit status", domain.TaskAttempt{Error: exit, Stderr: "slow: answering in 900 ms\n", Stdout: "probing\n"}, "slow: answering in 900 ms"},
		{"stdout when stderr is empty", domain.TaskAttempt{Error: exit, Stdout: "503 from /health\n"}, "503 from /health"},
		{"the exit status when the check printed nothing", domain.TaskAttempt{Error: exit}, exit},
		{"a timeout leads, with what was printed", domain.TaskAttempt{Error: "timed out after 5s", Stderr: "waiting for port"}, "timed out after 5s; the check printed: waiting for port"},
		{"a healthy check's output", domain.TaskAttempt{Stdout: "ok\n"}, "ok"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, healthOutput(tc.attempt))
		})
	}
	long := strings.Repeat("x", domain.MaxStateMessage) + "the end"
	got := healthOutput(domain.TaskAttempt{Error: exit, Stderr: long})
	require.Len(t, got, domain.MaxStateMessage)
	require.True(t, strings.HasSuffix(got, "the end"), "the tail is kept")
}
