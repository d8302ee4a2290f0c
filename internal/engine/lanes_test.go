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

// TestHandleBatchRunsItsGroupsAtOnce: a batch holds the first tasks of
// three nodes, one message group each. Each attempt waits until all three
// have started: handled one after the other (as before issue 35, where the
// tenth node's create waited seconds behind nine others' chains), the
// first would wait for ever and the batch would not end.
func TestHandleBatchRunsItsGroupsAtOnce(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, Config{})
	job, err := b.eng.Submit(b.ctx, createSubmission(t, "c1", 3, nil))
	require.NoError(t, err)
	tasks, err := b.eng.Tasks(b.ctx, tenant, job.ID)
	require.NoError(t, err)
	var ds []queue.Delivery
	for _, task := range tasks {
		if task.Status == domain.TaskReady && !task.Rollback {
			ref := TaskRef{Tenant: tenant, Cluster: "c1", Job: job.ID, Task: task.ID}
			ds = append(ds, queue.Delivery{Message: queue.Message{TaskID: ref.String(), Attempt: task.Attempt,
				Group: group("c1", task.NodeID, task.ID, task.Sends)}, Receipt: "r-" + task.ID})
		}
	}
	require.Len(t, ds, 3, "one ready task per node")

	var started sync.WaitGroup
	started.Add(len(ds))
	all := make(chan struct{})
	go func() { started.Wait(); close(all) }()
	var once sync.Map
	b.rec.hook = func(ctx context.Context, a Attempt) {
		if _, again := once.LoadOrStore(a.Task.ID, true); again {
			return
		}
		started.Done()
		select {
		case <-all:
		case <-ctx.Done():
		}
	}
	ctx, cancel := context.WithTimeout(b.ctx, 20*time.Second)
	defer cancel()
	keep := b.eng.HandleBatch(ctx, tenant, ds)
	require.NoError(t, ctx.Err(), "the batch ended only when its time ran out: its groups ran one after the other")
	require.Empty(t, keep)
	select {
	case <-all:
	default:
		t.Fatal("not every group's task started")
	}
}
