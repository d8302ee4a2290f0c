package cluster

import (
	"context"
	"strings"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/engine"
	"github.com/heddle-io/heddle/planner"
)

// Pages of a big job's tasks (one with a job summary) are read without
// reading the job's other tasks, whatever the page and the filter:
//
//   - first the summary's lead, its failed and running tasks as counted
//     (a few seconds behind at most, like the summary), each re-read so
//     that it shows as it is now;
//   - then the job's task index (engine/taskindex.go), written once at
//     submission, in key order (forward plan, then rollback plan, each by
//     id), leaving out the lead's tasks. The index holds each task's node,
//     service, action and stage, so those filters are applied before any
//     task is read; the tasks kept are read as they are now, in one range
//     query or one read each.
//
// The cursor is the position of the page's last task in the view order
// (TaskOrder): a status digit below 2 for the lead, 2 and an index key for
// the rest. A filter on status is applied to tasks as they are now, after
// they are read, so a page looks at most maxScanTasks tasks of the index:
// a page of a rare status may hold fewer tasks than asked (even none)
// while more follow; follow nextCursor. A filter on FAILED or RUNNING
// reads the lead only: those tasks are few, and the lead holds them as of
// the summary (a task that failed since shows once the summary is counted
// again, a few seconds later).

// maxScanTasks bounds the index entries one page looks at: some eight
// index items of 25 KB. A filter that matches rarely gives
// short pages rather than slow ones.
const maxScanTasks = 2000

// indexedTasks is Tasks for a job with a summary; engine.ErrNoTaskIndex
// when the job has no task index.
func (s *Service) indexedTasks(ctx context.Context, tenant, jobID string, sum *jobSummary, f TaskFilter, limit int, after string) ([]domain.Task, string, error) {
	out := []domain.Task{}
	inLead := make(map[string]bool, len(sum.Lead))
	for i := range sum.Lead {
		l := &sum.Lead[i]
		l.Rollback = strings.HasPrefix(l.Order[1:], "1")
		inLead[l.ID] = true
	}
	if after == "" || after[0] < '2' {
		var wanted []engine.TaskEntry
		for _, l := range sum.Lead {
			if l.Order > after && f.keeps(l.TaskEntry) {
				wanted = append(wanted, l.TaskEntry)
			}
		}
		orderOf := make(map[string]string, len(sum.Lead))
		for _, l := range sum.Lead {
			orderOf[l.ID] = l.Order
		}
		// Read them a page at a time: a status filter may drop some.
		for len(wanted) > 0 && len(out) < limit {
			batch := wanted[:min(limit-len(out), len(wanted))]
			wanted = wanted[len(batch):]
			tasks, err := s.cfg.Engine.TasksOf(ctx, tenant, jobID, batch)
			if err != nil {
				return nil, "", err
			}
			for _, t := range tasks {
				if f.Status == "" || t.Status == f.Status {
					out = append(out, listed(t))
				}
			}
		}
		if len(out) == limit {
			if len(wanted) == 0 && (f.Status == domain.TaskFailed || f.Status == domain.TaskRunning) {
				return out, "", nil
			}
			return out, orderOf[out[len(out)-1].ID], nil
		}
		after = ""
	} else {
		after = after[1:]
	}
	if f.Status == domain.TaskFailed || f.Status == domain.TaskRunning {
		return out, "", nil
	}
	budget := maxScanTasks
	for _, r := range f.ranges() {
		from := max(after, r.after)
		if r.until != "" && from >= r.until {
			continue
		}
		for {
			if len(out) == limit || budget == 0 {
				// Full, or looked at enough: more may follow.
				return out, "2" + from, nil
			}
			entries, last, looked, more, err := s.cfg.Engine.TaskIndex(ctx, tenant, jobID, from, r.until, limit-len(out), budget,
				func(en engine.TaskEntry) bool { return !inLead[en.ID] && f.keeps(en) })
			if err != nil {
				return nil, "", err
			}
			tasks, err := s.cfg.Engine.TasksOf(ctx, tenant, jobID, entries)
			if err != nil {
				return nil, "", err
			}
			for _, t := range tasks {
				if f.Status == "" || t.Status == f.Status {
					out = append(out, listed(t))
				}
			}
			budget -= looked
			if !more {
				break // this range is done
			}
			from = last
		}
	}
	return out, "", nil
}

// keyRange is a stretch of the task index: keys after after, up to until
// ("" for the end).
type keyRange struct{ after, until string }

// ranges are the stretches of the task index that may hold tasks f keeps:
// a node's tasks have ids that start with the node's id and a '/'.
func (f TaskFilter) ranges() []keyRange {
	forward, rollback := keyRange{"", "1"}, keyRange{"1", ""}
	if f.Node != "" {
		// '0' is the byte after '/': the range holds exactly the ids
		// that start with node + "/".
		forward = keyRange{engine.IndexKeyOf(false, f.Node+"/"), engine.IndexKeyOf(false, f.Node+"0")}
		rollback = keyRange{engine.IndexKeyOf(true, planner.RollbackPrefix+f.Node+"/"), engine.IndexKeyOf(true, planner.RollbackPrefix+f.Node+"0")}
	}
	switch {
	case f.Rollback == nil:
		return []keyRange{forward, rollback}
	case *f.Rollback:
		return []keyRange{rollback}
	}
	return []keyRange{forward}
}

// keeps reports whether f keeps a task with entry en, status aside.
func (f TaskFilter) keeps(en engine.TaskEntry) bool {
	switch {
	case f.Node != "" && en.Node != f.Node,
		f.Service != "" && en.Service != f.Service,
		f.Action != "" && en.Action != f.Action,
		f.Stage != 0 && en.Stage != f.Stage,
		f.Rollback != nil && en.Rollback != *f.Rollback:
		return false
	}
	return true
}
