package domain

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestNoteSendSaysWhy: every message after a task's first bumps Sends (its
// deduplication id) and says why, the newest MaxSendReasons kept; a
// continuation's first message is no extra send.
func TestNoteSendSaysWhy(t *testing.T) {
	t.Parallel()
	var task Task
	task.NoteSend(SendContinuationPolls)
	require.Equal(t, 1, task.Sends)
	require.Zero(t, task.ExtraSends(), "a continuation's polls are its first message")
	task.NoteSend(SendPollReceives)
	require.Equal(t, 1, task.ExtraSends())
	for range MaxSendReasons {
		task.NoteSend(SendLost)
	}
	require.Equal(t, 2+MaxSendReasons, task.Sends)
	require.Len(t, task.SendReasons, MaxSendReasons)
	require.Equal(t, SendLost, task.SendReasons[0], "the oldest reasons go first")
}
