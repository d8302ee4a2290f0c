package main

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/lambdaemu"
)

// TestAliasShifts: the alias sends the invocations by its weight, as
// CodeDeploy's shift sets it; without a previous release it is the
// current one's whatever the shift.
func TestAliasShifts(t *testing.T) {
	t.Parallel()
	current, previous := &lambdaemu.Pool{}, &lambdaemu.Pool{}
	a := &alias{current: current, previous: previous, weight: 1}
	picks := func() (cur, prev int) {
		for range 400 {
			if a.pick() == previous {
				prev++
			} else {
				cur++
			}
		}
		return cur, prev
	}
	cur, prev := picks()
	require.Equal(t, 400, prev, "before the deploy: the previous release")
	require.Zero(t, cur)
	a.shift(0.5)
	cur, prev = picks()
	require.Positive(t, cur)
	require.Positive(t, prev)
	a.shift(-3)
	require.Zero(t, a.previousWeight(), "clamped")
	cur, _ = picks()
	require.Equal(t, 400, cur, "the deploy is over")
	a.shift(7)
	require.Equal(t, 1.0, a.previousWeight(), "clamped")

	alone := &alias{current: current}
	alone.shift(1)
	require.Zero(t, alone.previousWeight())
	require.Same(t, current, alone.pick())
}
