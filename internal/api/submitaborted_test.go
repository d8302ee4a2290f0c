package api

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/engine"
)

// TestAnUndoneSubmissionIsAConflict: a submission the janitor withdrew
// while it was still being written answers 409 with what happened and what
// to do, not a 500.
func TestAnUndoneSubmissionIsAConflict(t *testing.T) {
	t.Parallel()
	d, ok := describeCluster(fmt.Errorf("submitting job j1: %w", engine.ErrSubmitAborted))
	require.True(t, ok)
	require.Equal(t, http.StatusConflict, d.Status)
	require.Equal(t, CodeJobState, d.Code)
	require.Contains(t, d.Message, "send the request again")
}
