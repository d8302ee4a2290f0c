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
// Clusters created before reservations existed have none. A create also
// looks for a live cluster of its name among them (LiveClusterNamed), and
// a release deletes the item only when it is the cluster's own, so a
// cluster without one ends as it always did.

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

// releaseName returns the write that gives c's name back, for the
// transaction that makes c TERMINATED; none when c holds no reservation
// (a cluster from before they existed). Nothing else removes a live
// cluster's reservation, so what this reads stays true until that
// transaction, which checks it again.
func (e *Engine) releaseName(ctx context.Context, tenant string, c domain.Cluster) ([]store.Op, error) {
	if c.Name == "" {
		return nil, nil
	}
	it, err := e.store.Get(ctx, nameKey(tenant, c.Name))
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the name reservation of cluster %s: %w", c.ID, err)
	}
	if it.Status != c.ID {
		return nil, nil
	}
	return []store.Op{store.Delete(it.Key, store.Condition{StatusIn: []string{c.ID}})}, nil
}

// LiveClusterNamed returns the id of a cluster of the tenant named name
// that is not TERMINATED, or "". It reads every cluster of the tenant: a
// create asks it only for the clusters made before name reservations,
// which hold none (see above).
func (e *Engine) LiveClusterNamed(ctx context.Context, tenant, name string) (string, error) {
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
			if c.Name == name {
				return c.ID, nil
			}
		}
		if page.Next == "" {
			return "", nil
		}
		cursor = page.Next
	}
}
