package main

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestDocsHealthAndEventsSteps runs docs/health-events-webhooks.md's "Try
// it" commands as written, against a server, as the tenant's admin.
func TestDocsHealthAndEventsSteps(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	admin := s.tenant("acme")
	steps, _ := docSteps(t, "../../docs/health-events-webhooks.md", "## Try it")
	require.Len(t, steps, 8)
	clusterID := ""
	for _, line := range steps {
		line = strings.ReplaceAll(line, "CLUSTER_ID", clusterID)
		t.Logf("$ %s", line)
		args, ok := strings.CutPrefix(line, "bin/heddle ")
		require.True(t, ok, line)
		argv := strings.Fields(args)
		for i, a := range argv {
			if strings.HasPrefix(a, "docs/") {
				argv[i] = "../../" + a
			}
		}
		if strings.Contains(line, "--follow") {
			// Runs until interrupted: interrupt it once it has printed.
			var out, errOut lockedBuffer
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			code := run(ctx, newRootCommand(), append([]string{"--endpoint", "http://" + s.addr, "--key", admin}, argv...), strings.NewReader(""), &out, &errOut)
			cancel()
			require.Zero(t, code, errOut.String())
			require.Contains(t, out.String(), `"type":"cluster.verified"`)
			continue
		}
		out := s.must(admin, argv...)
		switch {
		case strings.Contains(line, "clusters create"):
			m := regexp.MustCompile(`(?m)^cluster\s+(\S+)`).FindStringSubmatch(out)
			require.NotNil(t, m, out)
			clusterID = m[1]
		case strings.Contains(line, "clusters verify"):
			require.Contains(t, out, "health   YELLOW")
			require.Contains(t, out, "tired degraded")
		case strings.Contains(line, "clusters list"):
			require.Regexp(t, `probes .* ACTIVE +YELLOW`, out)
		case strings.Contains(line, "clusters show"):
			require.Contains(t, out, "health   YELLOW")
		case strings.Contains(line, "clusters events"):
			require.Contains(t, out, "cluster.verified")
			require.Contains(t, out, "PENDING -> ACTIVE")
		}
	}
}

// TestVerifyWaitExitsTwoWhenRed: a script can act on a failing cluster by
// the exit status alone.
func TestVerifyWaitExitsTwoWhenRed(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	admin := s.tenant("acme")
	s.must(admin, "apply", "-f", "../../docs/examples/health-catalog.yaml")
	out := s.must(admin, "clusters", "create", "sick", "--template", "health", "--size", "1", "--services", "steady,broken", "--wait")
	m := regexp.MustCompile(`(?m)^cluster\s+(\S+)`).FindStringSubmatch(out)
	require.NotNil(t, m, out)
	id := m[1]
	r := s.cli(admin, "clusters", "verify", id, "--wait")
	require.Equal(t, exitRed, r.code, "%s\n%s", r.stdout, r.stderr)
	require.Contains(t, r.stdout, "health   RED")
	require.Contains(t, r.stdout, "broken failing")
	require.Contains(t, s.must(admin, "clusters", "list"), "RED")
	bad := s.cli(admin, "clusters", "events", id, "--since", "not-an-id")
	require.Equal(t, 1, bad.code)
	require.Contains(t, bad.stderr, "since")
}
