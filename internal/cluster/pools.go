package cluster

import (
	"context"
	"errors"
	"fmt"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/engine"
	"github.com/heddle-io/heddle/internal/provider/static"
	"github.com/heddle-io/heddle/internal/store"
)

// PoolError refuses a job whose new nodes a static pool cannot hold: it
// names the pool and the request's field that asks for the nodes.
type PoolError struct {
	Field string // "size", "count", "services", or "" for a retry
	*static.ExhaustedError
}

func (e *PoolError) Unwrap() error { return e.ExhaustedError }

// holdAttempts bounds how often a submission reads the pool again after
// another submission took hosts between its read and its write.
const holdAttempts = 5

// reserveHosts checks that the cluster's static pool (when its provider is
// one) has a host for each of nodes beside those promised to other jobs,
// and returns the hold the job takes with its first transaction. Any
// other provider, or no new node, holds nothing.
func (s *Service) reserveHosts(ctx context.Context, tenant string, prov domain.Provider, clusterID string, nodes []string, field string) (engine.Hold, error) {
	if prov.ProviderType != static.TypeName || len(nodes) == 0 {
		return engine.Hold{}, nil
	}
	st := static.From(s.cfg.Providers)
	if st == nil {
		return engine.Hold{}, nil
	}
	r, err := st.Pool().Reserve(ctx, tenant, prov.Name, clusterID, nodes, s.jobHolds(tenant))
	var ex *static.ExhaustedError
	if errors.As(err, &ex) {
		return engine.Hold{}, &PoolError{Field: field, ExhaustedError: ex}
	}
	if err != nil {
		return engine.Hold{}, fmt.Errorf("reading the hosts of pool %s: %w", prov.Name, err)
	}
	return engine.Hold{Take: r.Take, Items: []store.Key{r.Item}}, nil
}

// jobHolds says whether a job still holds a cluster: a hold of a cluster
// no job holds was left by a job that ended without giving it back.
func (s *Service) jobHolds(tenant string) static.LiveFunc {
	return func(ctx context.Context, clusterID string) (bool, error) {
		c, err := s.cfg.Engine.Cluster(ctx, tenant, clusterID)
		if errors.Is(err, engine.ErrNotFound) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		return c.ActiveJobID != "", nil
	}
}

// submitHolding submits sub with the hold hold returns, reading the pool
// again when another submission took hosts between the read and the
// write (engine.ErrHoldChanged).
func (s *Service) submitHolding(ctx context.Context, sub engine.Submission, hold func() (engine.Hold, error)) (domain.Job, error) {
	var err error
	for range holdAttempts {
		if sub.Hold, err = hold(); err != nil {
			return domain.Job{}, err
		}
		var job domain.Job
		job, err = s.cfg.Engine.Submit(ctx, sub)
		if !errors.Is(err, engine.ErrHoldChanged) {
			return job, err
		}
	}
	return domain.Job{}, fmt.Errorf("%w: other jobs kept taking the pool's hosts; try again", engine.ErrClusterBusy)
}

// retryHolding retries a job, taking its hosts again when it continues
// its forward plan: its end gave its hold back, and its nodes that never
// got a host need one. A rollback only deletes nodes and needs none.
func (s *Service) retryHolding(ctx context.Context, tenant, clusterID, jobID, by string) error {
	var err error
	for range holdAttempts {
		_, err = s.cfg.Engine.RetryHolding(ctx, tenant, clusterID, jobID, by, func(rollback bool, unmade []string) (engine.Hold, error) {
			if rollback || len(unmade) == 0 {
				return engine.Hold{}, nil
			}
			sp, _, err := s.loadSpec(ctx, tenant, clusterID)
			if err != nil {
				return engine.Hold{}, err
			}
			return s.reserveHosts(ctx, tenant, sp.Provider, clusterID, unmade, "")
		})
		if !errors.Is(err, engine.ErrHoldChanged) {
			return err
		}
	}
	return fmt.Errorf("%w: other jobs kept taking the pool's hosts; try again", engine.ErrClusterBusy)
}
