package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/store"
)

// SetManagedBy records which tool owns the cluster's desired state, on the
// condition that the record is still the version c was read at.
func (e *Engine) SetManagedBy(ctx context.Context, tenant string, c domain.Cluster, managedBy string) (domain.Cluster, error) {
	c.ManagedBy = managedBy
	it := clusterItem(tenant, c)
	written, err := e.store.Write(ctx, store.Update(it.Key, store.Condition{Version: c.Version},
		store.Changes{Data: it.Data, Index: it.Index, ClearIndex: it.Index == nil}))
	if errors.Is(err, store.ErrConditionFailed) {
		return domain.Cluster{}, fmt.Errorf("%w: cluster %s changed meanwhile; read it again", ErrClusterBusy, c.ID)
	}
	if err != nil {
		return domain.Cluster{}, fmt.Errorf("marking cluster %s as managed by %q: %w", c.ID, managedBy, err)
	}
	c.Version = written.Version
	return c, nil
}
