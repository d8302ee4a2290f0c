package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/apigwemu"
)

// TestFigures measures what issue 16 asks for, when
// HEDDLE_LOCAL_AWS_FIGURES=1 (scripts/local-aws-figures.sh): each
// function's cold start (process start to first answer) and warm latency,
// five runs each, and the invocations and billed milliseconds of a
// 100-node create and of its delete.
func TestFigures(t *testing.T) {
	if os.Getenv("HEDDLE_LOCAL_AWS_FIGURES") != "1" {
		t.Skip("HEDDLE_LOCAL_AWS_FIGURES=1 runs it (scripts/local-aws-figures.sh)")
	}
	d := setup(t)
	need(t, "HEDDLE_SSH_HOSTS", "scripts/sshd-hosts.sh")
	stage := strings.TrimPrefix(d.ready.Table, "heddle-")
	status := httptest.NewRequest(http.MethodGet, "http://127.0.0.1/v1/status", nil)
	apiEvent, _ := json.Marshal(apigwemu.Event(status, nil, "local", accountID, "figures", time.Now()))
	payloads := map[string][]byte{
		"api":     apiEvent,
		"worker":  []byte(`{"Records":[]}`),
		"janitor": (&schedule{arn: "arn:aws:scheduler:us-east-1:000000000000:schedule/default/figures"}).Event(time.Now()),
	}
	for _, fn := range []string{"api", "worker", "janitor"} {
		var cold, warm []time.Duration
		for range 5 {
			d.killAll(fn)
			cold = append(cold, d.invoke(t, "heddle-"+stage+"-"+fn, payloads[fn]))
			warm = append(warm, d.invoke(t, "heddle-"+stage+"-"+fn, payloads[fn]))
		}
		t.Logf("FIGURE %s: cold start to first answer %s, warm %s", fn, spread(cold), spread(warm))
	}

	// A 100-node create and delete: the 50 OpenSSH hosts, each registered
	// twice (every node gets a host of its own in the pool; two share each
	// sshd).
	d.createTenant("1", "100", "10")
	d.registerHosts("acme", 50)
	d.registerHostsAs("acme", 50, "g")
	d.mustHeddle("apply", "-f", "testdata/static-catalog.yaml")
	before, err := d.stats()
	require.NoError(t, err)
	start := time.Now()
	d.mustHeddle("clusters", "create", "big", "--template", "pair", "--size", "100", "--wait")
	mid, err := d.stats()
	require.NoError(t, err)
	t.Logf("FIGURE 100-node create: %s wall; %s", time.Since(start).Round(time.Second), delta(before, mid))
	var list struct {
		Items []clusterView `json:"items"`
	}
	d.api(http.MethodGet, "/v1/clusters", nil, &list)
	require.Len(t, list.Items, 1)
	start = time.Now()
	d.mustHeddle("clusters", "delete", list.Items[0].ID, "--wait")
	after, err := d.stats()
	require.NoError(t, err)
	t.Logf("FIGURE 100-node delete: %s wall; %s", time.Since(start).Round(time.Second), delta(mid, after))
}

// killAll kills fn's environments and waits until the pool has none.
func (d *deployment) killAll(fn string) {
	d.t.Helper()
	require.Eventually(d.t, func() bool {
		s, err := d.stats()
		require.NoError(d.t, err)
		for _, pid := range s.Functions[fn].PIDs {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		return len(s.Functions[fn].PIDs) == 0
	}, 30*time.Second, 50*time.Millisecond)
}

// invoke calls Lambda's Invoke and returns its wall time.
func (d *deployment) invoke(t *testing.T, name string, payload []byte) time.Duration {
	t.Helper()
	start := time.Now()
	resp, err := testHTTP.Post(d.ready.Lambda+"/2015-03-31/functions/"+name+"/invocations", "application/json", bytes.NewReader(payload))
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	took := time.Since(start)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", b)
	require.Empty(t, resp.Header.Get("X-Amz-Function-Error"), "%s: %s", name, b)
	return took
}

// spread is "median (min-max)".
func spread(ds []time.Duration) string {
	s := slices.Clone(ds)
	slices.Sort(s)
	r := func(d time.Duration) time.Duration { return d.Round(100 * time.Microsecond) }
	return fmt.Sprintf("median %s (%s-%s, n=%d)", r(s[len(s)/2]), r(s[0]), r(s[len(s)-1]), len(s))
}

func delta(a, b stats) string {
	var parts []string
	for _, fn := range []string{"api", "worker", "janitor"} {
		x, y := a.Functions[fn], b.Functions[fn]
		parts = append(parts, fmt.Sprintf("%s %d invocations %d ms billed (%.2f GB-s)", fn, y.Invocations-x.Invocations, y.BilledMs-x.BilledMs, y.GBSeconds-x.GBSeconds))
	}
	return strings.Join(parts, "; ")
}
