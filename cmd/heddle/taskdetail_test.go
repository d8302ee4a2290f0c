package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/domain"
)

// TestTaskDetailSaysWhyATaskWasSentAgain: `heddle jobs task` shows the
// messages sent for a task beyond its first and why (issue 35).
func TestTaskDetailSaysWhyATaskWasSentAgain(t *testing.T) {
	t.Parallel()
	task := domain.Task{ID: "c1-1000/base/install", Status: domain.TaskSucceeded, Action: domain.ActionInstall, Attempt: 2, MaxAttempts: 3}
	var once bytes.Buffer
	printTaskDetail(&once, &task)
	require.NotContains(t, once.String(), "sent again")

	task.NoteSend(domain.SendContinuationPolls)
	task.NoteSend(domain.SendAttemptRetry)
	var out bytes.Buffer
	printTaskDetail(&out, &task)
	require.Regexp(t, `sent again +1 \(continuation-polls, attempt-retry\)`, out.String())
}
