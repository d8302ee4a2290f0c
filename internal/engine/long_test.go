package engine

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/queue"
	"github.com/heddle-io/heddle/internal/queue/memqueue"
	"github.com/heddle-io/heddle/internal/queue/routed"
	"github.com/heddle-io/heddle/internal/store"
	"github.com/heddle-io/heddle/planner"
)

// sentQueue records the task ids sent through it.
type sentQueue struct {
	queue.Queue
	mu   sync.Mutex
	sent []string
}

func (s *sentQueue) Send(ctx context.Context, tenant string, msgs ...queue.Message) error {
	if err := s.Queue.Send(ctx, tenant, msgs...); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range msgs {
		s.sent = append(s.sent, m.TaskID)
	}
	return nil
}

func (s *sentQueue) taskIDs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.sent...)
}

// TestLongTasksGoToTheLongQueue runs a create whose db install may take
// 20 minutes the way AWS runs it: a Lambda-like pool (whose invocations
// end within 14 minutes) on the short queue, and a Fargate-like pool on
// the long queue, both sending through routed with LongTaskAfter 13
// minutes. Every task whose timeout exceeds 13 minutes (the db install;
// node actions stay under it) is sent to the long queue, every other one to the short queue, whichever pool
// readied it, and the job succeeds.
func TestLongTasksGoToTheLongQueue(t *testing.T) {
	t.Parallel()
	const longAfter = 13 * time.Minute
	newQueue := func() *sentQueue {
		q := memqueue.New(memqueue.Options{})
		require.NoError(t, q.CreateTenantQueue(t.Context(), tenant))
		return &sentQueue{Queue: q}
	}
	short, long := newQueue(), newQueue()
	b := setup(t, routed.New(short, short, long), Config{LongTaskAfter: longAfter})
	fargate := New(b.counts, routed.New(long, short, long), b.rec, Config{
		LongTaskAfter: longAfter, Backoff: 5 * time.Millisecond, Visibility: 2 * time.Second,
		TaskLease: time.Second, DeadlineGrace: 50 * time.Millisecond,
	})

	sub := createSubmission(t, "c1", 4, nil)
	svcs := services()
	svcs["db"].Actions[domain.ActionInstall] = domain.ServiceAction{Type: "shell", Timeout: domain.Duration(20 * time.Minute)}
	plan, err := planner.Build(planner.Request{Operation: domain.OpCreate, New: sub.NewNodes, Services: svcs})
	require.NoError(t, err)
	sub.Plan = plan
	job, err := b.eng.Submit(b.ctx, sub)
	require.NoError(t, err)

	ctx, cancel := context.WithCancel(b.ctx)
	var wg sync.WaitGroup
	wg.Add(3)
	go func() {
		defer wg.Done()
		// A Lambda's deadline: continuations longer than what is left
		// are sent rather than claimed in process.
		lctx, lcancel := context.WithTimeout(ctx, 14*time.Minute)
		defer lcancel()
		b.eng.RunWorkers(lctx, tenant, 2)
	}()
	go func() { defer wg.Done(); fargate.RunWorkers(ctx, tenant, 2) }()
	go func() { defer wg.Done(); janitorEvery(ctx, b.eng, 50*time.Millisecond, nil) }()
	final := b.waitJob(t, "c1", job.ID, 30*time.Second)
	cancel()
	wg.Wait()
	require.Equal(t, domain.JobSucceeded, final.Status, "%s%s", final.StatusMessage, b.failures(t, final.ID))

	timeouts := map[string]time.Duration{}
	require.NoError(t, b.eng.eachTask(b.ctx, tenant, job.ID, func(_ store.Item, task domain.Task) (bool, error) {
		timeouts[task.ID] = task.Timeout.Std()
		return true, nil
	}))
	check := func(q *sentQueue, isLong bool) (n int) {
		for _, id := range q.taskIDs() {
			ref, err := ParseTaskRef(tenant, id)
			require.NoError(t, err)
			timeout, ok := timeouts[ref.Task]
			require.True(t, ok, id)
			require.Equal(t, isLong, timeout > longAfter, "%s (timeout %s) sent to the wrong queue", ref.Task, timeout)
			n++
		}
		return n
	}
	require.Positive(t, check(short, false), "short tasks were sent")
	require.Positive(t, check(long, true), "long tasks were sent")
	var installSent bool
	for _, id := range long.taskIDs() {
		ref, _ := ParseTaskRef(tenant, id)
		installSent = installSent || timeouts[ref.Task] == 20*time.Minute
	}
	require.True(t, installSent, "the 20-minute db install went to the long queue")
	checkInvariants(t, b)
}

// TestNoLongTasksWithoutLongTaskAfter: by default nothing is long.
func TestNoLongTasksWithoutLongTaskAfter(t *testing.T) {
	t.Parallel()
	mq := memqueue.New(memqueue.Options{})
	require.NoError(t, mq.CreateTenantQueue(t.Context(), tenant))
	short := &sentQueue{Queue: mq}
	longQ := memqueue.New(memqueue.Options{}) // no tenant queue: a send would fail
	b := setup(t, routed.New(short, short, longQ), Config{})
	sub := createSubmission(t, "c1", 2, nil)
	_, err := b.eng.Submit(b.ctx, sub)
	require.NoError(t, err)
	require.NotEmpty(t, short.taskIDs(), "with no long queue, everything went to the one queue")
}
