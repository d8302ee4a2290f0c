package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/heddle-io/heddle/internal/access"
	"github.com/heddle-io/heddle/internal/catalog"
	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/planner"
)

// A rollback to revision N is a forward change to old content: it plans
// the operations that bring the cluster's definition back to N's (the
// template version, then services removed, services added, the config,
// the size, in that order, so that no step undoes an earlier one), and
// runs the first of them as an ordinary job that records a new revision
// (RollbackOf N). One job changes one of these at a time (the engine
// holds a cluster with one job), so a rollback that needs several is a
// sequence: asking again once the job ended runs the next step, planned
// from the cluster as it is then, until nothing differs (Done). The CLI's
// `heddle clusters rollback` does that loop. Everything that can be
// checked before the first step (the revision exists and took effect, its
// template version and services are still in the catalog, the quota
// covers the nodes it adds) is, so that a refusal changes nothing.

// RollbackRequest names the revision to go back to.
type RollbackRequest struct {
	Revision int64 `json:"revision"`
	// Restart restarts the services whose configuration a step changes.
	Restart bool `json:"restart,omitempty"`
}

// RollbackStep is one operation of a rollback's plan.
type RollbackStep struct {
	Operation       domain.Operation `json:"operation"`
	Services        []string         `json:"services,omitempty"`
	TemplateVersion int              `json:"templateVersion,omitempty"`
	Count           int              `json:"count,omitempty"`
}

// RollbackPlan is what is left to do to reach revision To: Steps[0] is
// the step this request ran (or, on a dry run, previewed); Done when the
// cluster's definition is already To's.
type RollbackPlan struct {
	To     int64          `json:"to"`
	Digest string         `json:"digest"`
	Steps  []RollbackStep `json:"steps"`
	Done   bool           `json:"done,omitempty"`
}

type rollbackKey struct{}

// rollbackTarget is the revision a rollback step running under ctx brings
// the cluster back to (0: none), for the revision the step records.
func rollbackTarget(ctx context.Context) int64 {
	n, _ := ctx.Value(rollbackKey{}).(int64)
	return n
}

// Revisions returns one page of a cluster's revisions, newest first.
func (s *Service) Revisions(ctx context.Context, p access.Principal, id string, limit int, cursor string) ([]domain.Revision, string, error) {
	if _, err := s.visible(ctx, p, id); err != nil {
		return nil, "", err
	}
	return s.cfg.Engine.Revisions(ctx, p.Tenant, id, limit, cursor)
}

// Revision returns revision n of a cluster; a number it never had is a
// structured error on field.
func (s *Service) Revision(ctx context.Context, p access.Principal, id string, n int64, field string) (domain.Revision, error) {
	c, err := s.visible(ctx, p, id)
	if err != nil {
		return domain.Revision{}, err
	}
	if c.LastRevision == 0 {
		return domain.Revision{}, &RevisionError{Field: field, Message: fmt.Sprintf("cluster %s has no revisions: its definition was last changed by a heddle release that kept none", c.Name)}
	}
	if n < 1 || n > c.LastRevision {
		return domain.Revision{}, &RevisionError{Field: field, Message: fmt.Sprintf("cluster %s has revisions 1 to %d; list them with `heddle clusters history %s`", c.Name, c.LastRevision, c.Name)}
	}
	return s.cfg.Engine.Revision(ctx, p.Tenant, id, n)
}

// RevisionError is a revision that does not exist or cannot be built
// again: not found (404) for an unknown number, a conflict (409) for one
// that cannot be rolled back to.
type RevisionError struct {
	Field    string
	Conflict bool
	Message  string
}

func (e *RevisionError) Error() string { return e.Message }

// Problems is the error as the API's structured body carries it.
func (e *RevisionError) Problems() domain.Problems {
	code := domain.CodeUnknownRef
	if e.Conflict {
		code = domain.CodeConflict
	}
	return domain.Problems{{Field: e.Field, Code: code, Message: e.Message}}
}

// Rollback brings the cluster back to revision req.Revision, one step a
// request (see above).
func (s *Service) Rollback(ctx context.Context, p access.Principal, id string, req RollbackRequest, dryRun bool) (*Result, error) {
	if req.Revision < 1 {
		return nil, domain.Problems{{Field: "revision", Code: domain.CodeOutOfRange, Message: "name the revision to roll back to, a number from 1 (see `heddle clusters history`)"}}
	}
	rev, err := s.Revision(ctx, p, id, req.Revision, "revision")
	if err != nil {
		return nil, err
	}
	if rev.Withdrawn {
		return nil, &RevisionError{Field: "revision", Conflict: true,
			Message: fmt.Sprintf("revision %d was withdrawn (job %s was vetoed, undone or rolled back); it never took effect, so there is nothing to go back to", rev.Number, rev.JobID)}
	}
	l, err := s.loadLive(ctx, p, id)
	if err != nil {
		return nil, err
	}
	steps, quota, err := s.rollbackSteps(ctx, p, l, rev, dryRun)
	if err != nil {
		return nil, err
	}
	plan := &RollbackPlan{To: rev.Number, Digest: rev.Digest, Steps: steps, Done: len(steps) == 0}
	if plan.Done {
		return &Result{Cluster: l.c, DryRun: dryRun, Rollback: plan}, nil
	}
	ctx = context.WithValue(ctx, rollbackKey{}, rev.Number)
	res, err := s.runRollbackStep(ctx, p, l, steps[0], rev, req.Restart, dryRun)
	if err != nil {
		return nil, err
	}
	res.Rollback = plan
	if res.Refusal == nil {
		res.Refusal = quota // a later step's nodes, as the real request would be refused
	}
	return res, nil
}

// rollbackSteps plans the steps from l to rev, refusing when rev cannot
// be built again; on a dry run the quota's refusal of the nodes it adds
// is answered as a Refusal, as any dry run answers it.
func (s *Service) rollbackSteps(ctx context.Context, p access.Principal, l *live, rev domain.Revision, dryRun bool) ([]RollbackStep, *Refusal, error) {
	var quota *Refusal
	var steps []RollbackStep
	want := rev.Def
	var remove, add []string
	for _, sv := range l.c.Services {
		if !slices.Contains(want.Services, sv) {
			remove = append(remove, sv)
		}
	}
	for _, sv := range want.Services {
		if !slices.Contains(l.c.Services, sv) {
			add = append(add, sv)
		}
	}
	if len(remove) > 0 {
		steps = append(steps, RollbackStep{Operation: domain.OpRemoveServices, Services: remove})
	}
	if want.Template.Version != l.c.Template.Version || want.Template.Name != l.c.Template.Name {
		if want.Template.Name != l.c.Template.Name {
			return nil, nil, &RevisionError{Field: "revision", Conflict: true,
				Message: fmt.Sprintf("revision %d used template %s, this cluster now uses %s; a cluster cannot change template", rev.Number, want.Template.Name, l.c.Template.Name)}
		}
		if _, err := s.cfg.Catalog.Resolve(ctx, p.Tenant, want.Template.Name, want.Template.Version); err != nil {
			if errors.Is(err, catalog.ErrNotFound) {
				return nil, nil, &RevisionError{Field: "revision", Conflict: true,
					Message: fmt.Sprintf("revision %d used version %d of template %s, which the catalog no longer has; put it back or roll back to another revision", rev.Number, want.Template.Version, want.Template.Name)}
			}
			return nil, nil, err
		}
		steps = append(steps, RollbackStep{Operation: domain.OpSyncTemplate, TemplateVersion: want.Template.Version})
	}
	if len(add) > 0 {
		// add-services takes definitions from the cluster's spec, which a
		// sync step before it replaces with the catalog's.
		from := l.sp.Services
		if len(steps) > 0 && steps[len(steps)-1].Operation == domain.OpSyncTemplate {
			_, next, err := s.specFromCatalog(ctx, p.Tenant)
			if err != nil {
				return nil, nil, err
			}
			from = next.Services
		}
		for _, sv := range add {
			if _, ok := from[sv]; !ok {
				return nil, nil, &RevisionError{Field: "revision", Conflict: true,
					Message: fmt.Sprintf("revision %d ran service %s, which neither the cluster's definitions nor the catalog have any more; put it back in the catalog and sync, or roll back to another revision", rev.Number, sv)}
			}
		}
		steps = append(steps, RollbackStep{Operation: domain.OpAddServices, Services: add})
	}
	if !bytes.Equal(domain.CanonicalJSON(want.Config), domain.CanonicalJSON(l.c.Config)) {
		steps = append(steps, RollbackStep{Operation: domain.OpReconfigure})
	}
	switch n := len(l.nodes); {
	case want.Size > n:
		if dryRun {
			var err error
			if quota, err = s.foresee(ctx, p.Tenant, 0, want.Size-n); err != nil {
				return nil, nil, err
			}
		} else if err := s.checkQuota(ctx, p.Tenant, 0, want.Size-n); err != nil {
			return nil, nil, err
		}
		steps = append(steps, RollbackStep{Operation: domain.OpExpand, Count: want.Size - n})
	case want.Size < n:
		steps = append(steps, RollbackStep{Operation: domain.OpShrink, Count: n - want.Size})
	}
	return steps, quota, nil
}

// runRollbackStep runs (or previews) one step through the operation it
// names, so it is planned, checked and previewed like that operation.
func (s *Service) runRollbackStep(ctx context.Context, p access.Principal, l *live, st RollbackStep, rev domain.Revision, restart, dryRun bool) (*Result, error) {
	id := l.c.ID
	switch st.Operation {
	case domain.OpSyncTemplate:
		return s.SyncTemplate(ctx, p, id, SyncRequest{TemplateVersion: st.TemplateVersion, Restart: restart}, dryRun)
	case domain.OpRemoveServices:
		return s.RemoveServices(ctx, p, id, RemoveServicesRequest{Services: st.Services, Restart: restart}, dryRun)
	case domain.OpAddServices:
		return s.AddServices(ctx, p, id, AddServicesRequest{Services: st.Services, Restart: restart}, dryRun)
	case domain.OpReconfigure:
		// Reconfigure takes only a new config; going back to none is a
		// config too, so the operation is built here.
		cfg := rev.Def.Config
		return s.run(ctx, p, l, operation{
			req:  planner.Request{Operation: domain.OpReconfigure, Restart: restart},
			edit: func(c *domain.Cluster) { c.Config = cfg },
		}, dryRun)
	case domain.OpExpand:
		return s.Expand(ctx, p, id, ExpandRequest{Count: st.Count, Restart: restart}, dryRun)
	case domain.OpShrink:
		return s.Shrink(ctx, p, id, ShrinkRequest{Count: st.Count, Restart: restart}, dryRun)
	}
	return nil, fmt.Errorf("rollback step %s has no operation", st.Operation)
}
