package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/store"
)

// A cluster's name is unique among the tenant's clusters that are not
// TERMINATED. Each such cluster holds a name reservation, an item keyed by
// the name (T#<tenant>#CLUSTERNAMES / <name>) whose status is the cluster's
// id. It is a reservation like the quota and goes with the same
// transactions: a create's first transaction claims it (it must not
// exist), the transaction that makes the cluster TERMINATED (a delete's or
// a rolled-back create's end, a withdrawn create) releases it, and a retry
// that brings a TERMINATED cluster back claims it again. Two creates of one
// name race on one conditional put: exactly one commits.
//
// Clusters created before reservations existed have none. The first
// create in a tenant gives each live one its reservation
// (ReserveOldNames), and a release deletes the item only when it is the
// cluster's own, so no migration is needed.

// ErrNameTaken: another cluster of the tenant that is not TERMINATED has
// the name.
var ErrNameTaken = errors.New("engine: another cluster of the tenant has this name")

// NameTakenError is ErrNameTaken with the name and, when known, the
// cluster that holds it.
type NameTakenError struct {
	Name string
	By   string
}

func (e *NameTakenError) Error() string {
	if e.By == "" {
		return fmt.Sprintf("another cluster is named %s", e.Name)
	}
	return fmt.Sprintf("cluster %s is named %s", e.By, e.Name)
}

func (e *NameTakenError) Is(target error) bool { return target == ErrNameTaken }

func nameKey(tenant, name string) store.Key {
	return store.Key{PK: store.TenantPK(tenant, "CLUSTERNAMES"), SK: name}
}

// claimName is the write that reserves name for cluster: it fails when any
// cluster holds it.
func claimName(tenant, name, cluster string) store.Op {
	return store.Put(store.Item{Key: nameKey(tenant, name), Status: cluster}, store.Condition{MustNotExist: true})
}

// nameHolder is the cluster a failed claim found holding the name, when
// the store said.
func nameHolder(reason error) string {
	var cerr *store.ConditionError
	if errors.As(reason, &cerr) && cerr.Current != nil {
		return cerr.Current.Status
	}
	return ""
}

// releaseName returns the writes that give c's name back, for the
// transaction that makes c TERMINATED: the reservation's delete when it is
// c's. When there is none (a cluster from before reservations), a check
// that there still is none: a create reserving the names of such clusters
// meanwhile (ReserveOldNames) makes that transaction fail and its caller
// read again, so no reservation outlives its cluster. A reservation of
// another cluster (one an older release created beside c mid-deploy) is
// left alone.
func (e *Engine) releaseName(ctx context.Context, tenant string, c domain.Cluster) ([]store.Op, error) {
	if c.Name == "" {
		return nil, nil
	}
	key := nameKey(tenant, c.Name)
	it, err := e.store.Get(ctx, key)
	if errors.Is(err, store.ErrNotFound) {
		return []store.Op{store.Check(key, store.Condition{MustNotExist: true})}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the name reservation of cluster %s: %w", c.ID, err)
	}
	if it.Status != c.ID {
		return nil, nil
	}
	return []store.Op{store.Delete(key, store.Condition{StatusIn: []string{c.ID}})}, nil
}

// counterNamesReserved, on the tenant's item, says every live cluster of
// the tenant made before name reservations has been given one.
const counterNamesReserved = "namesReserved"

// ReserveOldNames gives every live cluster of the tenant that holds no
// name reservation (one made before they existed) its reservation, once
// per tenant, and returns the id of the live cluster named name, or "",
// among those. A create calls it before it submits; after the first pass
// the tenant's item says there is nothing left to do and it costs one
// read. Each reservation is written with a check that its cluster is
// unchanged (not ended meanwhile); two old clusters of one name keep one
// reservation between them, and apply asks to delete one. A tenant update
// that rewrites the tenant's item drops the mark: the next create passes
// again, finding nothing to do.
func (e *Engine) ReserveOldNames(ctx context.Context, tenant, name string) (string, error) {
	if err := e.dropStaleName(ctx, tenant, name); err != nil {
		return "", err
	}
	ten, err := e.store.Get(ctx, tenantKey(tenant))
	if err != nil {
		return "", fmt.Errorf("reading tenant %s: %w", tenant, err)
	}
	if ten.Counter(counterNamesReserved) > 0 {
		return "", nil
	}
	holder, incomplete := "", false
	cursor := ""
	for {
		page, err := e.store.Query(ctx, clusterKey(tenant, "").PK, store.Query{Limit: store.MaxPageSize, Cursor: cursor})
		if err != nil {
			return "", fmt.Errorf("reading the clusters of %s: %w", tenant, err)
		}
		for _, it := range page.Items {
			if domain.ClusterStatus(it.Status).Terminal() {
				continue
			}
			c, err := decodeCluster(it)
			if err != nil {
				return "", err
			}
			if c.Name == "" {
				continue
			}
			if c.Name == name && holder == "" {
				holder = c.ID
			}
			err = e.store.Transact(ctx, []store.Op{
				claimName(tenant, c.Name, c.ID),
				store.Check(it.Key, store.Condition{Version: it.Version}),
			})
			var terr *store.TransactionError
			switch {
			case errors.As(err, &terr) && terr.Reasons[1] != nil:
				// The cluster changed (a job moved it): leave the pass
				// unmarked, so the next create looks again.
				incomplete = true
			case err != nil && !errors.Is(err, store.ErrConditionFailed):
				return "", fmt.Errorf("reserving the name of cluster %s: %w", c.ID, err)
			}
			// Otherwise reserved now, or already (its own, or a
			// same-named old cluster's).
		}
		if page.Next == "" {
			break
		}
		cursor = page.Next
	}
	if incomplete {
		return holder, nil
	}
	_, err = e.store.Write(ctx, store.Update(tenantKey(tenant), store.Condition{MustExist: true},
		store.Changes{Set: map[string]int64{counterNamesReserved: 1}}))
	if err != nil {
		return "", fmt.Errorf("marking the names of %s reserved: %w", tenant, err)
	}
	return holder, nil
}

// dropStaleName deletes the reservation of name when the cluster it names
// is TERMINATED or gone: an older release ending a cluster during a deploy
// does not release its name, and the name must not stay taken for good.
// The delete checks both that the reservation still names that cluster
// and that the cluster is still TERMINATED (a retry may bring it back).
func (e *Engine) dropStaleName(ctx context.Context, tenant, name string) error {
	key := nameKey(tenant, name)
	it, err := e.store.Get(ctx, key)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading the reservation of name %s: %w", name, err)
	}
	holder := it.Status
	cit, err := e.store.Get(ctx, clusterKey(tenant, holder))
	check := store.Check(clusterKey(tenant, holder), store.Condition{StatusIn: []string{string(domain.ClusterTerminated)}})
	switch {
	case errors.Is(err, store.ErrNotFound):
		check = store.Check(clusterKey(tenant, holder), store.Condition{MustNotExist: true})
	case err != nil:
		return fmt.Errorf("reading cluster %s: %w", holder, err)
	case !domain.ClusterStatus(cit.Status).Terminal():
		return nil // taken, rightly
	}
	err = e.store.Transact(ctx, []store.Op{store.Delete(key, store.Condition{StatusIn: []string{holder}}), check})
	if err != nil && !errors.Is(err, store.ErrConditionFailed) {
		return fmt.Errorf("dropping the stale reservation of name %s: %w", name, err)
	}
	return nil // dropped, or changed meanwhile: the claim's condition decides
}
