package engine

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/queue"
)

// sentLog records every message sent through it.
type sentLog struct {
	queue.Queue
	mu   sync.Mutex
	sent []string
}

func (s *sentLog) Send(ctx context.Context, tenant string, msgs ...queue.Message) error {
	s.mu.Lock()
	for _, m := range msgs {
		s.sent = append(s.sent, m.TaskID)
	}
	s.mu.Unlock()
	return s.Queue.Send(ctx, tenant, msgs...)
}

func TestJoinsSettleWithoutATripThroughTheQueue(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, Config{ResendAfter: time.Hour})
	log := &sentLog{Queue: b.q}
	b.eng.queue = log
	// 40 nodes: every join of this plan has more dependents than a
	// completion settles inline, and some have few enough.
	sub := createSubmissionWithReferences(t, "c1", 40, nil, declaredReferences())
	wide := 0
	for _, pt := range sub.Plan.Tasks {
		if pt.IsJoin() && len(sub.Plan.Dependents()[pt.ID])+inlineReserve > maxInlineItems {
			wide++
		}
	}
	require.Positive(t, wide, "the plan must have joins too wide to settle inline")
	job, err := b.eng.Submit(b.ctx, sub)
	require.NoError(t, err)
	stop := b.run(t, 8, 50*time.Millisecond)
	final := b.waitJob(t, "c1", job.ID, 30*time.Second)
	stop()
	require.Equal(t, domain.JobSucceeded, final.Status, "%s%s", final.StatusMessage, b.failures(t, final.ID))
	log.mu.Lock()
	defer log.mu.Unlock()
	require.NotEmpty(t, log.sent)
	for _, id := range log.sent {
		require.NotContains(t, id, refSep+"join:", "a join went through the queue")
	}
	checkInvariants(t, b)
}
