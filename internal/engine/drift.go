package engine

import (
	"context"
	"strings"
	"time"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/events"
	"github.com/heddle-io/heddle/internal/store"
	"github.com/heddle-io/heddle/planner"
)

// A drift check (domain.OpDrift) is a read-only job like a verification:
// it holds the cluster's lock, its tasks run on the tenant's workers with
// every bound a task has, and none of them fails the job. Its tasks are a
// probe per node (is the machine there and the same one: the provider's
// view, the pinned host key, the boot id) and a check per service heddle
// recorded running or stopped (planner.Drift). Config drift needs no node:
// the cluster service computes it when it submits the job and hands the
// findings over in the job's success effect (Effect.Drift). The job's end
// sums everything up into the cluster's Drift in the transaction that
// releases the lock, as a verification does with Health.

// probeResult turns a probe's answer into a successful attempt: a node the
// probe could not reach is what a drift check is there to find, not a
// reason to fail the job.
func probeResult(res Result) Result {
	if res.Err != nil {
		if res.Drift == "" {
			res.Drift = domain.DriftUnreachable
		}
		res.Note = res.Err.Error()
		res.Err = nil
	}
	return res
}

// driftOf reads a drift job's tasks and sums them up with the config
// findings the job carries; prev (the cluster's last drift record) gives
// findings seen before their first time.
func (e *Engine) driftOf(ctx context.Context, tenant string, job jobRecord, at time.Time, prev *domain.ClusterDrift) (*domain.ClusterDrift, error) {
	findings := append([]domain.DriftFinding(nil), job.OnSuccess.Drift...)
	nodes := 0
	err := e.eachTask(ctx, tenant, job.ID, func(it store.Item, t domain.Task) (bool, error) {
		if domain.TaskStatus(it.Status) != domain.TaskSucceeded || len(t.Attempts) == 0 {
			if t.Action == domain.ActionProbe {
				nodes++
			}
			return true, nil // never ran: nothing is known
		}
		last := t.Attempts[len(t.Attempts)-1]
		switch t.Action {
		case domain.ActionProbe:
			nodes++
			if last.Drift != "" {
				findings = append(findings, domain.DriftFinding{Node: t.NodeID, Kind: last.Drift, Detail: driftDetail(last)})
			}
		case domain.ActionCheck:
			stopped := strings.HasSuffix(t.ID, planner.DriftStoppedSuffix)
			switch {
			case !stopped && last.Health == domain.CheckFailing:
				findings = append(findings, domain.DriftFinding{Node: t.NodeID, Service: t.Service, Kind: domain.DriftServiceDown, Detail: healthOutput(last)})
			case stopped && last.Health == domain.CheckHealthy:
				findings = append(findings, domain.DriftFinding{Node: t.NodeID, Service: t.Service, Kind: domain.DriftServiceRunning,
					Detail: "heddle stopped it, and its check passes"})
			}
		}
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	return domain.SumDrift(job.ID, at, nodes, findings, prev), nil
}

// driftDetail is what a probe said about its finding.
func driftDetail(a domain.TaskAttempt) string {
	if a.Error != "" {
		return a.Error
	}
	return strings.TrimSpace(a.Stdout)
}

// driftEvent records the end of a drift check: its counts, and the first
// finding as the message.
func driftEvent(tenant, cluster string, d *domain.ClusterDrift) store.Op {
	counts := make(map[string]int, len(d.Counts))
	for k, v := range d.Counts {
		counts[string(k)] = v
	}
	status, msg := "clean", ""
	if d.Drifted > 0 {
		status = "drifted"
		f := d.Findings[0]
		msg = f.Node
		if f.Service != "" {
			msg += "/" + f.Service
		}
		msg += " " + string(f.Kind)
		if f.Detail != "" {
			msg += ": " + f.Detail
		}
	}
	return events.Op(tenant, events.Event{Type: events.ClusterDrift, At: d.At, Cluster: cluster, Job: d.JobID,
		Operation: string(domain.OpDrift), Status: status, Message: msg, Counts: counts})
}
