package engine

import (
	"context"
	"fmt"

	"github.com/heddle-io/heddle/internal/domain"
)

// SetManagedBy records which tool owns the cluster's desired state, on the
// condition that the record is still the version c was read at.
func (e *Engine) SetManagedBy(ctx context.Context, tenant string, c domain.Cluster, managedBy string) (domain.Cluster, error) {
	c.ManagedBy = managedBy
	out, err := e.rewriteCluster(ctx, tenant, c)
	if err != nil {
		return domain.Cluster{}, fmt.Errorf("marking cluster %s as managed by %q: %w", c.ID, managedBy, err)
	}
	return out, nil
}
