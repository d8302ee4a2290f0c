package engine

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/store"
)

// stepTwoDyingStore plays a process that dies in the middle of a
// submission's step 2: armed, the first transaction that writes a job's
// deferred-task chunks fails and nothing after it lands.
type stepTwoDyingStore struct {
	store.Store
	armed atomic.Bool
}

func (s *stepTwoDyingStore) Transact(ctx context.Context, ops []store.Op) error {
	if s.armed.Load() {
		for _, op := range ops {
			if strings.Contains(op.Key.PK, "DEFERRED#") {
				s.armed.Store(false)
				return errors.New("the process died")
			}
		}
	}
	return s.Store.Transact(ctx, ops)
}

// TestARetryOfAnUnfinishedSubmissionIsRefused: the janitor undoes a job
// whose process died while writing its step 2, and a retry of it would
// start a job whose tasks were never all written (its sinks would never
// all end: the job would hang until the janitor failed it, holding the
// cluster and the quota meanwhile). The retry is refused, saying to
// submit the operation again, and changes nothing.
func TestARetryOfAnUnfinishedSubmissionIsRefused(t *testing.T) {
	t.Parallel()
	var clock atomic.Int64
	clock.Store(time.Now().UnixNano())
	b := setup(t, nil, Config{Clock: func() time.Time { return time.Unix(0, clock.Load()) }})
	dying := &stepTwoDyingStore{Store: b.counts}
	b.eng = New(dying, b.q, b.rec, b.eng.cfg)

	dying.armed.Store(true)
	_, err := b.eng.Submit(b.ctx, createSubmission(t, "c1", 3, nil))
	require.Error(t, err)
	jobs, _, err := b.eng.Jobs(b.ctx, tenant, "c1", 10, "")
	require.NoError(t, err)
	require.Len(t, jobs, 1)
	job := jobs[0]
	require.Equal(t, domain.JobPending, job.Status)

	clock.Add(int64(b.eng.cfg.SubmitTimeout + time.Minute))
	r, err := b.eng.RunJanitor(b.ctx)
	require.NoError(t, err)
	require.Equal(t, 1, r.Undone)
	usage := b.usage(t)

	_, err = b.eng.Retry(b.ctx, tenant, "c1", job.ID, "ann")
	require.ErrorIs(t, err, ErrJobState)
	require.Contains(t, err.Error(), "submit the operation again")
	lj, err := b.eng.loadJob(b.ctx, tenant, "c1", job.ID)
	require.NoError(t, err)
	require.Equal(t, domain.JobFailed, lj.job.Status, "the refusal changed nothing")
	require.Equal(t, usage, b.usage(t))
	c, err := b.eng.Cluster(b.ctx, tenant, "c1")
	require.NoError(t, err)
	require.Equal(t, domain.ClusterTerminated, c.Status)
	checkInvariants(t, b)
}
