package engine

import (
	"time"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/events"
	"github.com/heddle-io/heddle/internal/store"
)

// Every status change of a job or its cluster carries its event in the
// transaction that makes it (events.Op), so the stream holds exactly the
// changes that committed. Jobs change status a handful of times each, never
// per task: the events cost nothing per task (BenchmarkNoopTasks).

// jobEvent records job's move from prev to its current status.
func jobEvent(tenant string, job domain.Job, prev domain.JobStatus, at time.Time) store.Op {
	return events.Op(tenant, events.Event{Type: events.JobStatus, At: at, Cluster: job.ClusterID, Job: job.ID,
		Operation: string(job.Operation), Status: string(job.Status), Previous: string(prev), Message: job.StatusMessage})
}

// clusterEvent records c's move from prev to its current status, by job;
// nil when the status did not change.
func clusterEvent(tenant string, c domain.Cluster, prev domain.ClusterStatus, job string, at time.Time) []store.Op {
	if c.Status == prev {
		return nil
	}
	return []store.Op{events.Op(tenant, events.Event{Type: events.ClusterStatus, At: at, Cluster: c.ID, Job: job,
		Status: string(c.Status), Previous: string(prev), Message: c.StatusMessage})}
}

// verifiedEvent records the end of a verification.
func verifiedEvent(tenant, cluster string, h *domain.ClusterHealth) store.Op {
	counts := make(map[string]int, len(h.Counts))
	for k, v := range h.Counts {
		counts[string(k)] = v
	}
	msg := ""
	if len(h.Problems) > 0 {
		p := h.Problems[0]
		msg = p.Node + "/" + p.Service + " " + string(p.Status) + ": " + p.Output
	}
	return events.Op(tenant, events.Event{Type: events.ClusterVerified, At: h.At, Cluster: cluster, Job: h.JobID,
		Operation: string(domain.OpVerify), Status: string(h.Status), Message: msg, Counts: counts})
}
