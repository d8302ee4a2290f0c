package faults_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/faults"
)

func TestParseSpec(t *testing.T) {
	t.Parallel()
	cfg, err := faults.ParseSpec("seed=7, throttle=0.02,5xx-after-apply=0.01,redeliver=0.05,max-latency=200ms")
	require.NoError(t, err)
	require.Equal(t, faults.Config{Seed: 7, MaxLatency: 200 * time.Millisecond,
		Rates: faults.Rates{faults.Throttle: 0.02, faults.ServerErrorAfter: 0.01, faults.Redeliver: 0.05}}, cfg)

	for spec, why := range map[string]string{
		"throttle":              "want name=value",
		"seed=-1":               "a seed is a whole number",
		"max-latency=soon":      "a positive duration",
		"throttle=lots":         "a rate is a number",
		"gremlins=0.1":          "unknown kind",
		"throttle=0.7,5xx=0.7":  "add up to",
		"timeout-after-apply=2": "a rate is from 0 to 1",
	} {
		_, err := faults.ParseSpec(spec)
		require.ErrorContains(t, err, why, spec)
	}
}
