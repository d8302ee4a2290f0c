package main

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/provider/providertest"
)

// TestCreateTimeline says where the wall time of a create goes on the AWS
// topology, when HEDDLE_LOCAL_AWS_TIMELINE names a node count (at most
// 100; scripts/local-aws-figures.sh's 100-node create is the same create):
// for every task, how long it waited between becoming ready and its
// attempt's start (the queue, the event source mapping, a worker's batch),
// how long its attempt took (for a detached action, its polls), and how
// many times it was sent again; then the slowest tasks, and the seconds
// in which nothing started or ended.
func TestCreateTimeline(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("HEDDLE_LOCAL_AWS_TIMELINE"))
	if n < 1 || n > 100 {
		t.Skip("HEDDLE_LOCAL_AWS_TIMELINE=<nodes, 1 to 100> runs it")
	}
	d := setup(t, strings.Fields(os.Getenv("HEDDLE_LOCAL_AWS_TIMELINE_FLAGS"))...)
	need(t, "HEDDLE_SSH_HOSTS", "scripts/sshd-hosts.sh")
	d.createTenant("1", "100", "10")
	d.registerHosts("acme", min(n, 50))
	if n > 50 {
		d.registerHostsAs("acme", n-50, "g")
	}
	d.mustHeddle("apply", "-f", "testdata/static-catalog.yaml")
	before, err := d.stats()
	require.NoError(t, err)
	start := time.Now()
	d.mustHeddle("clusters", "create", "big", "--template", "pair", "--size", strconv.Itoa(n), "--wait")
	wall := time.Since(start)
	after, err := d.stats()
	require.NoError(t, err)
	t.Logf("TIMELINE %d-node create: %s wall; %s", n, wall.Round(time.Second), delta(before, after))

	var list struct {
		Items []clusterView `json:"items"`
	}
	d.api(http.MethodGet, "/v1/clusters", nil, &list)
	require.Len(t, list.Items, 1)
	cluster := list.Items[0].ID
	var jobs struct {
		Items []struct {
			ID string `json:"id"`
		} `json:"items"`
	}
	d.api(http.MethodGet, "/v1/clusters/"+cluster+"/jobs", nil, &jobs)
	require.Len(t, jobs.Items, 1)
	job := jobs.Items[0].ID
	tasks := d.jobTasks(cluster, job)
	type row struct {
		id, action    string
		wait, run     time.Duration
		sends, starts int
	}
	var rows []row
	var events []time.Time
	byAction := map[string][]time.Duration{}
	waitsByAction := map[string][]time.Duration{}
	for _, tt := range tasks {
		if len(tt.Attempts) == 0 {
			continue
		}
		first, last := tt.Attempts[0], tt.Attempts[len(tt.Attempts)-1]
		r := row{id: tt.ID, action: tt.Action, run: last.EndedAt.Sub(first.StartedAt), sends: tt.extra(), starts: len(tt.Attempts)}
		if !tt.ReadyAt.IsZero() {
			r.wait = first.StartedAt.Sub(tt.ReadyAt)
		}
		rows = append(rows, r)
		byAction[tt.Action] = append(byAction[tt.Action], r.run)
		waitsByAction[tt.Action] = append(waitsByAction[tt.Action], r.wait)
		for _, a := range tt.Attempts {
			events = append(events, a.StartedAt, a.EndedAt)
		}
	}
	for _, a := range slices.Sorted(func(yield func(string) bool) {
		for k := range byAction {
			if !yield(k) {
				return
			}
		}
	}) {
		t.Logf("TIMELINE %-10s %4d tasks: ready->claim %s; claim->end %s", a, len(byAction[a]), spread(waitsByAction[a]), spread(byAction[a]))
	}
	resent, reasons := 0, map[string]int{}
	for _, tt := range tasks {
		if len(tt.Attempts) == 0 {
			continue // a join, or a rollback task that never ran: never sent
		}
		if tt.extra() > 0 {
			resent++
		}
		for _, r := range tt.SendReasons {
			reasons[r]++
		}
	}
	t.Logf("TIMELINE tasks sent more than once: %d of %d; messages beyond a task's first, by why (a continuation's first is %s): %v",
		resent, len(rows), domain.SendContinuationPolls, reasons)
	slices.SortFunc(rows, func(a, b row) int { return int(b.wait+b.run) - int(a.wait+a.run) })
	for _, r := range rows[:min(8, len(rows))] {
		t.Logf("TIMELINE slow: %-50s ready->claim %6s run %6s sends %d attempts %d", r.id, r.wait.Round(100*time.Millisecond), r.run.Round(100*time.Millisecond), r.sends, r.starts)
	}
	slices.SortFunc(events, func(a, b time.Time) int { return a.Compare(b) })
	var gaps []string
	var idle time.Duration
	for i := 1; i < len(events); i++ {
		if g := events[i].Sub(events[i-1]); g >= 2*time.Second {
			idle += g
			gaps = append(gaps, fmt.Sprintf("%s at +%s", g.Round(100*time.Millisecond), events[i-1].Sub(events[0]).Round(time.Second)))
		}
	}
	if len(events) > 0 {
		t.Logf("TIMELINE first attempt start to last end %s; %s in %d gaps of 2 s or more with no attempt starting or ending: %s", events[len(events)-1].Sub(events[0]).Round(time.Second), idle.Round(time.Second), len(gaps), strings.Join(gaps, ", "))
	}
	if n <= 50 {
		// The same create on `heddle server`, on the same hosts, in the
		// same run: the figure the AWS topology is held to (issue 35: at
		// most 1.5 times it).
		local := localCreate(t, n)
		t.Logf("TIMELINE the same create on heddle server: %s wall; AWS topology / heddle server = %.2f", local.Round(100*time.Millisecond), wall.Seconds()/local.Seconds())
	}
}

// localCreate times the timeline's create on a `heddle server` whose
// static pool holds the same OpenSSH hosts (registered with the CLI).
func localCreate(t *testing.T, n int) time.Duration {
	t.Helper()
	src := startLocalServer(t)
	ann := adminKeyOf(t, src.must(src.super, "tenants", "create", "acme", "--max-clusters", "1", "--max-nodes", "100", "--workers", "10", "--admin", "ann", "-o", "json"))
	src.must(ann, "apply", "-f", "testdata/static-catalog.yaml")
	hosts := providertest.StartOpenSSH(t)
	require.GreaterOrEqual(t, len(hosts.Hosts), n)
	keyFile := filepath.Join(src.dir, "host.key")
	require.NoError(t, os.WriteFile(keyFile, hosts.KeyPEM, 0o600))
	for i, h := range hosts.Hosts[len(hosts.Hosts)-n:] {
		addr, port, _ := strings.Cut(h.Address, ":")
		src.must(ann, "hosts", "add", "rack", fmt.Sprintf("h%d", i), "--address", addr, "--port", port, "--user", hosts.User,
			"--key-file", keyFile, "--host-key", h.HostKey)
	}
	start := time.Now()
	src.must(ann, "clusters", "create", "big", "--template", "pair", "--size", strconv.Itoa(n), "--wait")
	return time.Since(start)
}
