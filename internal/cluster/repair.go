package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/heddle-io/heddle/internal/access"
	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/engine"
	"github.com/heddle-io/heddle/internal/events"
	"github.com/heddle-io/heddle/internal/store"
	"github.com/heddle-io/heddle/planner"
)

// RepairRequest repairs what the cluster's latest drift check found on
// Nodes (all drifted nodes when empty).
type RepairRequest struct {
	Nodes []string `json:"nodes,omitempty"`
}

// RepairHaltedError refuses a repair when more nodes drifted than the
// template's maxUnhealthy allows: something larger than a node is wrong,
// and repairing node by node could make it worse.
type RepairHaltedError struct {
	Cluster      string
	Drifted, Max int
}

func (e *RepairHaltedError) Error() string {
	return fmt.Sprintf("cluster %s: %d nodes drifted, more than the %d its template's administration.repair.maxUnhealthy lets heddle repair at once; nothing was repaired: look at the drift report (heddle clusters drift ID --last)", e.Cluster, e.Drifted, e.Max)
}

// repairable are the kinds a repair fixes in this version: a reconfigure
// with restart of the affected services on the affected nodes brings a
// stopped service back and applies the configuration the cluster renders.
// A lost or replaced machine (unreachable, host key changed, gone,
// stopped) is reported, not repaired: replacing nodes is not done yet.
var repairable = []domain.DriftKind{domain.DriftServiceDown, domain.DriftConfigStale}

// repairsKey holds when each node of the cluster was last repaired, for the
// template's repair backoff.
func repairsKey(tenant, cluster string) store.Key {
	return store.Key{PK: store.TenantPK(tenant, "REPAIRS"), SK: cluster}
}

// Repair submits a repair of what the cluster's latest drift check found:
// one job (a reconfigure with restart of the affected services on the
// affected nodes) with its own history. It never runs beside another job
// (the cluster's lock), repairs nothing when more nodes drifted than the
// template's maxUnhealthy (and raises cluster.repair_halted), and leaves
// out nodes repaired within the template's backoff.
func (s *Service) Repair(ctx context.Context, p access.Principal, id string, req RepairRequest, dryRun bool) (*Result, error) {
	// The caps first: a halted repair says so even while a job runs.
	c, err := s.visible(ctx, p, id)
	if err != nil {
		return nil, err
	}
	d := c.Drift
	if d == nil {
		return nil, &StateError{Cluster: id, Status: c.Status, Reason: "no drift check has ended yet; run heddle clusters drift ID --wait first"}
	}
	var policy *domain.RepairPolicy
	if c.Resolved != nil {
		policy = c.Resolved.Administration.Repair
	}
	if maxN := domain.MaxUnhealthyOf(policy, d.Nodes); d.Drifted > maxN {
		if !dryRun {
			ev := events.Event{Type: events.RepairHalted, At: s.now(), Cluster: id, Job: d.JobID, Status: "halted",
				Message: fmt.Sprintf("%d of %d nodes drifted; at most %d are repaired at once", d.Drifted, d.Nodes, maxN),
				Counts:  map[string]int{"drifted": d.Drifted, "maxUnhealthy": maxN}}
			if _, err := s.cfg.Store.Write(ctx, events.Op(p.Tenant, ev)); err != nil {
				return nil, err
			}
		}
		return nil, &RepairHaltedError{Cluster: id, Drifted: d.Drifted, Max: maxN}
	}
	l, err := s.load(ctx, p, id, false)
	if err != nil {
		return nil, err
	}
	if l.c.Drift == nil || l.c.Drift.JobID != d.JobID {
		return nil, fmt.Errorf("%w: a drift check of cluster %s ended meanwhile; ask again", engine.ErrClusterBusy, id)
	}
	drifted := map[string]bool{}
	for _, f := range d.Findings {
		drifted[f.Node] = true
	}
	var ps domain.Problems
	for i, n := range req.Nodes {
		if !drifted[n] {
			ps = append(ps, domain.Problem{Field: fmt.Sprintf("nodes[%d]", i), Code: domain.CodeUnknownRef,
				Message: fmt.Sprintf("node %q has no finding in the latest drift check (job %s)", n, d.JobID)})
		}
	}
	if len(ps) > 0 {
		return nil, ps
	}
	last := map[string]time.Time{}
	it, err := s.cfg.Store.Get(ctx, repairsKey(p.Tenant, id))
	switch {
	case err == nil:
		if err := json.Unmarshal(it.Data, &last); err != nil {
			return nil, fmt.Errorf("cluster %s: unreadable repair record: %w", id, err)
		}
	case !errors.Is(err, store.ErrNotFound):
		return nil, err
	}
	backoff, now := domain.BackoffOf(policy), s.now()
	services := map[string][]string{}
	for _, f := range d.Findings {
		if !slices.Contains(repairable, f.Kind) || len(req.Nodes) > 0 && !slices.Contains(req.Nodes, f.Node) {
			continue
		}
		if at, ok := last[f.Node]; ok && now.Sub(at) < backoff {
			continue
		}
		if !slices.Contains(services[f.Node], f.Service) {
			services[f.Node] = append(services[f.Node], f.Service)
		}
	}
	var nodes []domain.Node
	var selected []string
	for _, n := range l.nodes {
		for _, svc := range services[n.ID] {
			if !slices.Contains(selected, svc) {
				selected = append(selected, svc)
			}
		}
		if len(services[n.ID]) > 0 {
			nodes = append(nodes, n)
			last[n.ID] = now
		}
	}
	if len(nodes) == 0 {
		return nil, &StateError{Cluster: id, Status: l.c.Status, Reason: fmt.Sprintf(
			"the latest drift check (job %s) found nothing heddle repairs on the nodes asked, or they were repaired within the last %s: stopped services and stale configurations are repaired; lost machines are only reported", d.JobID, backoff)}
	}
	slices.Sort(selected)
	op := operation{req: planner.Request{Operation: domain.OpReconfigure, Selected: selected, Restart: true, Old: nodes}}
	cond := store.Condition{MustNotExist: true}
	if it.Version > 0 {
		cond = store.Condition{Version: it.Version}
	}
	op.checks = []store.Op{store.Put(store.Item{Key: repairsKey(p.Tenant, id), Data: mustJSON(last)}, cond)}
	return s.run(ctx, p, l, op, dryRun)
}

// RepairDue is the janitor's hook for a due automatic repair: in the
// owner's name, and only while the template still asks for it. A halted
// repair has raised its event; a cluster with nothing to repair has its
// due repair dropped.
func (s *Service) RepairDue(ctx context.Context, tenant string, c domain.Cluster) error {
	p := access.Principal{Tenant: tenant, User: c.Owner, Role: domain.RoleAdmin}
	_, err := s.Repair(ctx, p, c.ID, RepairRequest{}, false)
	var halted *RepairHaltedError
	var se *StateError
	switch {
	case errors.As(err, &halted):
		s.log.WarnContext(ctx, "automatic repair halted", "tenant", tenant, "cluster", c.ID, "drifted", halted.Drifted, "max", halted.Max)
		return fmt.Errorf("%w: %v", engine.ErrNothingToCheck, err)
	case errors.As(err, &se):
		return fmt.Errorf("%w: %v", engine.ErrNothingToCheck, err)
	}
	return err
}
