package cluster

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/engine"
	"github.com/heddle-io/heddle/planner"
	"github.com/heddle-io/heddle/solver"
)

// A create of planLaterNodes nodes or more is planned in the request (so
// bad input is still refused there, and the answer shows the layout) and
// again in the background, where its nodes and tasks are written: the
// request stores only createInputs with the job (engine/replan.go). The
// background plans from the cluster and spec the request stored, which no
// job or catalog change touches while the job holds the cluster, so it
// gets the plan the request made (the solver and planner are
// deterministic; the engine refuses a different node count).

// createInputs are what a create's plan is made from, besides the cluster
// (template, provider, config) and its spec.
type createInputs struct {
	Size          int      `json:"size"`
	Services      []string `json:"services,omitempty"`
	HardwareType  string   `json:"hardwareType,omitempty"`
	ImageType     string   `json:"imageType,omitempty"`
	KeepOnFailure bool     `json:"keepOnFailure,omitempty"`
}

// createPlan solves a new cluster's layout and plans its create.
func createPlan(id string, tmpl *domain.ClusterTemplate, sp *spec, provider string, in createInputs, config json.RawMessage) (*solver.Layout, *planner.Plan, error) {
	layout, err := solver.Create(solver.CreateRequest{
		ClusterID: id, Template: tmpl, Catalog: sp.solverCatalog(), Provider: provider, Size: in.Size,
		Services: in.Services, HardwareType: in.HardwareType, ImageType: in.ImageType,
	})
	if err != nil {
		return nil, nil, err
	}
	services := sp.plannerServices(servicesOn(layout.Nodes))
	refs, err := configReferences(services, config)
	if err != nil {
		return nil, nil, err
	}
	plan, err := planner.Build(planner.Request{Operation: domain.OpCreate, New: layout.Nodes, Services: services, ConfigReferences: refs})
	if err != nil {
		return nil, nil, err
	}
	if in.KeepOnFailure {
		plan.Rollback = nil
	}
	return layout, plan, nil
}

// createSubmission is the engine's submission of a planned create (quota
// and checks aside, which only the request's step 1 needs).
func createSubmission(tenant string, c domain.Cluster, user string, sp *spec, layout *solver.Layout, plan *planner.Plan) engine.Submission {
	ids := nodeIDs(layout.Nodes)
	return engine.Submission{
		Tenant: tenant, Cluster: c, Create: true, ClusterStatus: domain.ClusterPending,
		NewNodes: layout.Nodes, Operation: domain.OpCreate, RequestedBy: user, Plan: plan,
		Revise:    &engine.Revise{Size: len(layout.Nodes)},
		OnSuccess: engine.Effect{ClusterStatus: domain.ClusterActive, NodeStatus: domain.NodeActive, Nodes: ids, Verify: hasChecks(sp, layout.Nodes)},
		OnFailure: engine.Effect{ClusterStatus: domain.ClusterFailed},
		OnRollback: engine.Effect{ClusterStatus: domain.ClusterTerminated, Message: "create failed; everything it made was deleted",
			ReleaseClusters: 1, ReleaseNodes: len(ids), NodeStatus: domain.NodeDeleted, Nodes: ids},
	}
}

// replan is the engine's Replanner: the whole submission of a create
// whose request stored only its inputs.
func (s *Service) replan(ctx context.Context, tenant string, job domain.Job, raw []byte) (engine.Submission, error) {
	if job.Operation != domain.OpCreate {
		return engine.Submission{}, fmt.Errorf("job %s: only creates are planned later, not %s", job.ID, job.Operation)
	}
	var in createInputs
	if err := json.Unmarshal(raw, &in); err != nil {
		return engine.Submission{}, fmt.Errorf("job %s: unreadable inputs: %w", job.ID, err)
	}
	c, err := s.cfg.Engine.Cluster(ctx, tenant, job.ClusterID)
	if err != nil {
		return engine.Submission{}, err
	}
	if c.Resolved == nil {
		return engine.Submission{}, fmt.Errorf("cluster %s keeps no resolved template to plan from", c.ID)
	}
	sp, _, err := s.loadSpec(ctx, tenant, c.ID)
	if err != nil {
		return engine.Submission{}, err
	}
	layout, plan, err := createPlan(c.ID, c.Resolved, sp, c.Provider, in, c.Config)
	if err != nil {
		return engine.Submission{}, err
	}
	return createSubmission(tenant, c, job.RequestedBy, sp, layout, plan), nil
}
