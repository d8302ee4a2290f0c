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
	"github.com/heddle-io/heddle/internal/store"
	"github.com/heddle-io/heddle/planner"
	"github.com/heddle-io/heddle/solver"
)

// live is an existing cluster ready for an operation: no job holds it.
type live struct {
	c           domain.Cluster
	nodes       []domain.Node // live nodes, by Num
	sp          *spec
	specVersion int64 // the condition for replacing the spec (sync)
	// verifying is the read-only job (a verification or a drift check)
	// that holds the cluster, which run ends before it submits; "" when
	// no job holds it.
	verifying string
}

// loadLive loads the cluster for a user's operation. A read-only job that
// holds it (a verification or a drift check, which heddle may start by
// itself) does not refuse the operation: it only reads and must never
// stand in the user's way (invariant 15), so the operation is planned and
// checked as if it were not there (l.verifying names it), and run ends it
// just before submitting, once nothing can refuse the request any more; a
// dry run leaves it running.
func (s *Service) loadLive(ctx context.Context, p access.Principal, id string) (*live, error) {
	return s.load(ctx, p, id, true)
}

// load loads the cluster; a job that holds it refuses, but a read-only
// job when pastVerification.
func (s *Service) load(ctx context.Context, p access.Principal, id string, pastVerification bool) (*live, error) {
	c, err := s.visible(ctx, p, id)
	if err != nil {
		return nil, err
	}
	if c.Status.Terminal() {
		return nil, &StateError{Cluster: id, Status: c.Status, Reason: "it was deleted; create a new cluster"}
	}
	verifying := ""
	if c.ActiveJobID != "" && pastVerification {
		if job, err := s.cfg.Engine.Job(ctx, p.Tenant, id, c.ActiveJobID); err == nil && (job.Operation == domain.OpVerify || job.Operation == domain.OpDrift) {
			verifying = job.ID
		}
	}
	if c.ActiveJobID != "" && verifying == "" {
		return nil, fmt.Errorf("%w: job %s is working on cluster %s; wait for it, or abort it", engine.ErrClusterBusy, c.ActiveJobID, id)
	}
	nodes, err := s.cfg.Engine.Nodes(ctx, p.Tenant, id)
	if err != nil {
		return nil, err
	}
	sp, specVersion, err := s.loadSpec(ctx, p.Tenant, id)
	if err != nil {
		return nil, err
	}
	return &live{c: c, nodes: liveNodes(nodes), sp: sp, specVersion: specVersion, verifying: verifying}, nil
}

func (l *live) solverCluster() solver.Cluster {
	return solver.Cluster{ID: l.c.ID, Template: l.c.Resolved, Provider: l.c.Provider, Services: l.c.Services, Nodes: l.nodes}
}

// operation is one planned job on a live cluster.
type operation struct {
	req       planner.Request
	newNodes  []domain.Node
	retiring  []string
	updated   []domain.Node // existing nodes whose services change
	checks    []store.Op    // more ops for the job's first transaction
	takeNodes int
	status    domain.ClusterStatus // while it runs; "" leaves it
	onSuccess engine.Effect
	// onRollback applies when the plan has a rollback plan and it ran.
	onRollback engine.Effect
	edit       func(c *domain.Cluster) // changes the cluster record carries
	// editItems are the items beside the cluster that checks rewrite (a
	// sync's spec), before and after: a withdrawn job puts them back.
	editItems []engine.EditedItem
	layout    []solver.Group
	// sizeField is the request's field that asks for the new nodes (a
	// static pool's refusal names it).
	sizeField string
}

// revise is the revision op records: one when it changes the cluster's
// definition or its size (a delete ends the cluster instead; a repair
// replaces nodes one for one).
func (op operation) revise(ctx context.Context, size int) *engine.Revise {
	next := size + len(op.newNodes) - len(op.retiring)
	if op.req.Operation == domain.OpDelete || (op.edit == nil && next == size) {
		return nil
	}
	return &engine.Revise{Size: next, RollbackOf: rollbackTarget(ctx)}
}

// applyEdit is base with op's edit made, and the edit as the engine keeps
// it for a withdrawal to undo (nil when op changes no definition).
func (op operation) applyEdit(base domain.Cluster) (domain.Cluster, *engine.ClusterEdit) {
	if op.edit == nil {
		return base, nil
	}
	c := base
	op.edit(&c)
	return c, &engine.ClusterEdit{Before: engine.DefinitionOf(base), After: engine.DefinitionOf(c), Items: op.editItems}
}

// run plans op on l and submits it (or previews it).
func (s *Service) run(ctx context.Context, p access.Principal, l *live, op operation, dryRun bool) (*Result, error) {
	if op.req.Services == nil {
		op.req.Services = l.sp.plannerServices(servicesOn(l.nodes), servicesOn(op.req.New))
	}
	services := op.req.Services
	if op.req.Old == nil {
		op.req.Old = l.nodes
	}
	c, edit := op.applyEdit(l.c)
	if op.req.ConfigReferences == nil {
		refs, err := configReferences(services, c.Config)
		if err != nil {
			return nil, err
		}
		op.req.ConfigReferences = refs
	}
	plan, err := planner.Build(op.req)
	if err != nil {
		return nil, err
	}
	hold := func() (engine.Hold, error) {
		return s.reserveHosts(ctx, p.Tenant, l.sp.Provider, c.ID, nodeIDs(op.newNodes), op.sizeField)
	}
	poolRefusal, err := foreseeHold(hold, dryRun)
	if err != nil {
		return nil, err
	}
	if dryRun {
		pv, err := planner.NewPreview(plan, s.cfg.Estimates)
		if err != nil {
			return nil, err
		}
		var refusal *Refusal
		if op.takeNodes > 0 {
			if refusal, err = s.foresee(ctx, p.Tenant, 0, op.takeNodes); err != nil {
				return nil, err
			}
		}
		if poolRefusal != nil {
			refusal = poolRefusal // the submission checks the pool first
		}
		return &Result{Cluster: c, Preview: pv.Bounded(PreviewItems), Layout: op.layout, DryRun: true, Refusal: refusal}, nil
	}
	if op.takeNodes > 0 {
		if err := s.checkQuota(ctx, p.Tenant, 0, op.takeNodes); err != nil {
			return nil, err
		}
	}
	if op.onSuccess.ClusterStatus == "" {
		op.onSuccess.ClusterStatus = domain.ClusterActive
	}
	if verifiesAfterOp(op.req.Operation) && hasChecks(l.sp, op.req.New) {
		op.onSuccess.Verify = true
	}
	if l.verifying != "" {
		// Last, so that a request refused above changes nothing: the
		// verification ends, and the operation goes on from the cluster
		// as its end left it (its lock and health).
		fresh, err := s.endVerification(ctx, p, l.c, l.verifying)
		if err != nil {
			return nil, err
		}
		if fresh.ActiveJobID != "" {
			return nil, fmt.Errorf("%w: job %s is working on cluster %s; wait for it, or abort it", engine.ErrClusterBusy, fresh.ActiveJobID, fresh.ID)
		}
		c, edit = op.applyEdit(fresh)
	}
	var job domain.Job
	for attempt := 0; ; attempt++ {
		job, err = s.submitHolding(ctx, engine.Submission{
			Tenant: p.Tenant, Cluster: c, Edit: edit, ClusterStatus: op.status, NewNodes: op.newNodes, RetiringNodes: op.retiring, UpdatedNodes: op.updated, Checks: op.checks,
			Operation: op.req.Operation, RequestedBy: p.User, Plan: plan, TakeNodes: op.takeNodes,
			OnSuccess: op.onSuccess,
			OnFailure: engine.Effect{ClusterStatus: domain.ClusterInconsistent,
				Message: fmt.Sprintf("%s failed; retry the job or run another operation to repair the cluster", op.req.Operation)},
			OnRollback: op.onRollback,
			Revise:     op.revise(ctx, len(l.nodes)),
		}, hold)
		if err == nil || attempt == 2 || !errors.Is(err, engine.ErrClusterBusy) {
			break
		}
		// A verification or drift check heddle started by itself may have
		// taken the lock since the cluster was read (the janitor's due
		// one): it gives way here too (invariant 15), and the submission
		// goes on from the cluster as its end left it.
		fresh, ferr := s.cfg.Engine.Cluster(ctx, p.Tenant, c.ID)
		if ferr != nil || fresh.ActiveJobID == "" {
			break
		}
		held, jerr := s.cfg.Engine.Job(ctx, p.Tenant, c.ID, fresh.ActiveJobID)
		if jerr != nil || (held.Operation != domain.OpVerify && held.Operation != domain.OpDrift) {
			break
		}
		if fresh, err = s.endVerification(ctx, p, fresh, held.ID); err != nil {
			return nil, err
		}
		if fresh.ActiveJobID != "" {
			return nil, fmt.Errorf("%w: job %s is working on cluster %s; wait for it, or abort it", engine.ErrClusterBusy, fresh.ActiveJobID, fresh.ID)
		}
		c, edit = op.applyEdit(fresh)
	}
	if err != nil {
		return nil, s.submitError(ctx, p.Tenant, err, 0, op.takeNodes)
	}
	s.log.InfoContext(ctx, "cluster job submitted", "tenant", p.Tenant, "cluster", c.ID, "operation", op.req.Operation, "job", job.ID)
	c, _ = s.cfg.Engine.Cluster(ctx, p.Tenant, c.ID)
	return &Result{Cluster: c, Job: &job, Layout: op.layout}, nil
}

// DeleteRequest: Force deletes the nodes without stopping and removing
// their services first.
type DeleteRequest struct {
	Force bool `json:"force,omitempty"`
}

// Delete submits the cluster's delete job.
func (s *Service) Delete(ctx context.Context, p access.Principal, id string, req DeleteRequest, dryRun bool) (*Result, error) {
	l, err := s.loadLive(ctx, p, id)
	if err != nil {
		return nil, err
	}
	ids := nodeIDs(l.nodes)
	return s.run(ctx, p, l, operation{
		req:      planner.Request{Operation: domain.OpDelete, Force: req.Force},
		status:   domain.ClusterDeleting,
		retiring: ids,
		onSuccess: engine.Effect{ClusterStatus: domain.ClusterTerminated, Message: "deleted",
			ReleaseClusters: 1, ReleaseNodes: len(ids), NodeStatus: domain.NodeDeleted, Nodes: ids},
	}, dryRun)
}

// ExpandRequest adds Count nodes.
type ExpandRequest struct {
	Count        int    `json:"count"`
	HardwareType string `json:"hardwareType,omitempty"`
	ImageType    string `json:"imageType,omitempty"`
	// Restart restarts the services whose configuration the new nodes change.
	Restart bool `json:"restart,omitempty"`
}

// Expand adds nodes that mirror the cluster's layouts; existing nodes only
// reconfigure what refers to the services that grew.
func (s *Service) Expand(ctx context.Context, p access.Principal, id string, req ExpandRequest, dryRun bool) (*Result, error) {
	l, err := s.loadLive(ctx, p, id)
	if err != nil {
		return nil, err
	}
	if req.Count < 1 {
		return nil, domain.Problems{{Field: "count", Code: domain.CodeOutOfRange, Message: "expand by at least one node"}}
	}
	layout, err := solver.Expand(solver.ExpandRequest{Cluster: l.solverCluster(), Catalog: l.sp.solverCatalog(),
		Count: req.Count, HardwareType: req.HardwareType, ImageType: req.ImageType})
	if err != nil {
		return nil, err
	}
	added, _ := changedNodes(l.nodes, layout) // an expand leaves existing nodes as they are
	// An expand builds its new nodes and repairs nothing else, whether it
	// succeeds or is rolled back: a cluster an earlier failure left
	// INCONSISTENT (an add-services whose installs did not all run) stays
	// so, with that failure's reason, or it would read ACTIVE with nodes
	// listing services they never ran. Retrying the failed job, or a
	// delete, repairs it.
	after, reason := domain.ClusterActive, ""
	if l.c.Status == domain.ClusterInconsistent {
		after, reason = domain.ClusterInconsistent, l.c.StatusMessage
	}
	return s.run(ctx, p, l, operation{
		req:       planner.Request{Operation: domain.OpExpand, New: layout.Nodes, Restart: req.Restart},
		newNodes:  added,
		takeNodes: len(added),
		layout:    layout.Groups,
		onSuccess: engine.Effect{ClusterStatus: after, Message: reason, NodeStatus: domain.NodeActive, Nodes: layout.NewNodes},
		onRollback: engine.Effect{ClusterStatus: after, Message: "expand failed; the new nodes were deleted",
			ReleaseNodes: len(added), NodeCountDelta: -len(added), NodeStatus: domain.NodeDeleted, Nodes: layout.NewNodes},
		sizeField: "count",
	}, dryRun)
}

// ShrinkRequest removes Count nodes (newest first) or the nodes named.
type ShrinkRequest struct {
	Count   int      `json:"count,omitempty"`
	NodeIDs []string `json:"nodeIds,omitempty"`
	Force   bool     `json:"force,omitempty"`
	Restart bool     `json:"restart,omitempty"`
}

// Shrink decommissions nodes: their services stop and are removed (unless
// forced), the remaining nodes reconfigure what referred to them, and they
// are deleted.
func (s *Service) Shrink(ctx context.Context, p access.Principal, id string, req ShrinkRequest, dryRun bool) (*Result, error) {
	l, err := s.loadLive(ctx, p, id)
	if err != nil {
		return nil, err
	}
	if (req.Count < 1) == (len(req.NodeIDs) == 0) {
		return nil, domain.Problems{{Field: "count", Code: domain.CodeInvalid, Message: "give either a count of nodes to remove or the nodeIds to remove"}}
	}
	layout, err := solver.Shrink(solver.ShrinkRequest{Cluster: l.solverCluster(), Count: req.Count, NodeIDs: req.NodeIDs})
	if err != nil {
		return nil, err
	}
	k := len(layout.RemovedNodes)
	// A shrink, like an expand, repairs nothing on the nodes that stay: a
	// cluster an earlier failure left INCONSISTENT stays so, with that
	// failure's reason.
	after, reason := domain.ClusterActive, ""
	if l.c.Status == domain.ClusterInconsistent {
		after, reason = domain.ClusterInconsistent, l.c.StatusMessage
	}
	return s.run(ctx, p, l, operation{
		req:      planner.Request{Operation: domain.OpShrink, New: layout.Nodes, Force: req.Force, Restart: req.Restart},
		layout:   layout.Groups,
		retiring: layout.RemovedNodes,
		onSuccess: engine.Effect{ClusterStatus: after, Message: reason, ReleaseNodes: k, NodeCountDelta: -k,
			NodeStatus: domain.NodeDeleted, Nodes: layout.RemovedNodes},
	}, dryRun)
}

// ReconfigureRequest re-runs configure on the selected services (all when
// empty), with a new cluster config when Config is set.
type ReconfigureRequest struct {
	Services []string        `json:"services,omitempty"`
	Config   json.RawMessage `json:"config,omitempty"`
	Restart  bool            `json:"restart,omitempty"`
	// StaleOnly acts on the nodes whose applied configuration of a
	// (selected) service differs from what the cluster renders now.
	StaleOnly bool `json:"staleOnly,omitempty"`
}

// Reconfigure submits a reconfigure job.
func (s *Service) Reconfigure(ctx context.Context, p access.Principal, id string, req ReconfigureRequest, dryRun bool) (*Result, error) {
	if len(req.Config) > 0 {
		var v map[string]any
		if err := json.Unmarshal(req.Config, &v); err != nil {
			return nil, domain.Problems{{Field: "config", Code: domain.CodeWrongType, Message: "must be a JSON object"}}
		}
	}
	l, err := s.loadLive(ctx, p, id)
	if err != nil {
		return nil, err
	}
	if err := knownServices(l, req.Services, "services"); err != nil {
		return nil, err
	}
	op := operation{req: planner.Request{Operation: domain.OpReconfigure, Selected: req.Services, Restart: req.Restart}}
	if len(req.Config) > 0 {
		if req.StaleOnly {
			return nil, domain.Problems{{Field: "staleOnly", Code: domain.CodeConflict,
				Message: "a new config makes every node stale; leave out staleOnly to apply it everywhere, or config to bring only the stale nodes up to date"}}
		}
		op.edit = func(c *domain.Cluster) { c.Config = req.Config }
	}
	if req.StaleOnly {
		if op.req.Old, err = s.staleNodes(ctx, p.Tenant, l, req.Services); err != nil {
			return nil, err
		}
	}
	return s.run(ctx, p, l, op, dryRun)
}

// ServiceActionRequest starts, stops or restarts services (all when empty);
// a rolling restart restarts BatchSize nodes at a time.
type ServiceActionRequest struct {
	Services  []string `json:"services,omitempty"`
	BatchSize int      `json:"batchSize,omitempty"`
	// StaleOnly acts on the nodes whose applied configuration of a
	// (selected) service differs from what the cluster renders now.
	StaleOnly bool `json:"staleOnly,omitempty"`
}

// ServiceAction runs start, stop, restart or rolling-restart.
func (s *Service) ServiceAction(ctx context.Context, p access.Principal, id string, op domain.Operation, req ServiceActionRequest, dryRun bool) (*Result, error) {
	switch op {
	case domain.OpStartServices, domain.OpStopServices, domain.OpRestartServices, domain.OpRollingRestart:
	default:
		return nil, domain.Problems{{Field: "action", Code: domain.CodeInvalid, Message: fmt.Sprintf("%q is not start, stop, restart or rolling-restart", op)}}
	}
	if req.BatchSize < 0 {
		return nil, domain.Problems{{Field: "batchSize", Code: domain.CodeOutOfRange, Message: "a batch is at least one node"}}
	}
	l, err := s.loadLive(ctx, p, id)
	if err != nil {
		return nil, err
	}
	if err := knownServices(l, req.Services, "services"); err != nil {
		return nil, err
	}
	o := operation{req: planner.Request{Operation: op, Selected: req.Services, BatchSize: req.BatchSize}}
	if req.StaleOnly {
		if o.req.Old, err = s.staleNodes(ctx, p.Tenant, l, req.Services); err != nil {
			return nil, err
		}
	}
	return s.run(ctx, p, l, o, dryRun)
}

func knownServices(l *live, names []string, field string) error {
	on := servicesOn(l.nodes)
	var ps domain.Problems
	for i, n := range names {
		if !slices.Contains(on, n) {
			ps = append(ps, domain.Problem{Field: fmt.Sprintf("%s[%d]", field, i), Code: domain.CodeUnknownRef,
				Message: fmt.Sprintf("service %q is not on this cluster; it runs %v", n, on)})
		}
	}
	if len(ps) > 0 {
		return ps
	}
	return nil
}

// ExtendRequest asks for the lease to run By longer.
type ExtendRequest struct {
	By domain.Duration `json:"by"`
}

// ExtendLease moves the cluster's expiry within its template's policy.
func (s *Service) ExtendLease(ctx context.Context, p access.Principal, id string, req ExtendRequest) (domain.Cluster, error) {
	c, err := s.visible(ctx, p, id)
	if err != nil {
		return domain.Cluster{}, err
	}
	if c.Status.Terminal() || c.Status == domain.ClusterDeleting {
		return domain.Cluster{}, &StateError{Cluster: id, Status: c.Status, Reason: "a lease only matters while the cluster lives"}
	}
	by := time.Duration(req.By)
	if by <= 0 {
		return domain.Cluster{}, domain.Problems{{Field: "by", Code: domain.CodeOutOfRange, Message: "extend the lease by a positive duration, such as \"24h\""}}
	}
	if c.ExpiresAt.IsZero() {
		return domain.Cluster{}, domain.Problems{{Field: "by", Code: domain.CodeInvalid, Message: "this cluster never expires; there is nothing to extend"}}
	}
	var policy domain.LeasePolicy
	if c.Resolved != nil {
		policy = c.Resolved.Administration.Lease
	}
	if step := time.Duration(policy.Step); step > 0 && by > step {
		return domain.Cluster{}, domain.Problems{{Field: "by", Code: domain.CodeOutOfRange,
			Message: fmt.Sprintf("the template allows at most %s per extension", step)}}
	}
	next := c.ExpiresAt.Add(by)
	if now := s.now(); next.Before(now) {
		next = now.Add(by)
	}
	if maxLife := time.Duration(policy.Max); maxLife > 0 && next.After(c.CreatedAt.Add(maxLife)) {
		return domain.Cluster{}, domain.Problems{{Field: "by", Code: domain.CodeOutOfRange,
			Message: fmt.Sprintf("the template lets a cluster live at most %s from its creation, until %s", maxLife, c.CreatedAt.Add(maxLife).Format(time.RFC3339))}}
	}
	return s.cfg.Engine.SetLease(ctx, p.Tenant, c, next)
}

// Check reports whether the caller may see the cluster (engine.ErrNotFound
// when not), so the API answers 404 for another tenant's or user's cluster
// before it reads a body.
func (s *Service) Check(ctx context.Context, p access.Principal, id string) error {
	_, err := s.visible(ctx, p, id)
	return err
}

// ExpireLease is the janitor's hook (engine.Config.ExpireLease): a cluster
// whose lease ran out is deleted by an ordinary delete job, in the owner's
// name so the job history says whose cluster it was.
func (s *Service) ExpireLease(ctx context.Context, tenant string, c domain.Cluster) error {
	p := access.Principal{Tenant: tenant, User: c.Owner, Role: domain.RoleAdmin}
	_, err := s.Delete(ctx, p, c.ID, DeleteRequest{}, false)
	return err
}
