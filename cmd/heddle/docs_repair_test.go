package main

import (
	"context"
	"log/slog"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/access"
	"github.com/heddle-io/heddle/internal/demotest"
	"github.com/heddle-io/heddle/internal/localserver"
)

// TestDocsRepairSteps runs docs/operations.md's node replacement as
// written, against a local server in this process, so that the test can
// lose a node's machine (stop its SSH server and processes) where the
// text says one died.
func TestDocsRepairSteps(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	super := access.NewKeySecret()
	srv, err := localserver.Start(context.Background(), localserver.Config{DataDir: dir, Listen: "127.0.0.1:0",
		BootstrapKey: super, Version: "test", JanitorPeriod: 200 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		demotest.KillProcessesUnder(dir)
	})
	s := &server{t: t, dir: dir, addr: strings.TrimPrefix(srv.URL(), "http://"), super: super}
	admin := s.tenant("acme")
	steps, _ := docSteps(t, "../../docs/operations.md", "Replacing a node by hand")
	require.Len(t, steps, 10)
	clusterID, lost, drifts := "", "", 0
	for _, line := range steps {
		line = strings.ReplaceAll(strings.ReplaceAll(line, "CLUSTER_ID", clusterID), "NODE", lost)
		t.Logf("$ %s", line)
		argv := docArgv(t, line)
		switch {
		case strings.Contains(line, "clusters drift"):
			drifts++
			if drifts == 1 {
				// The machine of the cluster's second node dies.
				lost = clusterID + "-1001"
				require.NoError(t, srv.LoseNode("acme", clusterID, lost))
				r := s.cli(admin, argv...)
				require.Equal(t, exitDrifted, r.code, "%s\n%s", r.stdout, r.stderr)
				require.Contains(t, r.stdout, "  "+lost+" - unreachable since ")
				continue
			}
			out := s.must(admin, argv...)
			require.Contains(t, out, "drift    none (3 nodes checked)")
			continue
		}
		out := s.must(admin, argv...)
		switch {
		case strings.Contains(line, "clusters create"):
			m := regexp.MustCompile(`(?m)^cluster\s+(\S+)`).FindStringSubmatch(out)
			require.NotNil(t, m, out)
			clusterID = m[1]
		case strings.Contains(line, "--dry-run"):
			require.Regexp(t, `(?m)^  - node +`+regexp.QuoteMeta(lost)+` `, out, "the preview deletes the lost node")
			require.Regexp(t, `(?m)^  \+ node +`+regexp.QuoteMeta(clusterID)+`-1003 +small/debian +cache,web`, out, "and makes its replacement")
			require.Contains(t, out, "rollback if it fails")
		case strings.Contains(line, "jobs list"):
			require.Regexp(t, `(?m)\brepair\b.*SUCCEEDED`, out)
		}
	}
}
