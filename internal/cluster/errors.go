package cluster

import (
	"context"
	"errors"
	"fmt"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/engine"
)

// QuotaError says which of the tenant's limits a request would pass.
type QuotaError struct {
	Limit string // "maxClusters" or "maxNodes"
	Max   int
	InUse int
	Asked int
}

func (e *QuotaError) Error() string {
	what, advice := "node", "shrink or delete a cluster, or ask an admin to raise the limit (heddle tenants update TENANT --max-nodes N)"
	if e.Limit == "maxClusters" {
		what, advice = "cluster", "delete a cluster, or ask an admin to raise the limit (heddle tenants update TENANT --max-clusters N)"
	}
	if e.Max == 0 && e.InUse == 0 {
		// The engine refused and the recount found room again (a race
		// with a delete): say only what was asked.
		return fmt.Sprintf("the tenant's quota %s has no room for %s more: %s", e.Limit, count(e.Asked, what), advice)
	}
	return fmt.Sprintf("the tenant's quota %s allows %s; %s in use and this asks for %d more: %s",
		e.Limit, count(e.Max, what), count(e.InUse, "is", "are"), e.Asked, advice)
}

// count is "1 cluster", "2 clusters"; with a plural form given, n alone
// picks between the forms ("1 is", "2 are").
func count(n int, one string, many ...string) string {
	switch {
	case n == 1:
		return fmt.Sprintf("1 %s", one)
	case len(many) > 0:
		return fmt.Sprintf("%d %s", n, many[0])
	}
	return fmt.Sprintf("%d %ss", n, one)
}

func (e *QuotaError) Is(target error) bool { return target == engine.ErrQuota }

// StateError refuses an operation the cluster's status does not allow.
type StateError struct {
	Cluster string
	Status  domain.ClusterStatus
	Reason  string
}

func (e *StateError) Error() string {
	return fmt.Sprintf("cluster %s is %s: %s", e.Cluster, e.Status, e.Reason)
}

// checkQuota answers a request that cannot fit with a QuotaError naming the
// limit, before any work is written. The engine's conditional counters stay
// the real guard (invariant 5): this read only makes the refusal readable.
func (s *Service) checkQuota(ctx context.Context, tenant string, clusters, nodes int) error {
	t, err := s.cfg.Access.GetTenant(ctx, tenant)
	if err != nil {
		return err
	}
	if clusters > 0 && t.Usage.Clusters+clusters > t.MaxClusters {
		return &QuotaError{Limit: "maxClusters", Max: t.MaxClusters, InUse: t.Usage.Clusters, Asked: clusters}
	}
	if nodes > 0 && t.Usage.Nodes+nodes > t.MaxNodes {
		return &QuotaError{Limit: "maxNodes", Max: t.MaxNodes, InUse: t.Usage.Nodes, Asked: nodes}
	}
	return nil
}

// submitError explains what the engine refused.
func (s *Service) submitError(ctx context.Context, tenant string, err error, clusters, nodes int) error {
	if errors.Is(err, engine.ErrQuota) {
		if qerr := s.checkQuota(ctx, tenant, clusters, nodes); qerr != nil {
			return qerr
		}
		return &QuotaError{Limit: "maxNodes", Asked: nodes}
	}
	return err
}
