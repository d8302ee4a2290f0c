package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/heddle-io/heddle/internal/access"
	"github.com/heddle-io/heddle/internal/audit"
	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/engine"
	"github.com/heddle-io/heddle/internal/events"
	"github.com/heddle-io/heddle/internal/store"
	"github.com/heddle-io/heddle/planner"
	"github.com/heddle-io/heddle/solver"
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

// lostKinds are the node drift that a repair replaces the node for: its
// machine is gone, stopped, or does not answer. A changed host key is
// reported, never repaired: heddle cannot tell a reinstall from someone
// else's machine, and must not trust or wipe it; a reboot alone loses
// nothing (what it stopped is found as serviceDown).
var lostKinds = []domain.DriftKind{domain.DriftUnreachable, domain.DriftMachineGone, domain.DriftMachineStopped}

// inPlaceKinds are repaired on the node: a reconfigure with restart of the
// affected services brings a stopped service back and applies the
// configuration the cluster renders. A service running where heddle
// stopped it (serviceRunning) is stopped again on its node (StopOn).
var inPlaceKinds = []domain.DriftKind{domain.DriftServiceDown, domain.DriftConfigStale}

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
	due := func(f domain.DriftFinding) bool {
		if len(req.Nodes) > 0 && !slices.Contains(req.Nodes, f.Node) {
			return false
		}
		at, ok := last[f.Node]
		return !ok || now.Sub(at) >= backoff
	}
	live := map[string]bool{}
	for _, n := range l.nodes {
		live[n.ID] = true
	}
	// Lost nodes first, and alone: the replacement reconfigures what reads
	// the layout anyway, and what else drifted is found again by the next
	// check, against the new layout.
	var lost []string
	for _, f := range d.Findings {
		if slices.Contains(lostKinds, f.Kind) && live[f.Node] && due(f) && !slices.Contains(lost, f.Node) {
			lost = append(lost, f.Node)
		}
	}
	cond := store.Condition{MustNotExist: true}
	if it.Version > 0 {
		cond = store.Condition{Version: it.Version}
	}
	if len(lost) > 0 {
		for _, n := range lost {
			last[n] = now
		}
		op, err := s.replacement(l, lost)
		if err != nil {
			return nil, err
		}
		op.checks = []store.Op{store.Put(store.Item{Key: repairsKey(p.Tenant, id), Data: mustJSON(last)}, cond)}
		return s.run(ctx, p, l, op, dryRun)
	}
	services, stopOn := map[string][]string{}, map[string][]string{}
	for _, f := range d.Findings {
		if !live[f.Node] || !due(f) {
			continue
		}
		switch {
		case f.Kind == domain.DriftServiceRunning:
			if !slices.Contains(stopOn[f.Node], f.Service) {
				stopOn[f.Node] = append(stopOn[f.Node], f.Service)
			}
		case slices.Contains(inPlaceKinds, f.Kind):
			if !slices.Contains(services[f.Node], f.Service) {
				services[f.Node] = append(services[f.Node], f.Service)
			}
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
		if len(services[n.ID])+len(stopOn[n.ID]) > 0 {
			nodes = append(nodes, n)
			last[n.ID] = now
		}
	}
	if len(nodes) == 0 {
		return nil, &StateError{Cluster: id, Status: l.c.Status, Reason: fmt.Sprintf(
			"the latest drift check (job %s) found nothing heddle repairs on the nodes asked, or they were repaired within the last %s: lost machines are replaced, services found down restarted, services running where heddle stopped them stopped, and stale configurations applied; a changed host key and a reboot are only reported", d.JobID, backoff)}
	}
	slices.Sort(selected)
	if len(stopOn) == 0 {
		stopOn = nil
	}
	op := operation{req: planner.Request{Operation: domain.OpRepair, Selected: selected, Restart: true, Old: nodes, StopOn: stopOn}}
	op.checks = []store.Op{store.Put(store.Item{Key: repairsKey(p.Tenant, id), Data: mustJSON(last)}, cond)}
	return s.run(ctx, p, l, op, dryRun)
}

// replacement plans the swap of the lost nodes for new ones with their
// layouts. Its reservations are an expand's: the new nodes take quota and
// pool hosts in the job's first transaction (so a tenant at its node
// limit cannot swap until a node is free: the lost one still counts until
// its delete task ends). The delete tasks, of the lost nodes forward and
// of the new ones in a rollback, mark their nodes DELETED and every end of
// the job gives their quota back (engine.withTaskDeletions: none of its
// effects names nodes DELETED, so the count is the tasks'); the pool hold
// is given back when the job ends, whichever way. A failed replacement
// rolls back: the new nodes are deleted and what reads the layout is
// reconfigured against the nodes kept; the lost node is not brought back
// (deleted already, or left DELETING for the next repair), so the cluster
// is left INCONSISTENT.
func (s *Service) replacement(l *live, lost []string) (operation, error) {
	layout, err := solver.Replace(solver.ReplaceRequest{Cluster: l.solverCluster(), Catalog: l.sp.solverCatalog(), NodeIDs: lost})
	if err != nil {
		return operation{}, err
	}
	added, _ := changedNodes(l.nodes, layout)
	return operation{
		req:       planner.Request{Operation: domain.OpRepair, New: layout.Nodes, Restart: true},
		newNodes:  added,
		retiring:  layout.RemovedNodes,
		takeNodes: len(added),
		layout:    layout.Groups,
		onSuccess: engine.Effect{NodeStatus: domain.NodeActive, Nodes: layout.NewNodes},
		onRollback: engine.Effect{ClusterStatus: domain.ClusterInconsistent,
			Message: "repair failed; its new nodes were deleted, and the lost ones are not back: expand, or repair again after the next drift check"},
		sizeField: "nodes",
	}, nil
}

// RepairPolicyActor is the user an automatic repair's audit record names:
// the template's repair policy acted, not a person.
const RepairPolicyActor = "policy:administration.repair"

// RepairDue is the janitor's hook for a due automatic repair: in the
// policy's name (RepairPolicyActor), and only while the template still asks for it. A halted
// repair has raised its event; a cluster with nothing to repair has its
// due repair dropped. A repair it submits, and one it halts, leaves an
// audit record whose actor is the policy, as a user's request through the
// API does with the user.
func (s *Service) RepairDue(ctx context.Context, tenant string, c domain.Cluster) error {
	// The policy, not the owner, asks: the job's history says so, and a
	// user's look at the jobs they asked for does not count it.
	p := access.Principal{Tenant: tenant, User: RepairPolicyActor, Role: domain.RoleAdmin}
	res, err := s.Repair(ctx, p, c.ID, RepairRequest{}, false)
	var halted *RepairHaltedError
	var se *StateError
	switch {
	case err == nil:
		s.auditRepair(ctx, tenant, c.ID, res.Job.ID, http.StatusAccepted, "")
	case errors.As(err, &halted):
		s.log.WarnContext(ctx, "automatic repair halted", "tenant", tenant, "cluster", c.ID, "drifted", halted.Drifted, "max", halted.Max)
		s.auditRepair(ctx, tenant, c.ID, "", http.StatusConflict, "repair_halted")
		return fmt.Errorf("%w: %v", engine.ErrNothingToCheck, err)
	case errors.As(err, &se):
		return fmt.Errorf("%w: %v", engine.ErrNothingToCheck, err)
	}
	return err
}

// auditRepair records an automatic repair as if the policy had asked for
// it through the repair route. A lost record is logged: the repair stands.
func (s *Service) auditRepair(ctx context.Context, tenant, cluster, job string, status int, code string) {
	target := map[string]string{"cluster": cluster}
	if job != "" {
		target["job"] = job
	}
	rec := audit.Record{At: s.now(), Tenant: tenant, User: RepairPolicyActor, Method: http.MethodPost,
		Route: "/v1/clusters/{cluster}/repair", Path: "/v1/clusters/" + cluster + "/repair", Target: target,
		RequestID: "janitor-repair-" + cluster + "-" + strconv.FormatInt(s.now().UnixNano(), 36),
		Status:    status, Outcome: audit.OutcomeOf(status), Code: code}
	if err := audit.New(s.cfg.Store).Append(ctx, rec); err != nil {
		s.log.ErrorContext(ctx, "audit record of an automatic repair lost", "tenant", tenant, "cluster", cluster, "job", job, "error", err)
	}
}
