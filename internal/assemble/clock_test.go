package assemble

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Not parallel: it sets the process's environment.
func TestClockFromEnv(t *testing.T) {
	t.Setenv(ClockOffsetVar, "")
	clock, err := clockFromEnv()
	require.NoError(t, err)
	require.Nil(t, clock, "unset: the engine keeps the machine's clock")

	t.Setenv(ClockOffsetVar, "-90s")
	clock, err = clockFromEnv()
	require.NoError(t, err)
	before := time.Now()
	got := clock()
	after := time.Now()
	require.False(t, got.Before(before.Add(-90*time.Second)) || got.After(after.Add(-90*time.Second)), "%s is not 90 s before [%s, %s]", got, before, after)

	t.Setenv(ClockOffsetVar, "soon")
	_, err = clockFromEnv()
	require.ErrorContains(t, err, "a duration such as")
}
