package cluster

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"

	"github.com/heddle-io/heddle/internal/access"
	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/engine"
	"github.com/heddle-io/heddle/planner"
)

// Views of large clusters and jobs: a cluster of 10,000 nodes or a job of
// 40,000 tasks is answered as counts and a first page, and its nodes and
// tasks page through routes of their own (invariant 11).

// FirstNodes and FirstTasks bound the nodes a cluster view and the tasks a
// job view carry; both views also count all of them.
// PreviewItems bounds each list of a dry run's preview (planner.Bounded).
const (
	FirstNodes   = engine.FirstNodes
	FirstTasks   = 100
	PreviewItems = 100
)

// LayoutGroup is how many live nodes share one layout.
type LayoutGroup struct {
	domain.NodeLayout
	Count int `json:"count"`
}

// summarize fills the view's counts and first nodes from the live nodes (by
// Num).
func (v *View) summarize(live []domain.Node) {
	v.NodeStatus = map[domain.NodeStatus]int{}
	index := map[string]int{}
	for _, n := range live {
		v.NodeStatus[n.Status]++
		key := n.HardwareType + "\x00" + n.ImageType + "\x00" + strings.Join(n.Services, "\x00")
		i, ok := index[key]
		if !ok {
			i = len(v.Layout)
			index[key] = i
			v.Layout = append(v.Layout, LayoutGroup{NodeLayout: n.NodeLayout})
		}
		v.Layout[i].Count++
	}
	if v.Layout == nil {
		v.Layout = []LayoutGroup{}
	}
	v.Nodes = live[:min(len(live), FirstNodes)]
	if v.Nodes == nil {
		v.Nodes = []domain.Node{}
	}
	v.NodesOmitted = len(live) - len(v.Nodes)
}

// nodeView fills the view's node counts and first nodes: from the node
// summary the engine wrote when the latest job started or ended, when it
// holds for that job as it is now, else by reading every node. Nodes are
// read after the job, so the statuses a job's end writes are then in.
func (s *Service) nodeView(ctx context.Context, tenant string, v *View, job *domain.Job) error {
	if job != nil {
		sum, ok, err := s.cfg.Engine.NodeSummaryFor(ctx, tenant, v.ID, *job)
		if err != nil {
			return err
		}
		if ok {
			first, err := s.cfg.Engine.NodesByID(ctx, tenant, v.ID, sum.First)
			if err != nil {
				return err
			}
			v.NodeStatus = sum.Status
			v.Layout = make([]LayoutGroup, len(sum.Layout))
			for i, g := range sum.Layout {
				v.Layout[i] = LayoutGroup{NodeLayout: g.NodeLayout, Count: g.Count}
			}
			v.Nodes = first
			v.NodesOmitted = sum.Live - len(first)
			return nil
		}
	}
	nodes, err := s.cfg.Engine.Nodes(ctx, tenant, v.ID)
	if err != nil {
		return err
	}
	v.summarize(liveNodes(nodes))
	return nil
}

// NodeFilter narrows a node listing.
type NodeFilter struct {
	Status domain.NodeStatus
	// Deleted includes nodes that are gone (DELETED), left out otherwise.
	Deleted bool
}

// Nodes returns one page of a cluster's nodes, by id. Filtering happens
// after the page is read, so a page may hold fewer than limit nodes while
// more remain (follow next).
func (s *Service) Nodes(ctx context.Context, p access.Principal, cluster string, f NodeFilter, limit int, cursor string) ([]domain.Node, string, error) {
	if _, err := s.visible(ctx, p, cluster); err != nil {
		return nil, "", err
	}
	page, next, err := s.cfg.Engine.NodesPage(ctx, p.Tenant, cluster, limit, cursor)
	if err != nil {
		return nil, "", err
	}
	out := make([]domain.Node, 0, len(page))
	for _, n := range page {
		switch {
		case f.Status != "" && n.Status != f.Status:
		case f.Status == "" && !f.Deleted && n.Status == domain.NodeDeleted:
		default:
			out = append(out, n)
		}
	}
	return out, next, nil
}

// TaskFilter narrows a task listing; zero fields match every task.
type TaskFilter struct {
	Status  domain.TaskStatus
	Node    string
	Service string
	Action  domain.Action
	// Stage is a stage of the job's stage view (from 1); rollback tasks
	// belong to none.
	Stage int
	// Rollback, when set, keeps only the rollback plan's tasks (true) or
	// only the forward plan's (false).
	Rollback *bool
}

func (f TaskFilter) matches(t domain.Task, stage map[string]int) bool {
	switch {
	case f.Status != "" && t.Status != f.Status,
		f.Node != "" && t.NodeID != f.Node,
		f.Service != "" && t.Service != f.Service,
		f.Action != "" && t.Action != f.Action,
		f.Stage != 0 && stage[t.ID] != f.Stage,
		f.Rollback != nil && t.Rollback != *f.Rollback:
		return false
	}
	return true
}

// Tasks returns one page of a job's tasks that match f, in view order
// (TaskOrder), as listings show them (see listed). The cursor is the
// position of the last task of the previous page; a task whose status
// changes between pages may move past it or back before it, so a listing
// of a running job is a sequence of fresh views, not one snapshot.
func (s *Service) Tasks(ctx context.Context, p access.Principal, cluster, jobID string, f TaskFilter, limit int, after string) ([]domain.Task, string, error) {
	job, err := s.visibleJob(ctx, p, cluster, jobID)
	if err != nil {
		return nil, "", err
	}
	if job.Status == domain.JobPending {
		return []domain.Task{}, "", nil // its tasks may still be being written; none has run
	}
	sum, err := s.jobSummaryOf(ctx, p.Tenant, cluster, job)
	if err != nil {
		return nil, "", err
	}
	if sum != nil {
		if after == "" && f == (TaskFilter{}) && limit <= FirstTasks {
			// The first page, unfiltered: the summary holds it.
			out := sum.First[:min(limit, len(sum.First))]
			next := ""
			if len(out) < sum.Tasks && len(out) > 0 {
				next = TaskOrder(out[len(out)-1])
			}
			return out, next, nil
		}
		// Any other page of a big job: from its task index
		// (taskpages.go), unless it was submitted without one.
		out, next, err := s.indexedTasks(ctx, p.Tenant, jobID, sum, f, limit, after)
		if !errors.Is(err, engine.ErrNoTaskIndex) {
			return out, next, err
		}
	}
	tasks, err := s.cfg.Engine.Tasks(ctx, p.Tenant, jobID)
	if err != nil {
		return nil, "", err
	}
	var stage map[string]int
	if f.Stage != 0 {
		stage = map[string]int{}
		for i, st := range s.stagesFor(p.Tenant, jobID, tasks) {
			for _, id := range st {
				stage[id] = i + 1
			}
		}
	}
	sortForView(tasks)
	out := []domain.Task{}
	next := ""
	for _, t := range tasks {
		if after != "" && TaskOrder(t) <= after {
			continue
		}
		if !f.matches(t, stage) {
			continue
		}
		if len(out) == limit {
			next = TaskOrder(out[len(out)-1])
			break
		}
		out = append(out, listed(t))
	}
	return out, next, nil
}

// Task returns one task of a job whole: every attempt kept, with its
// output tails. It reads the job and that task only.
func (s *Service) Task(ctx context.Context, p access.Principal, cluster, jobID, taskID string) (domain.Task, error) {
	if _, err := s.visibleJob(ctx, p, cluster, jobID); err != nil {
		return domain.Task{}, err
	}
	return s.cfg.Engine.Task(ctx, p.Tenant, jobID, taskID)
}

// visibleJob reads a job of a cluster the caller may see.
func (s *Service) visibleJob(ctx context.Context, p access.Principal, cluster, jobID string) (domain.Job, error) {
	if _, err := s.visible(ctx, p, cluster); err != nil {
		return domain.Job{}, err
	}
	return s.cfg.Engine.Job(ctx, p.Tenant, cluster, jobID)
}

// statusRank puts what needs a person's eyes first: failed tasks, then
// running ones, then every other task. Failed and running tasks are few
// at any time, so a big job's views read them apart (the job summary's
// lead) and page the rest in the task index's key order (taskpages.go).
func statusRank(s domain.TaskStatus) int {
	switch s {
	case domain.TaskFailed:
		return 0
	case domain.TaskRunning:
		return 1
	}
	return 2
}

// TaskOrder is a task's place in a job's view: failed tasks first, then
// running, then the rest; the forward plan before the rollback plan; then
// by id. It compares as a string: a status digit, then the task's key in
// the job's task index (engine.IndexKeyOf).
func TaskOrder(t domain.Task) string {
	return strconv.Itoa(statusRank(t.Status)) + engine.IndexKeyOf(t.Rollback, t.ID)
}

// sortForView sorts tasks in view order, each task's place computed once
// (a 10,000-node create's job has some 55,000 tasks).
func sortForView(tasks []domain.Task) {
	type placed struct {
		order string
		task  domain.Task
	}
	all := make([]placed, len(tasks))
	for i, t := range tasks {
		all[i] = placed{TaskOrder(t), t}
	}
	slices.SortFunc(all, func(a, b placed) int { return cmp.Compare(a.order, b.order) })
	for i, p := range all {
		tasks[i] = p.task
	}
}

// stagesFor is the job's stage view, computed once per job (its stages
// never change) and kept in the service's cache.
func (s *Service) stagesFor(tenant, jobID string, tasks []domain.Task) []planner.Stage {
	key := tenant + "/" + jobID
	stages, ok := s.stages.get(key)
	if !ok {
		stages = stagesOf(tasks)
		s.stages.put(key, stages)
	}
	return stages
}

// listed is a task as listings show it: without its attempts' output tails
// and its dependency lists (a join's may name thousands of tasks), which
// GET of the task answers. A page so stays near 1 KB a task.
func listed(t domain.Task) domain.Task {
	t.DependsOn, t.Dependents = nil, nil
	if len(t.Attempts) > 0 {
		attempts := make([]domain.TaskAttempt, len(t.Attempts))
		for i, a := range t.Attempts {
			a.Stdout, a.Stderr = "", ""
			attempts[i] = a
		}
		t.Attempts = attempts
	}
	return t
}
