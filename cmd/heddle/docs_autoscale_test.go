package main

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestDocsAutoscaleSteps runs docs/autoscale.md's commands as written,
// against a server whose janitor evaluates the policy on its own.
func TestDocsAutoscaleSteps(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	admin := s.tenant("acme")
	steps, _ := docSteps(t, "../../docs/autoscale.md", "# Autoscaling")
	require.Len(t, steps, 9)
	autoscales := 0
	for _, line := range steps {
		t.Logf("$ %s", line)
		argv := docArgv(t, line)
		switch {
		case strings.Contains(line, "clusters autoscale shop --set"):
			out := s.must(admin, argv...)
			require.Contains(t, out, "policy     cluster: min 1, max 3; keeps the cluster in [1, 3]")
		case strings.Contains(line, "clusters autoscale"):
			autoscales++
			if autoscales == 1 {
				out := s.must(admin, argv...)
				require.Contains(t, out, "policy     template: min 1, max 4; keeps the cluster in [1, 4]; size now 1")
				require.Contains(t, out, "target     queue_depth = 10")
				require.Contains(t, out, "decisions  none yet")
				continue
			}
			// The janitor's next pass decides; a liveness bound, not a timing.
			deadline := time.Now().Add(2 * time.Minute)
			out := s.must(admin, argv...)
			for !strings.Contains(out, "1 -> 3  job ") {
				require.True(t, time.Now().Before(deadline), "no decision:\n%s", out)
				time.Sleep(200 * time.Millisecond)
				out = s.must(admin, argv...)
			}
			require.Contains(t, out, "queue_depth is 40, above the target 10; at most 2 nodes a step")
		case strings.Contains(line, "--dry-run"):
			out := s.must(admin, argv...)
			require.Contains(t, out, "autoscale: its policy may size it between 1 and 4 nodes (the tenant's free quota allows 4 now)")
		case strings.Contains(line, "clusters metrics"):
			out := s.must(admin, argv...)
			require.Contains(t, out, "metric     queue_depth = 40")
		case strings.Contains(line, "clusters events"):
			out := s.must(admin, argv...)
			require.Contains(t, out, "cluster.autoscale")
		case strings.Contains(line, "clusters delete"):
			// The policy's expand must end first: a delete is refused while
			// a job holds the cluster.
			deadline := time.Now().Add(2 * time.Minute)
			for out := s.must(admin, "clusters", "show", "shop", "-o", "json"); strings.Contains(out, `"activeJobId"`); out = s.must(admin, "clusters", "show", "shop", "-o", "json") {
				require.True(t, time.Now().Before(deadline), "the expand did not end:\n%s", out)
				time.Sleep(200 * time.Millisecond)
			}
			require.Equal(t, 3, len(s.show(admin, "shop").Nodes))
			s.must(admin, argv...)
		default:
			s.must(admin, argv...)
		}
	}
}
