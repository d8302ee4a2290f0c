package metrics

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// emfLines decodes what an EMF observer wrote, checking each line is what
// CloudWatch extracts metrics from: every named metric and dimension is a
// member of the line.
func emfLines(t *testing.T, out string) []map[string]any {
	t.Helper()
	var lines []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(l), &m), l)
		aws := m["_aws"].(map[string]any)
		require.NotZero(t, aws["Timestamp"])
		for _, d := range aws["CloudWatchMetrics"].([]any) {
			dir := d.(map[string]any)
			require.Equal(t, Namespace, dir["Namespace"])
			for _, dims := range dir["Dimensions"].([]any) {
				for _, name := range dims.([]any) {
					require.Contains(t, m, name.(string))
				}
			}
			for _, metric := range dir["Metrics"].([]any) {
				require.Contains(t, m, metric.(map[string]any)["Name"].(string))
			}
		}
		lines = append(lines, m)
	}
	return lines
}

func TestEMFLinesAreWhatCloudWatchReads(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	e := NewEMF(&out, "worker")
	e.Attempt("acme", "install", AttemptRetried, 1500*time.Millisecond)
	e.Job("acme", "create", "SUCCEEDED", time.Minute)
	e.Request("POST", "/v1/clusters", 202, 40*time.Millisecond)
	e.Janitor(JanitorPass{"resent": 2}, 3*time.Millisecond)
	e.Store("transact", true)
	e.Store("get", false)
	require.Equal(t, 4, strings.Count(out.String(), "\n"), "store calls wait for Flush")
	e.Flush()
	e.Flush() // nothing new: no line
	lines := emfLines(t, out.String())
	require.Len(t, lines, 5)
	require.Equal(t, "retried", lines[0]["Outcome"])
	require.Equal(t, 1500.0, lines[0]["TaskAttemptTime"])
	require.Equal(t, "worker", lines[0]["Function"])
	require.Equal(t, "2xx", lines[2]["StatusClass"])
	require.Equal(t, 2.0, lines[3]["Janitor_resent"])
	require.Equal(t, 1.0, lines[4]["StoreConflicts_transact"])
	require.Equal(t, 1.0, lines[4]["Store_get"])
}
