package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/store"
)

// Revisions: every job that changes a cluster's definition (create, a
// size change, services added or removed, a new config, a template sync)
// records a numbered revision in its first transaction (stepOne), so a
// revision exists exactly when the job that makes it holds the cluster,
// and the cluster record says which revision it is at.
//
// A withdrawn job (a pre-start hook refused it, or the janitor undid its
// submission) never took effect: its withdrawal, in the transaction that
// puts the cluster's definition back (failPending), marks its revision
// withdrawn and puts the cluster back at the revision before. The
// revision stays, rather than being deleted, because a number once shown
// to a user (the job's answer, the history) must never name other content
// later; a retry of the job records a new revision with the same
// definition (resubmit). A job whose rollback plan ran (a create's or an
// expand's, finish.go) did not take effect either: its end marks its
// revision withdrawn the same way; such a job is never retried.
//
// One item per revision, holding the definition without the resolved
// template (a reference and version the catalog resolves again): it is
// smaller than the cluster's own item, which holds the same config and
// the resolved template too, so it always fits DynamoDB's 400 KB.

// Revise asks stepOne to record a revision with the job.
type Revise struct {
	// Size is the cluster's node count once the job has run.
	Size int
	// RollbackOf is the revision a rollback step brings the cluster back
	// to (0: not a rollback).
	RollbackOf int64
}

func revisionKey(tenant, cluster string, n int64) store.Key {
	return store.Key{PK: store.TenantPK(tenant, "REVS#"+cluster), SK: revisionSK(n)}
}

func revisionSK(n int64) string { return fmt.Sprintf("%012d", n) }

// definitionOf is c's definition with size nodes.
func definitionOf(c domain.Cluster, size int) domain.ClusterDefinition {
	return domain.ClusterDefinition{Template: c.Template, Services: c.Services, Config: c.Config, Size: size}
}

// newRevision gives c its next revision, def, made by job, and returns it.
func newRevision(c *domain.Cluster, job *jobRecord, def domain.ClusterDefinition, rollbackOf int64, at time.Time) domain.Revision {
	r := domain.Revision{Number: c.LastRevision + 1, ClusterID: c.ID, JobID: job.ID, Operation: job.Operation,
		By: job.RequestedBy, At: at, Digest: def.Digest(), Def: def, Previous: c.Revision, RollbackOf: rollbackOf}
	c.Revision, c.LastRevision = r.Number, r.Number
	job.Revision = r.Number
	return r
}

// revisionPut writes a new revision; a number is given once.
func revisionPut(tenant string, r domain.Revision) store.Op {
	return store.Put(store.Item{Key: revisionKey(tenant, r.ClusterID, r.Number), Data: mustJSON(r)}, store.Condition{MustNotExist: true})
}

// loadRevision reads one revision item.
func (e *Engine) loadRevision(ctx context.Context, tenant, cluster string, n int64) (store.Item, domain.Revision, error) {
	it, err := e.store.Get(ctx, revisionKey(tenant, cluster, n))
	if err != nil {
		return store.Item{}, domain.Revision{}, notFound(err, fmt.Sprintf("revision %d of cluster %s", n, cluster))
	}
	var r domain.Revision
	if err := decodeInto(it, &r); err != nil {
		return store.Item{}, domain.Revision{}, err
	}
	return it, r, nil
}

// withdrawRevision marks the revision of a withdrawn job (or of one whose
// rollback plan ran: a rolled-back job cannot be retried) withdrawn and
// puts c back at the revision before it; for the transaction that ends
// the job, which holds the cluster (so nothing else writes the revision
// meanwhile).
func (e *Engine) withdrawRevision(ctx context.Context, tenant string, c *domain.Cluster, job jobRecord) ([]store.Op, error) {
	if job.Revision == 0 {
		return nil, nil
	}
	it, r, err := e.loadRevision(ctx, tenant, c.ID, job.Revision)
	if err != nil {
		return nil, fmt.Errorf("withdrawing the revision of job %s: %w", job.ID, err)
	}
	r.Withdrawn = true
	if c.Revision == r.Number {
		c.Revision = r.Previous
	}
	return []store.Op{store.Put(store.Item{Key: it.Key, Data: mustJSON(r)}, store.Condition{Version: it.Version})}, nil
}

// reviseAgain is a retry's revision: the withdrawn one's definition under
// a new number, since the retried job takes effect now.
func (e *Engine) reviseAgain(ctx context.Context, tenant string, c *domain.Cluster, job *jobRecord, at time.Time) ([]store.Op, error) {
	if job.Revision == 0 {
		return nil, nil
	}
	_, old, err := e.loadRevision(ctx, tenant, c.ID, job.Revision)
	if err != nil {
		return nil, fmt.Errorf("reading the revision of job %s: %w", job.ID, err)
	}
	r := newRevision(c, job, old.Def, old.RollbackOf, at)
	return []store.Op{revisionPut(tenant, r)}, nil
}

// Revision returns revision n of a cluster.
func (e *Engine) Revision(ctx context.Context, tenant, cluster string, n int64) (domain.Revision, error) {
	_, r, err := e.loadRevision(ctx, tenant, cluster, n)
	return r, err
}

// Revisions returns one page of a cluster's revisions, newest first.
func (e *Engine) Revisions(ctx context.Context, tenant, cluster string, limit int, cursor string) ([]domain.Revision, string, error) {
	return queryPage(ctx, e.store, revisionKey(tenant, cluster, 0).PK, store.Query{Limit: limit, Cursor: cursor, Descending: true},
		func(it store.Item) (domain.Revision, error) {
			var r domain.Revision
			err := decodeInto(it, &r)
			return r, err
		})
}
