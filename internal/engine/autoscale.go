package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/store"
)

// A cluster with an autoscale policy has an item of its own (AUTOSCALE,
// indexed in AUTOSCALE#<shard> by when the policy is next evaluated), as a
// due drift check has: the janitor reads only the due ones, so an idle
// policy costs its item and the cluster's record a pass, not a scan of the
// cluster's nodes. The item holds the cluster's override, the metrics
// pushed for it and the last decisions; the cluster service (the hook,
// Config.Autoscale) owns its body, the engine only arms and drops it.

// AutoscaleEvery is how often a policy is evaluated: a pass of the
// janitor (its schedule runs it every minute), or sooner after a push.
const AutoscaleEvery = time.Minute

func autoscalePartition(shard int) string { return fmt.Sprintf("AUTOSCALE#%d", shard) }

// AutoscaleKey is the key of the cluster's autoscale item.
func AutoscaleKey(tenant, cluster string) store.Key {
	return store.Key{PK: store.TenantPK(tenant, "AUTOSCALE"), SK: cluster}
}

// AutoscaleIndex indexes the cluster's autoscale item as due at due.
func AutoscaleIndex(tenant, cluster string, due time.Time) *store.IndexKey {
	return &store.IndexKey{Partition: autoscalePartition(shardOf(tenant + cluster)), Sort: store.SortableTime(due)}
}

// autoscaleSchedule is what a job's end does to c's autoscale item: a
// create that succeeded arms the policy its template sets, and a cluster
// that ended drops it.
func autoscaleSchedule(tenant string, c domain.Cluster, job domain.Job, succeeded bool, now time.Time) []store.Op {
	key := AutoscaleKey(tenant, c.ID)
	if c.Status.Terminal() {
		return []store.Op{store.Delete(key, store.Condition{})}
	}
	if job.Operation != domain.OpCreate || !succeeded || c.Resolved == nil || c.Resolved.Administration.Autoscale == nil {
		return nil
	}
	// An update, not a put: a push or an override made while the create
	// ran is kept (an update of a missing item creates it, with no body).
	// Due now: the first evaluation reads what was pushed meanwhile.
	return []store.Op{store.Update(key, store.Condition{}, store.Changes{Index: AutoscaleIndex(tenant, c.ID, now)})}
}

// startDueAutoscale hands a cluster whose policy is due to Config.Autoscale,
// which decides, submits the job it decides on through the path a user's
// takes, and arms the next evaluation.
func (e *Engine) startDueAutoscale(ctx context.Context, indexed store.Item, r *JanitorReport) error {
	tenant, rest, ok := store.TenantOf(indexed.PK)
	if !ok || rest != "AUTOSCALE" || e.cfg.Autoscale == nil {
		return nil
	}
	r.AutoscaleEvaluations++
	scaled, err := e.cfg.Autoscale(ctx, tenant, indexed.SK)
	if scaled {
		r.AutoscaleJobs++
	}
	if err != nil {
		return fmt.Errorf("autoscale of cluster %s: %w", indexed.SK, err)
	}
	return nil
}
