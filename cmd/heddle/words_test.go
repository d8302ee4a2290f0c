package main

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/cluster"
	"github.com/heddle-io/heddle/internal/domain"
)

// TestTaskCountsAddUp: a job's tasks are shown by status, so the parts sum
// to the total whatever the job's done counter says (it trails the
// workers: 0 while 6 had succeeded, or the total after an abort left 2
// READY).
func TestTaskCountsAddUp(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		view   cluster.JobView
		want   string
		refuse string
	}{
		{"running, counter behind", cluster.JobView{Job: domain.Job{ID: "j1", ClusterID: "c1", Status: domain.JobRunning, TaskTotal: 8, TaskDone: 0},
			TaskStatus: map[domain.TaskStatus]int{domain.TaskSucceeded: 6, domain.TaskRunning: 2}}, "tasks         8 tasks: 2 RUNNING, 6 SUCCEEDED", "0/8"},
		{"aborted with tasks left", cluster.JobView{Job: domain.Job{ID: "j1", ClusterID: "c1", Status: domain.JobAborted, TaskTotal: 8, TaskDone: 8},
			TaskStatus: map[domain.TaskStatus]int{domain.TaskSucceeded: 6, domain.TaskReady: 2}}, "tasks         8 tasks: 2 READY, 6 SUCCEEDED", "8/8"},
	} {
		var out strings.Builder
		printJob(&out, &tc.view, "shop", time.Now())
		require.Contains(t, out.String(), tc.want, tc.name)
		require.NotContains(t, out.String(), tc.refuse, tc.name)
		require.Contains(t, out.String(), "cluster       c1 (shop)\n", "the name beside the id")
	}

	p := &cluster.Progress{JobID: "j1", Operation: domain.OpCreate, Status: domain.JobRunning, Done: 0, Total: 8, Stages: []cluster.StageProgress{
		{Stage: 1, Total: 4, Done: 4}, {Stage: 2, Total: 4, Done: 2, Running: 1},
	}}
	require.Equal(t, "job j1 (create) RUNNING, 8 tasks: 6 done, 1 running, 1 waiting; stage 2 of 2: 4 tasks: 2 done, 1 running, 1 waiting", progressLine(p))
	p.Stages = nil
	require.Equal(t, "job j1 (create) RUNNING, 0/8 tasks done (0%)", progressLine(p), "without stages the job's counter is all there is")
}

// TestRetriedJobHasADuration: a job with no start recorded (a retried one)
// is timed from its submission, not shown as "-".
func TestRetriedJobHasADuration(t *testing.T) {
	t.Parallel()
	created := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	j := &domain.Job{Status: domain.JobSucceeded, CreatedAt: created, EndedAt: created.Add(90 * time.Second), Retries: 1}
	require.Equal(t, "1m30s", jobDuration(j, created.Add(time.Hour)))
	j.StartedAt = created.Add(10 * time.Second)
	require.Equal(t, "1m20s", jobDuration(j, created.Add(time.Hour)))
	j.EndedAt = time.Time{}
	require.Equal(t, "-", jobDuration(j, created.Add(time.Hour)), "an end that was not recorded is not now")
	j.Status = domain.JobRunning
	require.Equal(t, "50s", jobDuration(j, created.Add(time.Minute)))
}

// TestFailedJobSaysWhatFailed: the line that ends a watch says what became
// of each task, not "FAILED: 4/4 tasks".
func TestFailedJobSaysWhatFailed(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	v := &cluster.JobView{Job: domain.Job{ID: "j1", Status: domain.JobFailed, StartedAt: start, EndedAt: start.Add(3 * time.Second), TaskTotal: 4, TaskDone: 4, Retries: 2},
		TaskStatus:     map[domain.TaskStatus]int{domain.TaskSucceeded: 3, domain.TaskFailed: 1},
		RollbackStatus: map[domain.TaskStatus]int{domain.TaskSucceeded: 2}}
	require.Equal(t, "job j1 FAILED after 3s: 4 tasks: 1 FAILED, 3 SUCCEEDED; rollback 2 tasks: 2 SUCCEEDED (retried 2 times)", jobOutcome(v, start.Add(time.Hour)))
}
