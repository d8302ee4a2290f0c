package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/engine"
	"github.com/heddle-io/heddle/internal/store"
	"github.com/heddle-io/heddle/planner"
)

// A big job's views (the job, its first page of tasks, the cluster's stage
// progress) come from a job summary item (JOBSUM / <job>) instead of every
// task: a 10,000-node create has some 55,000 tasks, and reading them all
// cost 0.4-2.2 s per view on the embedded store and far more on DynamoDB.
//
// The summary is a recount (the same code the small jobs' views run on
// their tasks), stored with the time it was made, so it equals what a
// recount gave at CountedAt, whatever crashed or raced before: nothing
// adds to it, so nothing can be lost or counted twice. A view of a running
// job answers the stored summary and, when it is older than
// summaryMaxAge, recounts in the background (one recount per job at a
// time in a process; on Lambda a frozen recount runs on the next
// invocation, or a later view does it), so a running job's view is at most
// a few seconds behind and says as of when (countedAt). A view of a job
// whose status is not the one its summary was counted in (it started,
// fails, rolls back, paused, ended, was retried) recounts in the request.
// Once a job has ended its tasks no longer change, so that recount holds
// for good, until a retry starts the job again. A PENDING job (a staged
// submission still being written) is counted on every view. The task workers write nothing for it, so the engine's
// writes per task do not change.
//
// Jobs of fewer than summaryMinTasks tasks are counted on every view, as
// before: exact, and cheap at that size.

// summaryMinTasks is the job size (forward work tasks) from which views
// read a job summary. summaryMaxAge is how old a running job's summary
// may be before a view recounts it in the background.
//
// A recount that took T is not redone before summaryCostFactor*T either,
// so background recounts of a job people keep looking at take at most a
// tenth of a core (a 55,000-task job under load takes seconds to count).
const (
	summaryMinTasks   = 2000
	summaryMaxAge     = 5 * time.Second
	summaryCostFactor = 10
)

// jobSummary is what a job's views need of its tasks.
type jobSummary struct {
	Job       string           `json:"job"`
	JobStatus domain.JobStatus `json:"jobStatus"`
	// EndedAt is the job's end the summary was counted after (zero while
	// it runs): a retried job that ended again has another.
	EndedAt   time.Time `json:"endedAt"`
	CountedAt time.Time `json:"countedAt"`
	// Took is how long the recount took.
	Took           domain.Duration           `json:"took"`
	TaskStatus     map[domain.TaskStatus]int `json:"taskStatus"`
	RollbackStatus map[domain.TaskStatus]int `json:"rollbackStatus,omitempty"`
	Stages         []StageProgress           `json:"stages,omitempty"`
	// First is the job's first FirstTasks tasks in view order, as listed.
	First []domain.Task `json:"first"`
	Tasks int           `json:"tasks"`
	// Lead is the job's failed and running tasks as counted, in view
	// order, at most maxLead of them: what pages of its tasks show before
	// the others, which they read in the task index's order
	// (taskpages.go).
	Lead []leadTask `json:"lead,omitempty"`
	// Format is summaryFormat for a summary that has Lead; an older one
	// is counted again when read.
	Format int `json:"format,omitempty"`
}

// summaryFormat is the summary's current format (see jobSummary.Format).
const summaryFormat = 1

// maxLead bounds a summary's lead (some 80 bytes a task): failed and
// running tasks past it are listed among the others, in key order.
const maxLead = 2000

// leadTask is a task of a summary's lead: its place in the view as
// counted, and what filters read.
type leadTask struct {
	Order string `json:"o"`
	engine.TaskEntry
}

// final reports whether the summary was counted after job, as it is now,
// ended.
func (s *jobSummary) final(job domain.Job) bool {
	return job.Status.Terminal() && s.JobStatus == job.Status && s.EndedAt.Equal(job.EndedAt)
}

func jobSummaryKey(tenant, job string) store.Key {
	return store.Key{PK: store.TenantPK(tenant, "JOBSUM"), SK: job}
}

// summaryRefreshes marks the jobs whose summary this process is
// recounting in the background.
type summaryRefreshes struct {
	mu      sync.Mutex
	running map[string]bool
	wg      sync.WaitGroup
}

// start runs fn unless a refresh of key is under way.
func (r *summaryRefreshes) start(key string, fn func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.running == nil {
		r.running = map[string]bool{}
	}
	if r.running[key] {
		return
	}
	r.running[key] = true
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		defer func() {
			r.mu.Lock()
			delete(r.running, key)
			r.mu.Unlock()
		}()
		fn()
	}()
}

// jobSummaryOf returns the summary a view of job reads, or nil when the job
// is small enough to count on every view.
func (s *Service) jobSummaryOf(ctx context.Context, tenant, cluster string, job domain.Job) (*jobSummary, error) {
	if job.TaskTotal < s.summaryMinTasks || job.Status == domain.JobPending {
		// Small, or still being written (a staged submission): counted
		// on every view.
		return nil, nil
	}
	it, err := s.cfg.Store.Get(ctx, jobSummaryKey(tenant, job.ID))
	switch {
	case errors.Is(err, store.ErrNotFound):
		return s.recountJob(ctx, tenant, cluster, job.ID, nil)
	case err != nil:
		return nil, fmt.Errorf("reading the summary of job %s: %w", job.ID, err)
	}
	var sum jobSummary
	if err := json.Unmarshal(it.Data, &sum); err != nil {
		return nil, fmt.Errorf("decoding the summary of job %s: %w", job.ID, err)
	}
	switch {
	case sum.Format < summaryFormat:
		// Counted before summaries had a lead: count it again, once.
		return s.recountJob(ctx, tenant, cluster, job.ID, &it)
	case sum.final(job):
		return &sum, nil
	case job.Status.Terminal() || sum.JobStatus != job.Status:
		// The job ended or changed course since (it started, failed,
		// rolls back, was paused or retried): recount in the request, so
		// a view never pairs the job's new status with counts from
		// before. An ended job's recount then holds for good.
		return s.recountJob(ctx, tenant, cluster, job.ID, &it)
	case s.now().Sub(sum.CountedAt) >= max(summaryMaxAge, summaryCostFactor*time.Duration(sum.Took)):
		s.refreshes.start(tenant+"/"+job.ID, func() {
			bg, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
			defer cancel()
			if _, err := s.recountJob(bg, tenant, cluster, job.ID, &it); err != nil {
				s.log.WarnContext(bg, "recounting a job's summary failed; a later view tries again", "job", job.ID, "error", err)
			}
		})
	}
	return &sum, nil
}

// recountJob counts the job's tasks into a new summary and stores it over
// prev (nil: none yet), unless another recount stored one first.
func (s *Service) recountJob(ctx context.Context, tenant, cluster, jobID string, prev *store.Item) (*jobSummary, error) {
	// The job before its tasks: a job that had ended then has tasks that
	// no longer change, so the summary may say it was counted after the end.
	job, err := s.cfg.Engine.Job(ctx, tenant, cluster, jobID)
	if err != nil {
		return nil, err
	}
	countedAt, start := s.now(), time.Now()
	tasks, err := s.cfg.Engine.Tasks(ctx, tenant, jobID)
	if err != nil {
		return nil, err
	}
	sum := &jobSummary{Job: jobID, JobStatus: job.Status, CountedAt: countedAt, Tasks: len(tasks), Format: summaryFormat}
	if job.Status.Terminal() {
		sum.EndedAt = job.EndedAt
	}
	sum.TaskStatus, sum.RollbackStatus = countTasks(tasks)
	stages := s.stagesFor(tenant, jobID, tasks)
	sum.Stages = countStages(stages, statusesOf(tasks))
	sortForView(tasks)
	sum.Lead = leadOf(tasks, stages)
	first := tasks[:min(len(tasks), FirstTasks)]
	sum.First = make([]domain.Task, len(first))
	for i, t := range first {
		sum.First[i] = listed(t)
	}
	sum.Took = domain.Duration(time.Since(start))
	cond := store.Condition{MustNotExist: true}
	if prev != nil {
		cond = store.Condition{Version: prev.Version}
	}
	_, err = s.cfg.Store.Write(ctx, store.Put(store.Item{Key: jobSummaryKey(tenant, jobID), Data: mustJSON(sum)}, cond))
	if err != nil && !errors.Is(err, store.ErrConditionFailed) {
		// The answer stands without it; the next view recounts.
		s.log.WarnContext(ctx, "storing a job's summary failed", "job", jobID, "error", err)
	}
	return sum, nil
}

// countTasks counts tasks by status, the forward plan's and the rollback
// plan's apart (nil when there are no rollback tasks).
func countTasks(tasks []domain.Task) (forward, rollback map[domain.TaskStatus]int) {
	forward = map[domain.TaskStatus]int{}
	for _, t := range tasks {
		if t.Rollback {
			if rollback == nil {
				rollback = map[domain.TaskStatus]int{}
			}
			rollback[t.Status]++
		} else {
			forward[t.Status]++
		}
	}
	return forward, rollback
}

// leadOf is the lead of tasks in view order: their failed and running
// tasks, at most maxLead.
func leadOf(tasks []domain.Task, stages []planner.Stage) []leadTask {
	var lead []leadTask
	var stage map[string]int
	for _, t := range tasks {
		if statusRank(t.Status) > 1 || len(lead) == maxLead {
			break
		}
		if stage == nil {
			stage = stageNumbers(stages)
		}
		en := engine.TaskEntry{ID: t.ID, Node: t.NodeID, Service: t.Service, Action: t.Action, Rollback: t.Rollback}
		if !t.Rollback {
			en.Stage = stage[t.ID]
		}
		lead = append(lead, leadTask{Order: TaskOrder(t), TaskEntry: en})
	}
	return lead
}

// stageNumbers maps each task of stages to its stage (from 1).
func stageNumbers(stages []planner.Stage) map[string]int {
	out := map[string]int{}
	for i, st := range stages {
		for _, id := range st {
			out[id] = i + 1
		}
	}
	return out
}
