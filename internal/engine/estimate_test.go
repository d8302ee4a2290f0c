package engine

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/domain"
)

// TestPollScheduleFollowsTheWork: a parked service action is first looked
// at when its estimate says it is over (or after FirstPoll when nothing is
// known), then after FirstPoll doubling up to the executor's PollAfter; a
// provider action keeps its executor's schedule.
func TestPollScheduleFollowsTheWork(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 28, 19, 0, 0, 0, time.UTC)
	e := New(nil, nil, nil, Config{Clock: func() time.Time { return now }})
	started := now.Add(-300 * time.Millisecond)
	install := domain.Task{ID: "n1/base/install", ClusterID: "c1", Service: "base", Action: domain.ActionInstall,
		Attempts: []domain.TaskAttempt{{StartedAt: started}}}
	const every = 5 * time.Second

	// Nothing known: 1 s, 2 s, 4 s, then every 5 s.
	var got []time.Duration
	p, again := parked{}, false
	for range 5 {
		d, step := e.pollDelay(tenant, install, every, p, again)
		got = append(got, d)
		p, again = parked{Step: step}, true
	}
	require.Equal(t, []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, every, every}, got)

	// Learned: 30 s on this cluster. The first look comes when it is
	// likely over (less the 300 ms already spent), past PollInterval;
	// then the backoff starts again from FirstPoll.
	e.est.learn(tenant, install, 30*time.Second)
	require.Equal(t, 30*time.Second, e.est.expect(tenant, install))
	d, step := e.pollDelay(tenant, install, every, parked{}, false)
	require.Equal(t, 30*time.Second-300*time.Millisecond, d)
	d, _ = e.pollDelay(tenant, install, every, parked{Step: step}, true)
	require.Equal(t, time.Second, d)

	// A short estimate never looks sooner than FirstPoll (SQS counts
	// visibility in whole seconds).
	short := install
	short.Service = "app"
	e.est.learn(tenant, short, 50*time.Millisecond)
	d, _ = e.pollDelay(tenant, short, every, parked{}, false)
	require.Equal(t, time.Second, d)

	// Another cluster of the tenant falls back on the service's estimate;
	// its own runs then weigh in (estimateWeight for the newest).
	other := install
	other.ClusterID = "c2"
	require.Equal(t, 30*time.Second, e.est.expect(tenant, other))
	e.est.learn(tenant, other, 10*time.Second)
	require.Equal(t, 10*time.Second, e.est.expect(tenant, other), "c2's first own sample")
	require.Equal(t, 30*time.Second, e.est.expect(tenant, install), "c1 keeps its own")
	e.est.learn(tenant, install, 20*time.Second)
	require.Equal(t, 27*time.Second, e.est.expect(tenant, install))
	require.Zero(t, e.est.expect("other-tenant", install), "tenants learn apart")

	// A provider action keeps the executor's schedule (the EC2 provider
	// looks at a booting instance at its BootEstimate).
	confirm := domain.Task{ID: "n1/confirm", ClusterID: "c1", Action: domain.ActionConfirm, Attempts: install.Attempts}
	d, _ = e.pollDelay(tenant, confirm, 50*time.Second, parked{}, false)
	require.Equal(t, 50*time.Second, d)
	e.est.learn(tenant, confirm, time.Minute)
	require.Zero(t, e.est.expect(tenant, confirm))

	// FirstPoll < 0: the schedule before issue 35.
	old := New(nil, nil, nil, Config{FirstPoll: -1, Clock: func() time.Time { return now }})
	d, _ = old.pollDelay(tenant, install, every, parked{}, false)
	require.Equal(t, every, d)
}

// TestEstimatesStayBounded: a process that has learned maxEstimates keys
// forgets them and learns again rather than grow.
func TestEstimatesStayBounded(t *testing.T) {
	t.Parallel()
	var s estimates
	for i := range maxEstimates {
		s.learn(tenant, domain.Task{ClusterID: "c" + string(rune('a'+i%26)) + time.Duration(i).String(), Service: "s", Action: domain.ActionInstall}, time.Second)
	}
	require.LessOrEqual(t, len(s.m), maxEstimates)
}
