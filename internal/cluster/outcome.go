package cluster

import (
	"context"

	"github.com/heddle-io/heddle/internal/access"
)

// Outcome is the answer of a mutation that submitted job on cluster (or,
// with job "", edited the cluster without one: a lease extension), made
// again from the store: the API's replay of a request whose first attempt
// committed its change but died before answering (package idempotency).
// The cluster and job are as they are now, which is what a client polling
// after the first answer would see; the layout is not kept and so is left
// out.
func (s *Service) Outcome(ctx context.Context, p access.Principal, cluster, job string) (*Result, error) {
	c, err := s.visible(ctx, p, cluster)
	if err != nil {
		return nil, err
	}
	if job == "" {
		return &Result{Cluster: c}, nil
	}
	j, err := s.cfg.Engine.Job(ctx, p.Tenant, cluster, job)
	if err != nil {
		return nil, err
	}
	return &Result{Cluster: c, Job: &j}, nil
}
