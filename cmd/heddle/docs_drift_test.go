package main

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// shellWords splits a documented command line as sh would for the quoting
// the docs use: single-quoted words keep their spaces and lose the quotes.
func shellWords(line string) []string {
	var out []string
	for len(line) > 0 {
		line = strings.TrimLeft(line, " ")
		if line == "" {
			break
		}
		if line[0] == '\'' {
			end := strings.IndexByte(line[1:], '\'')
			out = append(out, line[1:1+end])
			line = line[end+2:]
			continue
		}
		end := strings.IndexByte(line, ' ')
		if end < 0 {
			end = len(line)
		}
		out = append(out, line[:end])
		line = line[end:]
	}
	return out
}

// TestDocsDriftSteps runs docs/operations.md's drift commands as written,
// against a server, as the tenant's admin.
func TestDocsDriftSteps(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	admin := s.tenant("acme")
	steps, _ := docSteps(t, "../../docs/operations.md", "## Drift")
	require.Len(t, steps, 12)
	clusterID := ""
	drifts := 0
	for _, line := range steps {
		line = strings.ReplaceAll(line, "CLUSTER_ID", clusterID)
		t.Logf("$ %s", line)
		argv := docArgv(t, line)
		if strings.Contains(line, "clusters drift") {
			r := s.cli(admin, argv...)
			drifts++
			if drifts == 1 || drifts == 4 {
				require.Zero(t, r.code, "%s\n%s", r.stdout, r.stderr)
				require.Contains(t, r.stdout, "drift    none (2 nodes checked)")
				continue
			}
			require.Equal(t, exitDrifted, r.code, "step %d: %s\n%s", drifts, r.stdout, r.stderr)
			require.Contains(t, r.stdout, "2 of 2 nodes drifted (2 configStale)")
			require.Regexp(t, `(?m)^  \S+-1000 web configStale since `, r.stdout)
			require.Regexp(t, `(?m)^  \S+-1001 web configStale since `, r.stdout)
			continue
		}
		if strings.Contains(line, "clusters repair") {
			r := s.cli(admin, argv...)
			require.NotZero(t, r.code, "%s\n%s", r.stdout, r.stderr)
			require.Contains(t, r.stderr, "2 nodes drifted, more than the 1")
			continue
		}
		out := s.must(admin, argv...)
		switch {
		case strings.Contains(line, "clusters create"):
			m := regexp.MustCompile(`(?m)^cluster\s+(\S+)`).FindStringSubmatch(out)
			require.NotNil(t, m, out)
			clusterID = m[1]
		case strings.Contains(line, "clusters show"):
			require.Contains(t, out, "drift    2 of 2 nodes drifted")
		}
	}
}
