package cluster

import (
	"context"
	"time"

	"github.com/heddle-io/heddle/internal/access"
	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/planner"
)

// JobGraph is a job's task graph summarised by stage, service and action
// (planner.GroupGraph), each group with its tasks counted by status, and the
// critical path as the job ran: a task that ran weighs what it took (or has
// taken so far, while it runs), one that has not the plan's estimate. It is
// the forward plan's graph, or the rollback plan's when rollback is set.
// Whatever the job's size the answer is a few kilobytes; reading it reads
// every task of the job, as a page of a filtered task listing does.
func (s *Service) JobGraph(ctx context.Context, p access.Principal, cluster, jobID string, rollback bool) (*planner.GroupGraph, error) {
	job, err := s.visibleJob(ctx, p, cluster, jobID)
	if err != nil {
		return nil, err
	}
	if job.Status == domain.JobPending {
		// Its tasks may still be being written: nothing to draw yet.
		return &planner.GroupGraph{Groups: []planner.TaskGroup{}, Edges: []planner.GroupEdge{}, Path: planner.GraphPath{Tasks: []string{}}}, nil
	}
	tasks, err := s.cfg.Engine.Tasks(ctx, p.Tenant, jobID)
	if err != nil {
		return nil, err
	}
	return jobGraph(tasks, rollback, s.cfg.Clock(), s.cfg.Estimates)
}

// jobGraph is JobGraph on the job's tasks: a task that ran weighs ranFor,
// one that has not est.
func jobGraph(tasks []domain.Task, rollback bool, now time.Time, est planner.Estimator) (*planner.GroupGraph, error) {
	plan := &planner.Plan{}
	status := map[string]domain.TaskStatus{}
	took := map[string]time.Duration{}
	for _, t := range tasks {
		if t.Rollback != rollback {
			continue
		}
		status[t.ID] = t.Status
		if d, ok := ranFor(t, now); ok {
			took[t.ID] = d
		}
	}
	for _, t := range tasks {
		if t.Rollback != rollback {
			continue
		}
		kind := planner.KindWork
		if t.Join {
			kind = planner.KindJoin
		}
		deps := make([]string, 0, len(t.DependsOn))
		for _, d := range t.DependsOn {
			if _, ok := status[d]; ok { // a rollback plan stands alone
				deps = append(deps, d)
			}
		}
		plan.Tasks = append(plan.Tasks, planner.Task{ID: t.ID, Kind: kind, NodeID: t.NodeID, Service: t.Service, Action: t.Action,
			Timeout: t.Timeout, MaxAttempts: t.MaxAttempts, DependsOn: deps})
	}
	plan.Tasks = topological(plan.Tasks)
	weigh := func(t *planner.Task) time.Duration {
		if d, ok := took[t.ID]; ok {
			return d
		}
		return est(t)
	}
	return plan.GroupGraph(weigh, func(id string) domain.TaskStatus { return status[id] })
}

// ranFor is how long a task has run: from its first attempt's start to its
// last attempt's end, or to now while that attempt runs.
func ranFor(t domain.Task, now time.Time) (time.Duration, bool) {
	if len(t.Attempts) == 0 || t.Attempts[0].StartedAt.IsZero() {
		return 0, false
	}
	end := t.Attempts[len(t.Attempts)-1].EndedAt
	if end.IsZero() {
		end = now
	}
	return max(end.Sub(t.Attempts[0].StartedAt), 0), true
}
