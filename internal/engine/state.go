package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/store"
)

// ErrNotFound: no such cluster, job or task in the tenant.
var ErrNotFound = errors.New("engine: not found")

// The read side of the engine: what the API shows and the cluster service
// plans from. Every read is scoped to one tenant by key.

func notFound(err error, what string) error {
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("%w: %s", ErrNotFound, what)
	}
	return err
}

// Cluster returns one cluster as stored (Version set).
func (e *Engine) Cluster(ctx context.Context, tenant, cluster string) (domain.Cluster, error) {
	_, c, err := e.loadCluster(ctx, tenant, cluster)
	return c, notFound(err, "cluster "+cluster)
}

// Clusters returns one page of the tenant's clusters, by id (ids sort by
// creation time).
func (e *Engine) Clusters(ctx context.Context, tenant string, limit int, cursor string, newestFirst bool) ([]domain.Cluster, string, error) {
	return queryPage(ctx, e.store, clusterKey(tenant, "").PK, store.Query{Limit: limit, Cursor: cursor, Descending: newestFirst}, decodeCluster)
}

// queryPage reads one page of a partition, each item decoded.
func queryPage[T any](ctx context.Context, s store.Store, pk string, q store.Query, decode func(store.Item) (T, error)) ([]T, string, error) {
	page, err := s.Query(ctx, pk, q)
	if err != nil {
		return nil, "", err
	}
	out := make([]T, 0, len(page.Items))
	for _, it := range page.Items {
		v, err := decode(it)
		if err != nil {
			return nil, "", err
		}
		out = append(out, v)
	}
	return out, page.Next, nil
}

// Nodes returns every node record of a cluster, deleted ones included, by id.
func (e *Engine) Nodes(ctx context.Context, tenant, cluster string) ([]domain.Node, error) {
	var out []domain.Node
	err := e.eachNodeItem(ctx, tenant, cluster, func(it store.Item) error {
		n, err := decodeNode(it)
		if err != nil {
			return err
		}
		out = append(out, n)
		return nil
	})
	return out, err
}

// Job returns one job of a cluster.
func (e *Engine) Job(ctx context.Context, tenant, cluster, jobID string) (domain.Job, error) {
	lj, err := e.loadJob(ctx, tenant, cluster, jobID)
	if err != nil {
		return domain.Job{}, notFound(err, "job "+jobID+" of cluster "+cluster)
	}
	return lj.job.Job, nil
}

// Jobs returns one page of a cluster's jobs, newest first.
func (e *Engine) Jobs(ctx context.Context, tenant, cluster string, limit int, cursor string) ([]domain.Job, string, error) {
	page, err := e.store.Query(ctx, jobKey(tenant, cluster, "").PK, store.Query{Limit: limit, Cursor: cursor, Descending: true})
	if err != nil {
		return nil, "", err
	}
	out := make([]domain.Job, 0, len(page.Items))
	for _, it := range page.Items {
		j, err := decodeJob(it)
		if err != nil {
			return nil, "", err
		}
		out = append(out, j.Job)
	}
	return out, page.Next, nil
}

// Tasks returns every task of a job (forward and rollback plans), in id
// order; tasks with no item yet come from their definitions (chunks.go).
func (e *Engine) Tasks(ctx context.Context, tenant, jobID string) ([]domain.Task, error) {
	var out []domain.Task
	seen := map[string]bool{}
	err := e.eachTask(ctx, tenant, jobID, func(it store.Item, t domain.Task) (bool, error) {
		t.Status = domain.TaskStatus(it.Status)
		t.Remaining = int(it.Counter(counterRemaining))
		out = append(out, t)
		seen[t.ID] = true
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	defs, err := e.deferredTasks(ctx, tenant, jobID)
	if err != nil {
		return nil, err
	}
	rollback, _, err := e.readChunks(ctx, tenant, rollbackChunks, jobID)
	if err != nil {
		return nil, err
	}
	for id, t := range defs { // the cache's map: read, never written
		if !seen[id] {
			out = append(out, t)
		}
	}
	for _, t := range rollback {
		if !seen[t.ID] {
			out = append(out, t)
		}
	}
	slices.SortFunc(out, func(a, b domain.Task) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

// SetLease moves a cluster's lease expiry under the cluster's version, so it
// cannot race a job that takes or releases the cluster meanwhile. A zero
// expiry means the cluster never expires.
func (e *Engine) SetLease(ctx context.Context, tenant string, c domain.Cluster, expires time.Time) (domain.Cluster, error) {
	c.ExpiresAt = expires
	return e.rewriteCluster(ctx, tenant, c)
}

// rewriteCluster writes c as it is, on the condition that the record is
// still the version c was read at: the edits no job makes (lease, owner)
// cannot race a job that takes or releases the cluster meanwhile.
func (e *Engine) rewriteCluster(ctx context.Context, tenant string, c domain.Cluster) (domain.Cluster, error) {
	it := clusterItem(tenant, c)
	update := store.Update(it.Key, store.Condition{Version: c.Version},
		store.Changes{Data: it.Data, Index: it.Index, ClearIndex: it.Index == nil})
	if op := commitOpOf(ctx); op != nil {
		return e.rewriteClusterWith(ctx, c, update, op(c.ID, ""))
	}
	written, err := e.store.Write(ctx, update)
	if errors.Is(err, store.ErrConditionFailed) {
		return domain.Cluster{}, fmt.Errorf("%w: cluster %s changed meanwhile; read it again", ErrClusterBusy, c.ID)
	}
	if err != nil {
		return domain.Cluster{}, err
	}
	c.Version = written.Version
	return c, nil
}

// rewriteClusterWith is rewriteCluster with the request's commit operation
// (WithCommitOp) in the same transaction: the record that the edit was
// made commits with it.
func (e *Engine) rewriteClusterWith(ctx context.Context, c domain.Cluster, update, commit store.Op) (domain.Cluster, error) {
	err := e.store.Transact(ctx, []store.Op{update, commit})
	var terr *store.TransactionError
	switch {
	case errors.As(err, &terr) && terr.Reasons[1] != nil:
		return domain.Cluster{}, ErrCommitRefused
	case errors.Is(err, store.ErrConditionFailed):
		return domain.Cluster{}, fmt.Errorf("%w: cluster %s changed meanwhile; read it again", ErrClusterBusy, c.ID)
	case err != nil:
		return domain.Cluster{}, err
	}
	c.Version++ // every write adds one to an item's version
	return c, nil
}

// TaskStatuses returns the status of every task of a job by task id. It
// takes each item's status attribute and decodes no task body, which keeps
// a progress view of a large job cheap (the query still reads whole items;
// the store has no projection).
func (e *Engine) TaskStatuses(ctx context.Context, tenant, jobID string) (map[string]domain.TaskStatus, error) {
	out := map[string]domain.TaskStatus{}
	cursor := ""
	for {
		page, err := e.store.Query(ctx, store.TenantPK(tenant, "TASKS#"+jobID), store.Query{Limit: store.MaxPageSize, Cursor: cursor})
		if err != nil {
			return nil, err
		}
		for _, it := range page.Items {
			out[it.Key.SK] = domain.TaskStatus(it.Status)
		}
		if page.Next == "" {
			return out, nil
		}
		cursor = page.Next
	}
}

// NodesPage returns one page of a cluster's node records, deleted ones
// included, by id.
func (e *Engine) NodesPage(ctx context.Context, tenant, cluster string, limit int, cursor string) ([]domain.Node, string, error) {
	return queryPage(ctx, e.store, nodeKey(tenant, cluster, "").PK, store.Query{Limit: limit, Cursor: cursor}, decodeNode)
}
