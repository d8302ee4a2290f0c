package sshexec

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// machineBusy is the machine's busy CPU-seconds so far (user, nice,
// system, irq, softirq, steal: everything but idle and iowait), from
// /proc/stat; 0 where there is none.
func machineBusy() float64 {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	var total float64
	for i, f := range strings.Fields(line)[1:] {
		if i == 3 || i == 4 { // idle, iowait
			continue
		}
		v, _ := strconv.ParseFloat(f, 64)
		total += v
	}
	return total / 100 // USER_HZ is 100 on Linux
}

// BenchmarkStep50 is one step of the static-pool benchmark
// (scripts/bench-static.sh) without the engine: a 1 s action started on 50
// OpenSSH hosts at once over connections already open, the way the shell
// automator starts it (the task's context and script written through the
// start's session, the command started detached and waited on in place),
// through the connection's dispatcher and through sessions of their own
// (start-sessions), beside a bare `sleep 1` session and one through
// `sudo -n`. It reports
// each variant's run overhead (duration minus 1 s, median and p90 over the
// 50) and the machine's CPU-milliseconds per action (the hosts' sshd,
// sudo and shells; load from elsewhere on the machine counts too, so
// compare variants of one run).
//
//	go test -run '^$' -bench Step50 -benchtime 5x ./internal/sshexec/
func BenchmarkStep50(b *testing.B) {
	backend := opensshBackend(b)
	if len(backend.targets) < 50 {
		b.Skipf("%d OpenSSH hosts; the benchmark needs 50", len(backend.targets))
	}
	targets := backend.targets[:50]
	clients := make([]*Client, len(targets))
	for i, t := range targets {
		t.Node = fmt.Sprintf("bench-step-%d", i)
		clients[i] = dial(b, t)
	}
	root := fmt.Sprintf("/var/tmp/heddle-bench-step-%d", os.Getpid())
	b.Cleanup(func() {
		_, _ = clients[0].Run(context.Background(), Command{Script: "rm -rf -- " + quote(root)})
	})
	contextDoc := strings.Repeat(`{"cluster":{"id":"c-bench","nodes":50},"service":"bench","action":"start"}`, 20)
	env := map[string]string{}
	for i := range 20 {
		env[fmt.Sprintf("HEDDLE_VAR_%d", i)] = strings.Repeat("v", 40)
	}
	start := func(ctx context.Context, c *Client, i, round int) error {
		dir := fmt.Sprintf("%s/%d-%d", root, i, round)
		s, err := c.StartAndWait(ctx, Detached{
			Dir:    dir + "/run",
			Script: "cd / && exec /bin/sh " + quote(dir+"/script"),
			Env:    env,
			Files: []File{
				{Path: dir + "/context.json", Data: []byte(contextDoc)},
				{Path: dir + "/script", Data: []byte("sleep 1\n")},
			},
			Wait:        2 * time.Second,
			RemoveAfter: dir,
		})
		if err == nil && (s.Status.State != Exited || s.Status.ExitCode != 0) {
			err = fmt.Errorf("not exited 0: %+v", s.Status)
		}
		return err
	}
	type variant struct {
		name string
		run  func(ctx context.Context, c *Client, i, round int) error
	}
	variants := []variant{
		{"bare", func(ctx context.Context, c *Client, _, _ int) error {
			_, err := c.exec(ctx, "sleep 1", nil, discard{}, discard{})
			return err
		}},
		{"sudo", func(ctx context.Context, c *Client, _, _ int) error {
			_, err := c.exec(ctx, "sudo -n sleep 1", nil, discard{}, discard{})
			return err
		}},
		{"start", start},
		{"start-sessions", func(ctx context.Context, c *Client, i, round int) error {
			sessions := *c
			sessions.noDispatch = true
			return start(ctx, &sessions, i, round)
		}},
	}
	over := map[string][]float64{}
	cpu := map[string]float64{}
	round := 0
	for b.Loop() {
		for _, v := range variants {
			round++
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			durs := make([]float64, len(clients))
			errs := make([]error, len(clients))
			var wg sync.WaitGroup
			busy := machineBusy()
			for i, c := range clients {
				wg.Add(1)
				go func() {
					defer wg.Done()
					start := time.Now()
					errs[i] = v.run(ctx, c, i, round)
					durs[i] = time.Since(start).Seconds() - 1
				}()
			}
			wg.Wait()
			cpu[v.name] += machineBusy() - busy
			cancel()
			for i, err := range errs {
				if err != nil {
					b.Fatalf("%s on host %d: %v", v.name, i, err)
				}
			}
			over[v.name] = append(over[v.name], durs...)
		}
	}
	for _, v := range variants {
		d := over[v.name]
		slices.Sort(d)
		b.ReportMetric(d[len(d)/2]*1000, v.name+"-overhead-median-ms")
		b.ReportMetric(d[len(d)*9/10]*1000, v.name+"-overhead-p90-ms")
		b.ReportMetric(cpu[v.name]*1000/float64(len(d)), v.name+"-cpu-ms/action")
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
