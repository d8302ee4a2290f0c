package engine

import (
	"context"
	"errors"
	"fmt"
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

// A due drift check is an item of its own per cluster (DRIFTDUE, indexed
// in DRIFT#<shard> by when it is due), as a due verification is (see
// health.go). The end of a create that succeeded, and of every drift
// check, makes the next one due a period later when the cluster's
// resolved template sets one (administration.driftEvery, or its provider
// type's default); the janitor submits due ones to Config.Drift.
func driftPartition(shard int) string { return fmt.Sprintf("DRIFT#%d", shard) }

func driftDueKey(tenant, cluster string) store.Key {
	return store.Key{PK: store.TenantPK(tenant, "DRIFTDUE"), SK: cluster}
}

// driftEvery is the cluster's drift period; 0: no periodic checks.
func driftEvery(c domain.Cluster) time.Duration {
	if c.Resolved == nil || c.Resolved.Administration.DriftEvery == nil {
		return 0
	}
	return c.Resolved.Administration.DriftEvery.Std()
}

// driftSchedule is what a job's end does to c's due drift check.
func driftSchedule(tenant string, c domain.Cluster, job domain.Job, succeeded bool, now time.Time) []store.Op {
	key := driftDueKey(tenant, c.ID)
	if c.Status.Terminal() {
		return []store.Op{store.Delete(key, store.Condition{})}
	}
	every := driftEvery(c)
	if every <= 0 || !(job.Operation == domain.OpDrift || job.Operation == domain.OpCreate && succeeded) {
		return nil
	}
	return []store.Op{store.Put(store.Item{Key: key, Data: mustJSON(map[string]string{"cluster": c.ID}),
		Index: &store.IndexKey{Partition: driftPartition(shardOf(tenant + c.ID)), Sort: store.SortableTime(now.Add(every))}}, store.Condition{})}
}

// ErrNothingToCheck: the cluster cannot be checked for drift now (not
// created yet, no active node); its due check is dropped.
var ErrNothingToCheck = errors.New("engine: the cluster has nothing to check for drift")

// startDueDrift hands a cluster whose drift check is due to Config.Drift.
func (e *Engine) startDueDrift(ctx context.Context, indexed store.Item, r *JanitorReport) error {
	return e.startDue(ctx, indexed, "DRIFTDUE", func(c domain.Cluster) bool { return driftEvery(c) > 0 }, e.cfg.Drift, &r.DriftChecks)
}

// startDueRepair hands a cluster whose repair is due to Config.Repair.
func (e *Engine) startDueRepair(ctx context.Context, indexed store.Item, r *JanitorReport) error {
	return e.startDue(ctx, indexed, "REPAIRDUE", func(c domain.Cluster) bool { return repairAuto(c) }, e.cfg.Repair, &r.Repairs)
}

// startDue hands a cluster whose due item (of kind) is due to hook, unless
// a job holds it (a later pass looks again), then drops the item on the
// version it read; a cluster gone, or no longer wanting it (wanted), just
// has the item dropped.
func (e *Engine) startDue(ctx context.Context, indexed store.Item, kind string, wanted func(domain.Cluster) bool,
	hook func(context.Context, string, domain.Cluster) error, started *int) error {
	tenant, rest, ok := store.TenantOf(indexed.PK)
	if !ok || rest != kind {
		return nil
	}
	it, err := e.store.Get(ctx, indexed.Key)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if it.Index == nil || it.Index.Sort > store.SortableTime(e.now()) {
		return nil
	}
	drop := func() error {
		_, err := e.store.Write(ctx, store.Delete(it.Key, store.Condition{Version: it.Version}))
		if errors.Is(err, store.ErrConditionFailed) {
			return nil
		}
		return err
	}
	_, c, err := e.loadCluster(ctx, tenant, it.SK)
	if errors.Is(err, store.ErrNotFound) {
		return drop()
	}
	if err != nil {
		return err
	}
	if c.Status.Terminal() || !wanted(c) {
		return drop()
	}
	if c.ActiveJobID != "" || hook == nil {
		return nil
	}
	// Read again now that the cluster is seen free: a job of this kind
	// that ended since the first read dropped the item with the lock, and
	// must not be followed by another right away.
	again, err := e.store.Get(ctx, indexed.Key)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if again.Version != it.Version {
		return nil // changed meanwhile: a later pass looks at it as it is now
	}
	err = hook(ctx, tenant, c)
	switch {
	case errors.Is(err, ErrClusterBusy):
		return nil
	case err != nil && !errors.Is(err, ErrNothingToCheck) && !errors.Is(err, ErrNothingToVerify):
		return fmt.Errorf("%s of cluster %s: %w", strings.ToLower(strings.TrimSuffix(kind, "DUE")), c.ID, err)
	}
	if err == nil {
		*started++
	}
	return drop()
}

// A due repair (REPAIRDUE, indexed in REPAIR#<shard>) is written by the end
// of a drift check that found drift on a cluster whose template asks for
// automatic repair; the janitor hands it to Config.Repair, which applies
// the safety caps (cluster service, repair.go).
func repairPartition(shard int) string { return fmt.Sprintf("REPAIR#%d", shard) }

func repairDueKey(tenant, cluster string) store.Key {
	return store.Key{PK: store.TenantPK(tenant, "REPAIRDUE"), SK: cluster}
}

func repairAuto(c domain.Cluster) bool {
	return c.Resolved != nil && domain.RepairModeOf(c.Resolved.Administration.Repair) == domain.RepairAuto
}

// repairSchedule makes a repair due now after a drift check that found
// drift, when the cluster's template asks for automatic repair.
func repairSchedule(tenant string, c domain.Cluster, d *domain.ClusterDrift, now time.Time) []store.Op {
	if d == nil || d.Drifted == 0 || c.Status.Terminal() || !repairAuto(c) {
		return nil
	}
	return []store.Op{store.Put(store.Item{Key: repairDueKey(tenant, c.ID), Data: mustJSON(map[string]string{"cluster": c.ID}),
		Index: &store.IndexKey{Partition: repairPartition(shardOf(tenant + c.ID)), Sort: store.SortableTime(now)}}, store.Condition{})}
}
