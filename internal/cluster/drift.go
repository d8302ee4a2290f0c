package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/heddle-io/heddle/internal/access"
	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/engine"
	"github.com/heddle-io/heddle/internal/macros"
	"github.com/heddle-io/heddle/internal/provision"
	"github.com/heddle-io/heddle/planner"
)

// Drift submits a drift check of the cluster (see the engine's drift.go):
// a probe of every active node and a check of every service heddle
// recorded running or stopped, as one read-only job, with the config drift
// found here, from the record alone, handed to the job's end. Like a
// verification it holds the cluster's lock while it runs.
//
// Asked while a drift check of the cluster runs, it answers that one.
func (s *Service) Drift(ctx context.Context, p access.Principal, id string) (*Result, error) {
	l, err := s.load(ctx, p, id, false)
	if errors.Is(err, engine.ErrClusterBusy) {
		if c, cerr := s.visible(ctx, p, id); cerr == nil && c.ActiveJobID != "" {
			if job, jerr := s.cfg.Engine.Job(ctx, p.Tenant, id, c.ActiveJobID); jerr == nil && job.Operation == domain.OpDrift {
				return &Result{Cluster: c, Job: &job}, nil
			}
		}
	}
	if err != nil {
		return nil, err
	}
	if l.c.Status == domain.ClusterPending || l.c.Status == domain.ClusterFailed {
		return nil, &StateError{Cluster: id, Status: l.c.Status, Reason: "only a cluster whose create succeeded can be checked for drift"}
	}
	var active []domain.Node
	for _, n := range l.nodes {
		if n.Status == domain.NodeActive {
			active = append(active, n)
		}
	}
	if len(active) == 0 {
		return nil, &StateError{Cluster: id, Status: l.c.Status, Reason: "it has no active node to check"}
	}
	plan, err := planner.Drift(active, l.sp.plannerServices(servicesOn(active)))
	if err != nil {
		return nil, err
	}
	stale, err := s.configDrift(ctx, p.Tenant, l, active, domain.MaxDriftFindings)
	if err != nil {
		return nil, err
	}
	keep := engine.Effect{ClusterStatus: l.c.Status, Message: l.c.StatusMessage}
	onSuccess := keep
	onSuccess.Drift = stale
	job, err := s.cfg.Engine.Submit(ctx, engine.Submission{
		Tenant: p.Tenant, Cluster: l.c, Operation: domain.OpDrift, RequestedBy: p.User, Plan: plan,
		OnSuccess: onSuccess, OnFailure: keep,
	})
	if err != nil {
		return nil, s.submitError(ctx, p.Tenant, err, 0, 0)
	}
	s.log.InfoContext(ctx, "cluster drift check submitted", "tenant", p.Tenant, "cluster", id, "job", job.ID, "tasks", len(plan.Tasks), "stale", len(stale))
	c, _ := s.cfg.Engine.Cluster(ctx, p.Tenant, id)
	return &Result{Cluster: c, Job: &job}, nil
}

// configDrift finds the services whose last applied configuration (the
// digest their configure recorded) differs from what the cluster's
// definition renders for them now, with the layout the macros read now. A
// service whose configure recorded no digest (configured before heddle
// recorded them) is not known to differ. At most limit findings are kept
// (0: all); a drift check's end bounds the total again.
func (s *Service) configDrift(ctx context.Context, tenant string, l *live, active []domain.Node, limit int) ([]domain.DriftFinding, error) {
	var spec *provision.ClusterSpec
	var layout *macros.Layout
	var out []domain.DriftFinding
	for i := range active {
		n := &active[i]
		for _, name := range n.Services {
			applied := n.ServiceStates[name].Config
			if applied == "" {
				continue
			}
			if spec == nil {
				var err error
				if spec, err = s.Spec(ctx, tenant, l.c.ID, true); err != nil {
					return nil, err
				}
				layout = macros.NewLayout(spec.ClusterID, spec.Owner, spec.Nodes)
			}
			self := n
			for j := range spec.Nodes {
				if spec.Nodes[j].ID == n.ID {
					self = &spec.Nodes[j]
				}
			}
			now, err := provision.ConfigDigest(spec, layout, self, name)
			if err != nil {
				return nil, fmt.Errorf("cluster %s: rendering the configuration of service %s on node %s: %w", l.c.ID, name, n.ID, err)
			}
			if now != applied && (limit == 0 || len(out) < limit) {
				out = append(out, domain.DriftFinding{Node: n.ID, Service: name, Kind: domain.DriftConfigStale,
					Detail: fmt.Sprintf("applied %s, the cluster's definition renders %s", applied, now)})
			}
		}
	}
	return out, nil
}

// DriftDue is the janitor's hook for a drift check that is due: it runs in
// the owner's name, so the job history says whose cluster it was.
func (s *Service) DriftDue(ctx context.Context, tenant string, c domain.Cluster) error {
	p := access.Principal{Tenant: tenant, User: c.Owner, Role: domain.RoleAdmin}
	_, err := s.Drift(ctx, p, c.ID)
	var se *StateError
	if errors.As(err, &se) {
		return fmt.Errorf("%w: %v", engine.ErrNothingToCheck, err)
	}
	return err
}

// withDriftDefault is the template a cluster records: with its drift
// period made explicit, the provider type's default when the template sets
// none (the engine schedules from the cluster's record alone). The catalog's
// template is not changed.
func withDriftDefault(t *domain.ClusterTemplate, providerType string) *domain.ClusterTemplate {
	if t == nil || t.Administration.DriftEvery != nil {
		return t
	}
	out := *t
	every := domain.DefaultDriftEvery(providerType)
	out.Administration.DriftEvery = &every
	return &out
}

// staleNodes are the active nodes on which a service (one of services,
// when given) applied a configuration other than what the cluster's
// definition renders now, found from the record as a drift check finds
// them, in Num order.
func (s *Service) staleNodes(ctx context.Context, tenant string, l *live, services []string) ([]domain.Node, error) {
	var active []domain.Node
	for _, n := range l.nodes {
		if n.Status == domain.NodeActive {
			active = append(active, n)
		}
	}
	stale, err := s.configDrift(ctx, tenant, l, active, 0)
	if err != nil {
		return nil, err
	}
	hit := map[string]bool{}
	for _, f := range stale {
		if len(services) == 0 || slices.Contains(services, f.Service) {
			hit[f.Node] = true
		}
	}
	var out []domain.Node
	for _, n := range active {
		if hit[n.ID] {
			out = append(out, n)
		}
	}
	if len(out) == 0 {
		// Bad input changes nothing, and says why.
		return nil, domain.Problems{{Field: "staleOnly", Code: domain.CodeConflict, Message: fmt.Sprintf(
			"no node of cluster %s has a stale configuration: what every configure applied matches what the cluster renders now; leave out staleOnly to act on every node", l.c.ID)}}
	}
	return out, nil
}
