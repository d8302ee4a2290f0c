package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestParseClockOffsets(t *testing.T) {
	t.Parallel()
	got, err := parseClockOffsets("api=1s, worker=-1.5s,janitor=250ms,fargate=0s")
	require.NoError(t, err)
	require.Equal(t, map[string]time.Duration{"api": time.Second, "worker": -1500 * time.Millisecond, "janitor": 250 * time.Millisecond, "fargate": 0}, got)
	for _, bad := range []string{"api", "lambda=1s", "worker=soon"} {
		_, err := parseClockOffsets(bad)
		require.Error(t, err, bad)
	}
	env := []string{"A=1"}
	require.Equal(t, []string{"A=1"}, withClockOffset(env, 0))
	require.Equal(t, []string{"A=1", "HEDDLE_CLOCK_OFFSET=-1.5s"}, withClockOffset(env, -1500*time.Millisecond))
	require.Equal(t, []string{"A=1"}, env, "the shared environment is left alone")
}
