package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/heddle-io/heddle/internal/access"
	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/engine"
	"github.com/heddle-io/heddle/internal/events"
	"github.com/heddle-io/heddle/planner"
)

// NoChecksError refuses a verification of a cluster none of whose services
// defines a check action.
type NoChecksError struct {
	Cluster  string
	Services []string
}

func (e *NoChecksError) Error() string {
	return fmt.Sprintf("cluster %s has nothing to verify: none of its services (%v) defines a check action; add actions.check to a service and sync the cluster's template", e.Cluster, e.Services)
}

func (e *NoChecksError) Is(target error) bool { return target == engine.ErrNothingToVerify }

// Verify submits a verification of the cluster: every check action of
// every service on every node that carries it, as one job (see the engine's
// health.go). It holds the cluster's lock like any job, so it waits for no
// operation and none runs beside it; its end records the cluster's health.
//
// Asked while a verification of the cluster runs, it answers that one:
// there is at most one at a time, and its result is what was asked for.
func (s *Service) Verify(ctx context.Context, p access.Principal, id string) (*Result, error) {
	l, err := s.load(ctx, p, id, false)
	if errors.Is(err, engine.ErrClusterBusy) {
		if c, cerr := s.visible(ctx, p, id); cerr == nil && c.ActiveJobID != "" {
			if job, jerr := s.cfg.Engine.Job(ctx, p.Tenant, id, c.ActiveJobID); jerr == nil && job.Operation == domain.OpVerify {
				return &Result{Cluster: c, Job: &job}, nil
			}
		}
	}
	if err != nil {
		return nil, err
	}
	if l.c.Status == domain.ClusterPending || l.c.Status == domain.ClusterFailed {
		return nil, &StateError{Cluster: id, Status: l.c.Status, Reason: "only a cluster whose create succeeded can be verified"}
	}
	services := l.sp.plannerServices(servicesOn(l.nodes))
	plan, err := planner.Verify(l.nodes, services)
	if err != nil {
		return nil, err
	}
	if len(plan.Tasks) == 0 {
		return nil, &NoChecksError{Cluster: id, Services: servicesOn(l.nodes)}
	}
	keep := engine.Effect{ClusterStatus: l.c.Status, Message: l.c.StatusMessage}
	job, err := s.cfg.Engine.Submit(ctx, engine.Submission{
		Tenant: p.Tenant, Cluster: l.c, Operation: domain.OpVerify, RequestedBy: p.User, Plan: plan,
		OnSuccess: keep, OnFailure: keep,
	})
	if err != nil {
		return nil, s.submitError(ctx, p.Tenant, err, 0, 0)
	}
	s.log.InfoContext(ctx, "cluster verification submitted", "tenant", p.Tenant, "cluster", id, "job", job.ID, "checks", len(plan.Tasks))
	c, _ := s.cfg.Engine.Cluster(ctx, p.Tenant, id)
	return &Result{Cluster: c, Job: &job}, nil
}

// verificationEndWait bounds how long a user's operation waits for the
// verification it aborted to let go of the cluster: its running checks end
// their attempt (each cut at its timeout). Well within a request's 30 s.
const verificationEndWait = 10 * time.Second

// endVerification ends held, the read-only job (a verification or a drift
// check) that holds c, for a user's
// operation (invariant 15: what heddle starts by itself never stands in a
// user's way, and a verification only reads). It aborts the job, then
// waits until the job's end gives the lock back, and returns the cluster as
// it is then; the caller's submission takes the lock under its own
// condition (the cluster's version), so a job that got in first meanwhile
// is refused as usual.
func (s *Service) endVerification(ctx context.Context, p access.Principal, c domain.Cluster, held string) (domain.Cluster, error) {
	by := fmt.Sprintf("%s, whose operation on the cluster goes first", p.User)
	deadline := s.now().Add(s.verificationEndWait)
	for {
		// A job still PENDING cannot be aborted yet, and one already
		// failing is ending: either way, look again.
		if err := s.cfg.Engine.Abort(ctx, p.Tenant, c.ID, held, by); err != nil && !errors.Is(err, engine.ErrJobState) {
			return c, fmt.Errorf("ending the read-only job %s (a verification or drift check) of cluster %s: %w", held, c.ID, err)
		}
		now, err := s.visible(ctx, p, c.ID)
		if err != nil {
			return c, err
		}
		if now.ActiveJobID != held {
			s.log.InfoContext(ctx, "a verification gave way to a user's operation", "tenant", p.Tenant, "cluster", c.ID, "job", held, "user", p.User)
			return now, nil
		}
		if s.now().After(deadline) {
			return now, fmt.Errorf("%w: the read-only job %s (a verification or drift check) of cluster %s was aborted so that your operation goes first, and its running checks are still ending; try again in a few seconds",
				engine.ErrClusterBusy, held, c.ID)
		}
		select {
		case <-ctx.Done():
			return now, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// VerifyDue is the janitor's hook (engine.Config.Verify): a verification
// that is due runs in the owner's name, so the job history says whose
// cluster it was.
func (s *Service) VerifyDue(ctx context.Context, tenant string, c domain.Cluster) error {
	p := access.Principal{Tenant: tenant, User: c.Owner, Role: domain.RoleAdmin}
	_, err := s.Verify(ctx, p, c.ID)
	var se *StateError
	if errors.As(err, &se) {
		return fmt.Errorf("%w: %v", engine.ErrNothingToVerify, err)
	}
	return err
}

// hasChecks reports whether any service on nodes defines a check: a create
// or scale of such a cluster makes a verification due when it succeeds.
func hasChecks(sp *spec, nodes []domain.Node) bool {
	for _, name := range servicesOn(nodes) {
		if svc, ok := sp.Services[name]; ok {
			if _, ok := svc.Actions[domain.ActionCheck]; ok {
				return true
			}
		}
	}
	return false
}

// verifiesAfter lists the operations whose success makes a verification due.
var verifiesAfter = []domain.Operation{domain.OpCreate, domain.OpExpand, domain.OpShrink, domain.OpRepair}

func verifiesAfterOp(op domain.Operation) bool { return slices.Contains(verifiesAfter, op) }

// Events pages a cluster's events, oldest first; since (an event id)
// starts after that event, so a follower asks for what it has not seen.
// The caller must be allowed to see the cluster; a deleted cluster's events
// stay readable until they expire.
func (s *Service) Events(ctx context.Context, p access.Principal, cluster, since string, limit int, cursor string) ([]events.Event, string, error) {
	if _, err := s.visible(ctx, p, cluster); err != nil {
		return nil, "", err
	}
	list, next, err := events.New(s.cfg.Store).List(ctx, p.Tenant, cluster, since, limit, cursor)
	if list == nil {
		list = []events.Event{}
	}
	return list, next, err
}
