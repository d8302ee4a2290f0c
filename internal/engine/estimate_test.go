package engine

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/queue"
	"github.com/heddle-io/heddle/planner"
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

// TestAParkedServiceActionIsFirstLookedAtByItsEstimate: the schedule
// reaches the queue. Each install asks to be polled after 10 s (a
// PollInterval); one that ran before on this cluster in 400 ms is first
// looked at by that estimate, not after 10 s, and the estimate reaches the
// executor; one of a service nothing is known of is looked at after
// FirstPoll. The job's success then teaches the engine its own installs.
func TestAParkedServiceActionIsFirstLookedAtByItsEstimate(t *testing.T) {
	t.Parallel()
	const firstPoll, estimate = 50 * time.Millisecond, 400 * time.Millisecond
	b := setup(t, nil, Config{FirstPoll: firstPoll})
	pe := &pollingExec{inner: Simulation{}, after: 10 * time.Second, starts: make(chan string, 8)}
	b.rec.inner = pe
	// Two nodes: lb's and db's (layout), one install each.
	sub := createSubmission(t, "c1", 2, func(pt planner.Task) map[string]string {
		if pt.Action == domain.ActionInstall {
			return map[string]string{testPolls: "1"}
		}
		return nil
	})
	var installs []planner.Task
	for i, pt := range sub.Plan.Tasks {
		if pt.Action == domain.ActionInstall {
			sub.Plan.Tasks[i].Timeout = domain.Duration(5 * time.Minute) // a liveness bound, not what this checks
			installs = append(installs, pt)
		}
	}
	require.Len(t, installs, 2, "two services' installs")
	require.NotEqual(t, installs[0].Service, installs[1].Service)
	known := installs[0].Service
	b.eng.est.learn(tenant, domain.Task{ClusterID: "c1", Service: known, Action: domain.ActionInstall}, estimate)

	var mu sync.Mutex
	expected := map[string]time.Duration{} // service -> Attempt.Expect at the start
	pe.onStartAttempt = func(a Attempt) {
		mu.Lock()
		defer mu.Unlock()
		expected[a.Task.Service] = a.Expect
	}
	// A parked attempt's message is kept for its next look (or, back
	// early, for what is left of it): the longest such delay per task.
	rq := &delayQueue{Queue: b.q, visibility: b.eng.cfg.Visibility, receipts: map[string]string{}, longest: map[string]time.Duration{}}
	b.eng.queue = rq
	job, err := b.eng.Submit(b.ctx, sub)
	require.NoError(t, err)
	stop := b.run(t, 2, 20*time.Millisecond)
	final := b.waitJob(t, "c1", job.ID, 4*time.Minute)
	stop()
	require.Equal(t, domain.JobSucceeded, final.Status, "%s%s", final.StatusMessage, b.failures(t, final.ID))

	mu.Lock()
	defer mu.Unlock()
	rq.mu.Lock()
	defer rq.mu.Unlock()
	delayOf := func(pt planner.Task) time.Duration {
		for id, d := range rq.longest {
			if strings.HasSuffix(id, "/"+pt.ID) || strings.HasSuffix(id, "|"+pt.ID) {
				return d
			}
		}
		return 0
	}
	require.Equal(t, estimate, expected[known], "the executor hears the estimate")
	require.Positive(t, delayOf(installs[0]), "the install was parked: %v", rq.longest)
	require.LessOrEqual(t, delayOf(installs[0]), estimate, "first looked at by the estimate, not after PollAfter")
	other := installs[1]
	require.Zero(t, expected[other.Service])
	require.Positive(t, delayOf(other))
	require.LessOrEqual(t, delayOf(other), firstPoll, "nothing known of %s: FirstPoll", other.Service)
	require.Positive(t, b.eng.est.expect(tenant, domain.Task{ClusterID: "c1", Service: other.Service, Action: domain.ActionInstall}),
		"what %s's install took is learned", other.Service)
	checkInvariants(t, b)
}

// delayQueue records, per task, the longest visibility a worker set on a
// message of it, leaving out the engine's Visibility (holds, heartbeats).
type delayQueue struct {
	queue.Queue
	visibility time.Duration
	mu         sync.Mutex
	receipts   map[string]string // receipt -> task id
	longest    map[string]time.Duration
}

func (q *delayQueue) Receive(ctx context.Context, tenant string, max int, wait, visibility time.Duration) ([]queue.Delivery, error) {
	ds, err := q.Queue.Receive(ctx, tenant, max, wait, visibility)
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, d := range ds {
		q.receipts[d.Receipt] = d.TaskID
	}
	return ds, err
}

func (q *delayQueue) Extend(ctx context.Context, tenant, receipt string, visibility time.Duration) error {
	q.mu.Lock()
	if id := q.receipts[receipt]; id != "" && visibility != q.visibility {
		q.longest[id] = max(q.longest[id], visibility)
	}
	q.mu.Unlock()
	return q.Queue.Extend(ctx, tenant, receipt, visibility)
}
