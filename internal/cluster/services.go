package cluster

import (
	"context"
	"slices"

	"github.com/heddle-io/heddle/internal/access"
	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/engine"
	"github.com/heddle-io/heddle/internal/store"
	"github.com/heddle-io/heddle/planner"
	"github.com/heddle-io/heddle/solver"
)

// AddServicesRequest puts services on a running cluster: onto its existing
// nodes (Coopr's behaviour) and, when MaxNewNodes > 0, onto at most that many
// new nodes where the constraints need them.
type AddServicesRequest struct {
	Services    []string `json:"services"`
	MaxNewNodes int      `json:"maxNewNodes,omitempty"`
	Restart     bool     `json:"restart,omitempty"`
}

// AddServices installs, configures and starts services on the cluster and
// reconfigures what refers to them. The services' definitions are those the
// cluster was built (or last synced) with; sync the cluster to take newer
// ones from the catalog.
func (s *Service) AddServices(ctx context.Context, p access.Principal, id string, req AddServicesRequest, dryRun bool) (*Result, error) {
	l, err := s.loadLive(ctx, p, id)
	if err != nil {
		return nil, err
	}
	if len(req.Services) == 0 {
		return nil, domain.Problems{{Field: "services", Code: domain.CodeRequired, Message: "name the services to add"}}
	}
	if req.MaxNewNodes < 0 {
		return nil, domain.Problems{{Field: "maxNewNodes", Code: domain.CodeOutOfRange, Message: "cannot be negative"}}
	}
	layout, err := solver.AddServices(solver.AddServicesRequest{Cluster: l.solverCluster(), Catalog: l.sp.solverCatalog(),
		Services: req.Services, MaxNewNodes: req.MaxNewNodes})
	if err != nil {
		return nil, err
	}
	return s.relayout(ctx, p, l, layout, domain.OpAddServices, req.Restart, dryRun)
}

// RemoveServicesRequest takes services off a running cluster.
type RemoveServicesRequest struct {
	Services []string `json:"services"`
	Restart  bool     `json:"restart,omitempty"`
}

// RemoveServices stops and removes services where they run and reconfigures
// what referred to them; the solver refuses when a remaining service needs
// one of them.
func (s *Service) RemoveServices(ctx context.Context, p access.Principal, id string, req RemoveServicesRequest, dryRun bool) (*Result, error) {
	l, err := s.loadLive(ctx, p, id)
	if err != nil {
		return nil, err
	}
	if len(req.Services) == 0 {
		return nil, domain.Problems{{Field: "services", Code: domain.CodeRequired, Message: "name the services to remove"}}
	}
	layout, err := solver.RemoveServices(solver.RemoveServicesRequest{Cluster: l.solverCluster(), Catalog: l.sp.solverCatalog(), Services: req.Services})
	if err != nil {
		return nil, err
	}
	return s.relayout(ctx, p, l, layout, domain.OpRemoveServices, req.Restart, dryRun)
}

// relayout submits an operation that changes which services existing nodes
// run (and may add nodes).
func (s *Service) relayout(ctx context.Context, p access.Principal, l *live, layout *solver.Layout, op domain.Operation, restart, dryRun bool) (*Result, error) {
	added, updated := changedNodes(l.nodes, layout)
	services := servicesOn(layout.Nodes)
	return s.run(ctx, p, l, operation{
		req:       planner.Request{Operation: op, New: layout.Nodes, Restart: restart},
		newNodes:  added,
		updated:   updated,
		takeNodes: len(added),
		sizeField: "services",
		layout:    layout.Groups,
		edit:      func(c *domain.Cluster) { c.Services = services },
		onSuccess: engine.Effect{NodeStatus: domain.NodeActive, Nodes: nodeIDs(added)},
	}, dryRun)
}

// changedNodes splits a solved layout against the nodes before it: the nodes
// it adds and the existing ones whose services change.
func changedNodes(before []domain.Node, layout *solver.Layout) (added, updated []domain.Node) {
	old := make(map[string]domain.Node, len(before))
	for _, n := range before {
		old[n.ID] = n
	}
	for _, n := range layout.Nodes {
		prev, existed := old[n.ID]
		switch {
		case !existed:
			added = append(added, n)
		case !slices.Equal(prev.Services, n.Services):
			updated = append(updated, n)
		}
	}
	return added, updated
}

// SyncRequest moves a cluster to another version of its template (0: the
// latest), taking the catalog's current definitions of its services.
type SyncRequest struct {
	TemplateVersion int  `json:"templateVersion,omitempty"`
	Restart         bool `json:"restart,omitempty"`
}

// SyncTemplate checks that the cluster's layout satisfies the template
// version, then reconfigures every node with the new definitions. The new
// spec (template, services, types) is written in the job's first
// transaction, so it changes exactly when the job takes the cluster.
func (s *Service) SyncTemplate(ctx context.Context, p access.Principal, id string, req SyncRequest, dryRun bool) (*Result, error) {
	l, err := s.loadLive(ctx, p, id)
	if err != nil {
		return nil, err
	}
	if req.TemplateVersion < 0 {
		return nil, domain.Problems{{Field: "templateVersion", Code: domain.CodeOutOfRange, Message: "versions are whole numbers from 1 (or 0 for the latest)"}}
	}
	rev, err := s.cfg.Catalog.Revision(ctx, p.Tenant)
	if err != nil {
		return nil, err
	}
	tmpl, err := s.cfg.Catalog.Resolve(ctx, p.Tenant, l.c.Template.Name, req.TemplateVersion)
	if err != nil {
		return nil, fieldNotFound(err, "templateVersion")
	}
	_, next, err := s.specFromCatalog(ctx, p.Tenant)
	if err != nil {
		return nil, err
	}
	next.Provider, next.ProviderFields, next.Key = l.sp.Provider, l.sp.ProviderFields, l.sp.Key
	if err := solver.CheckSync(solver.SyncRequest{Cluster: l.solverCluster(), Template: tmpl, Catalog: next.solverCatalog()}); err != nil {
		return nil, err
	}
	services := next.plannerServices(servicesOn(l.nodes))
	// A sync reconfigures the services the nodes run and installs none: on
	// a cluster an earlier failure left INCONSISTENT (an add-services whose
	// installs did not all run) it repairs nothing, so the cluster stays
	// INCONSISTENT with that failure's reason, as after an expand or shrink.
	var onSuccess engine.Effect
	if l.c.Status == domain.ClusterInconsistent {
		onSuccess = engine.Effect{ClusterStatus: domain.ClusterInconsistent, Message: l.c.StatusMessage}
	}
	return s.run(ctx, p, l, operation{
		onSuccess: onSuccess,
		req:       planner.Request{Operation: domain.OpSyncTemplate, New: l.nodes, Services: services, Restart: req.Restart},
		edit: func(c *domain.Cluster) {
			c.Resolved, c.Template = withDriftDefault(tmpl, l.sp.Provider.ProviderType), domain.TemplateRef{Name: tmpl.Name, Version: tmpl.Version}
		},
		checks: []store.Op{
			revisionCheck(p.Tenant, rev),
			store.Put(store.Item{Key: specKey(p.Tenant, id), Data: mustJSON(next)}, store.Condition{Version: l.specVersion}),
		},
		editItems: []engine.EditedItem{{Key: specKey(p.Tenant, id), Before: mustJSON(l.sp), After: mustJSON(next)}},
	}, dryRun)
}
