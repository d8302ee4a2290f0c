package cluster

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/heddle-io/heddle/internal/access"
	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/engine"
	"github.com/heddle-io/heddle/planner"
)

// View is a cluster as the API shows it: the record, its live nodes and the
// progress of its latest job.
type View struct {
	domain.Cluster
	// Layout groups the live nodes by what they run, with counts, and
	// NodeStatus counts them by status: the whole cluster at any size.
	Layout     []LayoutGroup             `json:"layout"`
	NodeStatus map[domain.NodeStatus]int `json:"nodeStatus"`
	// Nodes are the first FirstNodes live nodes by Num; NodesOmitted says
	// how many more there are (GET .../nodes pages through all of them).
	Nodes        []domain.Node `json:"nodes"`
	NodesOmitted int           `json:"nodesOmitted,omitempty"`
	Progress     *Progress     `json:"progress,omitempty"`
}

// Progress is a job's done/total and its stage view (Sahara's "provision
// progress"): stages are how Coopr would have grouped the tasks; heddle runs
// each task as soon as its own dependencies are done, so several stages may
// be under way at once.
type Progress struct {
	JobID     string           `json:"jobId"`
	Operation domain.Operation `json:"operation"`
	Status    domain.JobStatus `json:"status"`
	Done      int              `json:"done"`
	Total     int              `json:"total"`
	Stages    []StageProgress  `json:"stages,omitempty"`
	// CountedAt, set on big jobs, is when the stages were counted (a job
	// summary; see jobsummary.go).
	CountedAt *time.Time `json:"countedAt,omitempty"`
}

// StageProgress counts one stage's tasks by status.
type StageProgress struct {
	Stage   int `json:"stage"`
	Total   int `json:"total"`
	Done    int `json:"done"`
	Running int `json:"running"`
	Failed  int `json:"failed"`
}

// Get returns a cluster the caller may see, with nodes and progress.
func (s *Service) Get(ctx context.Context, p access.Principal, id string) (*View, error) {
	c, err := s.visible(ctx, p, id)
	if err != nil {
		return nil, err
	}
	var job *domain.Job
	if c.LatestJobID != "" {
		j, err := s.cfg.Engine.Job(ctx, p.Tenant, id, c.LatestJobID)
		if err != nil {
			return nil, err
		}
		job = &j
		if j.Status.Terminal() && c.ActiveJobID == j.ID {
			// The job ended between the two reads. Its end and the
			// cluster's change commit together, so one more read of the
			// cluster shows what the job left: a view never pairs a
			// finished job with the cluster as it was while it ran.
			if c, err = s.visible(ctx, p, id); err != nil {
				return nil, err
			}
		}
	}
	v := &View{Cluster: c}
	if err := s.nodeView(ctx, p.Tenant, v, job); err != nil {
		return nil, err
	}
	if job != nil {
		stages, countedAt, err := s.progress(ctx, p.Tenant, id, *job)
		if err != nil {
			return nil, err
		}
		v.Progress = &Progress{JobID: job.ID, Operation: job.Operation, Status: job.Status, Done: job.TaskDone, Total: job.TaskTotal, Stages: stages, CountedAt: countedAt}
	}
	return v, nil
}

// progress is a job's stage view with each stage's tasks counted by status.
// A job's stages never change once it is submitted, so they are computed
// from its tasks once and kept; later views read only the tasks' statuses.
// A big job's come from its summary, counted at countedAt (jobsummary.go).
func (s *Service) progress(ctx context.Context, tenant, cluster string, job domain.Job) ([]StageProgress, *time.Time, error) {
	if job.Status == domain.JobPending {
		return nil, nil, nil // its tasks may still be being written; none has run
	}
	sum, err := s.jobSummaryOf(ctx, tenant, cluster, job)
	if err != nil {
		return nil, nil, err
	}
	if sum != nil {
		return sum.Stages, &sum.CountedAt, nil
	}
	jobID := job.ID
	key := tenant + "/" + jobID
	stages, ok := s.stages.get(key)
	if !ok {
		tasks, err := s.cfg.Engine.Tasks(ctx, tenant, jobID)
		if err != nil {
			return nil, nil, err
		}
		stages = stagesOf(tasks)
		s.stages.put(key, stages)
		return countStages(stages, statusesOf(tasks)), nil, nil
	}
	status, err := s.cfg.Engine.TaskStatuses(ctx, tenant, jobID)
	if err != nil {
		return nil, nil, err
	}
	return countStages(stages, status), nil, nil
}

func statusesOf(tasks []domain.Task) map[string]domain.TaskStatus {
	out := make(map[string]domain.TaskStatus, len(tasks))
	for _, t := range tasks {
		out[t.ID] = t.Status
	}
	return out
}

// stageProgress is the stage view of tasks, counted.
func stageProgress(tasks []domain.Task) []StageProgress {
	return countStages(stagesOf(tasks), statusesOf(tasks))
}

// stagesOf rebuilds the forward plan's stage view from stored tasks.
func stagesOf(tasks []domain.Task) []planner.Stage {
	plan := &planner.Plan{}
	for _, t := range tasks {
		if t.Rollback {
			continue
		}
		kind := planner.KindWork
		if t.Join {
			kind = planner.KindJoin
		}
		plan.Tasks = append(plan.Tasks, planner.Task{ID: t.ID, Kind: kind, NodeID: t.NodeID, Service: t.Service, Action: t.Action, DependsOn: t.DependsOn})
	}
	// Stages needs plan order (dependencies first); stored tasks come by id.
	plan.Tasks = topological(plan.Tasks)
	stages, err := plan.Stages()
	if err != nil {
		return nil
	}
	return stages
}

func countStages(stages []planner.Stage, status map[string]domain.TaskStatus) []StageProgress {
	out := make([]StageProgress, len(stages))
	for i, st := range stages {
		sp := StageProgress{Stage: i + 1, Total: len(st)}
		for _, id := range st {
			switch status[id] {
			case domain.TaskSucceeded:
				sp.Done++
			case domain.TaskRunning:
				sp.Running++
			case domain.TaskFailed:
				sp.Failed++
			}
		}
		out[i] = sp
	}
	return out
}

// stageCache keeps the stage views of recent jobs, oldest out first.
type stageCache struct {
	mu    sync.Mutex
	max   int
	order []string
	views map[string][]planner.Stage
}

func newStageCache(max int) *stageCache {
	return &stageCache{max: max, views: map[string][]planner.Stage{}}
}

func (c *stageCache) get(key string) ([]planner.Stage, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.views[key]
	return v, ok
}

func (c *stageCache) put(key string, v []planner.Stage) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.views[key]; ok {
		return
	}
	if len(c.order) >= c.max {
		delete(c.views, c.order[0])
		c.order = c.order[1:]
	}
	c.order = append(c.order, key)
	c.views[key] = v
}

// topological orders tasks so each comes after its dependencies (Kahn's
// algorithm, ties kept in input order so the result is deterministic).
func topological(tasks []planner.Task) []planner.Task {
	index := make(map[string]int, len(tasks))
	for i, t := range tasks {
		index[t.ID] = i
	}
	remaining := make([]int, len(tasks))
	dependents := make([][]int, len(tasks))
	for i, t := range tasks {
		for _, d := range t.DependsOn {
			if j, ok := index[d]; ok {
				remaining[i]++
				dependents[j] = append(dependents[j], i)
			}
		}
	}
	var queue []int
	for i := range tasks {
		if remaining[i] == 0 {
			queue = append(queue, i)
		}
	}
	out := make([]planner.Task, 0, len(tasks))
	for len(queue) > 0 {
		i := queue[0]
		queue = queue[1:]
		out = append(out, tasks[i])
		for _, j := range dependents[i] {
			if remaining[j]--; remaining[j] == 0 {
				queue = append(queue, j)
			}
		}
	}
	return out
}

// ListFilter narrows a cluster listing.
type ListFilter struct {
	Status   domain.ClusterStatus
	Template string
	Owner    string
	// Name keeps only the clusters of this name (a person's way to a
	// cluster's id).
	Name string
	// All includes TERMINATED clusters.
	All bool
}

// List returns one page of the clusters the caller may see, newest first.
// Filtering happens after the page is read, so a page may hold fewer than
// limit clusters while more remain (follow next).
func (s *Service) List(ctx context.Context, p access.Principal, f ListFilter, limit int, cursor string) ([]domain.Cluster, string, error) {
	page, next, err := s.cfg.Engine.Clusters(ctx, p.Tenant, limit, cursor, true)
	if err != nil {
		return nil, "", err
	}
	out := []domain.Cluster{}
	for _, c := range page {
		switch {
		case p.Role == domain.RoleUser && c.Owner != p.User:
		case f.Owner != "" && c.Owner != f.Owner:
		case f.Status != "" && c.Status != f.Status:
		case f.Template != "" && c.Template.Name != f.Template:
		case f.Name != "" && c.Name != f.Name:
		case f.Status == "" && !f.All && c.Status.Terminal():
		default:
			c.Resolved = nil // the listing stays small; GET the cluster for it
			if c.Drift != nil {
				// The counts, not the findings (up to 50 each): GET it.
				d := *c.Drift
				d.Findings = nil
				c.Drift = &d
			}
			out = append(out, c)
		}
	}
	return out, next, nil
}

// Live lists a tenant's clusters that are not TERMINATED: the catalog's
// ClusterSource, so an entity a live cluster uses cannot be deleted.
func (s *Service) Live(ctx context.Context, tenant string) ([]domain.Cluster, error) {
	var out []domain.Cluster
	cursor := ""
	for {
		page, next, err := s.cfg.Engine.Clusters(ctx, tenant, 1000, cursor, false)
		if err != nil {
			return nil, err
		}
		for _, c := range page {
			if !c.Status.Terminal() {
				out = append(out, c)
			}
		}
		if next == "" {
			return out, nil
		}
		cursor = next
	}
}

// JobView is a job summarized at any size: its tasks counted by status
// (forward and rollback plans apart) and by stage, and the first page of
// its tasks in view order (failed, then running, then the rest; see
// TaskOrder), as listed by Tasks. GET .../tasks pages through the rest.
type JobView struct {
	domain.Job
	TaskStatus     map[domain.TaskStatus]int `json:"taskStatus"`
	RollbackStatus map[domain.TaskStatus]int `json:"rollbackStatus,omitempty"`
	Stages         []StageProgress           `json:"stages,omitempty"`
	Tasks          []domain.Task             `json:"tasks"`
	TasksOmitted   int                       `json:"tasksOmitted,omitempty"`
	// CountedAt, set on big jobs' views, is when their tasks were counted
	// (a job summary; see jobsummary.go); a running job's view may be a few
	// seconds behind it.
	CountedAt *time.Time `json:"countedAt,omitempty"`
}

// Job returns one job of a cluster the caller may see, with its first
// FirstTasks tasks.
func (s *Service) Job(ctx context.Context, p access.Principal, cluster, jobID string) (*JobView, error) {
	job, err := s.visibleJob(ctx, p, cluster, jobID)
	if err != nil {
		return nil, err
	}
	if job.Status == domain.JobPending {
		// Its tasks may still be being written (a staged or replanned
		// submission): none has run, so none is shown, and nothing read.
		return &JobView{Job: job, TaskStatus: map[domain.TaskStatus]int{}, Tasks: []domain.Task{}}, nil
	}
	sum, err := s.jobSummaryOf(ctx, p.Tenant, cluster, job)
	if err != nil {
		return nil, err
	}
	if sum != nil {
		countedAt := sum.CountedAt
		return &JobView{Job: job, TaskStatus: sum.TaskStatus, RollbackStatus: sum.RollbackStatus, Stages: sum.Stages,
			Tasks: sum.First, TasksOmitted: sum.Tasks - len(sum.First), CountedAt: &countedAt}, nil
	}
	tasks, err := s.cfg.Engine.Tasks(ctx, p.Tenant, jobID)
	if err != nil {
		return nil, err
	}
	v := &JobView{Job: job, Stages: countStages(s.stagesFor(p.Tenant, jobID, tasks), statusesOf(tasks))}
	v.TaskStatus, v.RollbackStatus = countTasks(tasks)
	sortForView(tasks)
	first := tasks[:min(len(tasks), FirstTasks)]
	v.Tasks = make([]domain.Task, len(first))
	for i, t := range first {
		v.Tasks[i] = listed(t)
	}
	v.TasksOmitted = len(tasks) - len(first)
	return v, nil
}

// Jobs lists a cluster's jobs, newest first.
func (s *Service) Jobs(ctx context.Context, p access.Principal, cluster string, limit int, cursor string) ([]domain.Job, string, error) {
	if _, err := s.visible(ctx, p, cluster); err != nil {
		return nil, "", err
	}
	jobs, next, err := s.cfg.Engine.Jobs(ctx, p.Tenant, cluster, limit, cursor)
	if jobs == nil {
		jobs = []domain.Job{}
	}
	return jobs, next, err
}

// JobControl is what a person can do to a running or ended job.
type JobControl string

const (
	JobAbort  JobControl = "abort"
	JobPause  JobControl = "pause"
	JobResume JobControl = "resume"
	JobRetry  JobControl = "retry"
)

// ControlJob aborts, pauses, resumes or retries a job, and returns it after.
func (s *Service) ControlJob(ctx context.Context, p access.Principal, cluster, jobID string, what JobControl) (domain.Job, error) {
	if _, err := s.visible(ctx, p, cluster); err != nil {
		return domain.Job{}, err
	}
	if _, err := s.cfg.Engine.Job(ctx, p.Tenant, cluster, jobID); err != nil {
		return domain.Job{}, err
	}
	var err error
	switch what {
	case JobAbort:
		err = s.cfg.Engine.Abort(ctx, p.Tenant, cluster, jobID, p.User)
	case JobPause:
		err = s.cfg.Engine.Pause(ctx, p.Tenant, cluster, jobID)
	case JobResume:
		err = s.cfg.Engine.Resume(ctx, p.Tenant, cluster, jobID)
	case JobRetry:
		err = s.retryHolding(ctx, p.Tenant, cluster, jobID, p.User)
		var short *engine.QuotaRefusal
		if errors.As(err, &short) {
			err = s.submitError(ctx, p.Tenant, err, short.Clusters, short.Nodes)
		}
	default:
		err = fmt.Errorf("%w: %q is not abort, pause, resume or retry", engine.ErrJobState, what)
	}
	if err != nil {
		return domain.Job{}, err
	}
	return s.cfg.Engine.Job(ctx, p.Tenant, cluster, jobID)
}
