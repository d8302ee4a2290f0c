package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/heddle-io/heddle/internal/access"
	"github.com/heddle-io/heddle/internal/catalog"
	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/engine"
	"github.com/heddle-io/heddle/internal/secrets"
	"github.com/heddle-io/heddle/internal/store"
	"github.com/heddle-io/heddle/planner"
	"github.com/heddle-io/heddle/solver"
)

// CreateRequest asks for a new cluster from a template.
type CreateRequest struct {
	Name            string `json:"name"`
	Description     string `json:"description,omitempty"`
	Template        string `json:"template"`
	TemplateVersion int    `json:"templateVersion,omitempty"` // 0: the latest
	Size            int    `json:"size"`
	// Services default to the template's; Provider, HardwareType and
	// ImageType to its defaults.
	Services     []string `json:"services,omitempty"`
	Provider     string   `json:"provider,omitempty"`
	HardwareType string   `json:"hardwareType,omitempty"`
	ImageType    string   `json:"imageType,omitempty"`
	// ProviderFields are the provider type's user fields (a region, a
	// credential); sensitive ones are sealed at rest.
	ProviderFields map[string]string `json:"providerFields,omitempty"`
	// Config replaces the template's default config; DNSSuffix its suffix.
	Config    json.RawMessage `json:"config,omitempty"`
	DNSSuffix string          `json:"dnsSuffix,omitempty"`
	// Lease asks for a shorter first lease than the template's initial one.
	Lease domain.Duration `json:"lease,omitempty"`
	// KeepOnFailure keeps what a failed create made (for debugging) instead
	// of deleting it.
	KeepOnFailure bool `json:"keepOnFailure,omitempty"`
	// ManagedBy marks the cluster as owned by a tool (see
	// domain.Cluster.ManagedBy).
	ManagedBy string `json:"managedBy,omitempty"`
}

func (r *CreateRequest) validate() domain.Problems {
	var ps domain.Problems
	add := func(field, code, msg string) { ps = append(ps, domain.Problem{Field: field, Code: code, Message: msg}) }
	switch {
	case r.Name == "":
		add("name", domain.CodeRequired, "give the cluster a name")
	case len(r.Name) > 64:
		add("name", domain.CodeOutOfRange, "is longer than 64 characters")
	}
	if r.Template == "" {
		add("template", domain.CodeRequired, "name the cluster template to build from")
	}
	if r.TemplateVersion < 0 {
		add("templateVersion", domain.CodeOutOfRange, "versions are whole numbers from 1 (or 0 for the latest)")
	}
	if r.Size < 1 || r.Size > domain.MaxClusterSize {
		add("size", domain.CodeOutOfRange, fmt.Sprintf("must be between 1 and %d nodes", domain.MaxClusterSize))
	}
	if r.ManagedBy != "" && !domain.ValidName(r.ManagedBy) {
		add("managedBy", domain.CodeInvalid, managedByRule)
	}
	if r.Lease < 0 {
		add("lease", domain.CodeOutOfRange, "a lease cannot be negative")
	}
	if len(r.Config) > 0 {
		var v map[string]any
		if err := json.Unmarshal(r.Config, &v); err != nil {
			add("config", domain.CodeWrongType, "must be a JSON object")
		}
	}
	return ps
}

// Result is what a mutation answers: the cluster and its job, or, for a dry
// run, the plan preview and nothing written.
type Result struct {
	Cluster domain.Cluster   `json:"cluster"`
	Job     *domain.Job      `json:"job,omitempty"`
	Preview *planner.Preview `json:"preview,omitempty"`
	Layout  []solver.Group   `json:"layout,omitempty"`
	DryRun  bool             `json:"dryRun,omitempty"`
	// Refusal, on a dry run, says why the request would be refused if it
	// were sent for real (the tenant's quota); nil when it would be taken.
	Refusal *Refusal `json:"refusal,omitempty"`
	// Rollback, for a rollback, is its plan (rollback.go).
	Rollback *RollbackPlan `json:"rollback,omitempty"`
	// Autoscale, on a dry run of a create whose template sets a policy,
	// is the range of sizes the policy may take the cluster to.
	Autoscale *SizeRange `json:"autoscale,omitempty"`
}

// SizeRange is the least and the most nodes a policy may give a cluster:
// its range narrowed by the template's size constraint, and QuotaMax the
// most the tenant's free quota allows now (the policy never passes it).
type SizeRange struct {
	Min      int `json:"min"`
	Max      int `json:"max"`
	QuotaMax int `json:"quotaMax"`
}

// Refusal is a refusal a dry run foresees: the error code and sentence the
// real request would be answered with, and the limit it would pass: the
// tenant's quota (Limit, Max, InUse, Asked) or a static pool's free hosts
// (Pool, Free, Asked, and the request's Field that asks for the nodes).
type Refusal struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Limit   string `json:"limit,omitempty"`
	Max     int    `json:"max,omitempty"`
	InUse   int    `json:"inUse,omitempty"`
	Asked   int    `json:"asked"`
	Field   string `json:"field,omitempty"`
	Pool    string `json:"pool,omitempty"`
	Free    int    `json:"free,omitempty"`
}

// CodePoolExhausted is the code of a request for more nodes than a static
// pool has free hosts.
const CodePoolExhausted = "pool_exhausted"

// foreseeHold runs a submission's pool check: an error for the real
// request; for a dry run, a pool without room becomes its Refusal (the
// preview is still shown) and other errors end it.
func foreseeHold(hold func() (engine.Hold, error), dryRun bool) (*Refusal, error) {
	_, err := hold()
	var pe *PoolError
	switch {
	case err == nil:
		return nil, nil
	case dryRun && errors.As(err, &pe):
		return &Refusal{Code: CodePoolExhausted, Message: pe.Error(), Field: pe.Field, Pool: pe.Provider, Free: pe.Free, Asked: pe.Needed}, nil
	}
	return nil, err
}

// CodeQuotaExceeded is the code of a request beyond the tenant's quota.
const CodeQuotaExceeded = "quota_exceeded"

// foresee runs the quota check a real request would meet and turns a
// QuotaError into the dry run's Refusal; other errors end the dry run.
func (s *Service) foresee(ctx context.Context, tenant string, clusters, nodes int) (*Refusal, error) {
	err := s.checkQuota(ctx, tenant, clusters, nodes)
	var qe *QuotaError
	switch {
	case err == nil:
		return nil, nil
	case errors.As(err, &qe):
		return &Refusal{Code: CodeQuotaExceeded, Message: qe.Error(), Limit: qe.Limit, Max: qe.Max, InUse: qe.InUse, Asked: qe.Asked}, nil
	}
	return nil, err
}

// Create solves, plans and submits a new cluster. With dryRun it stops
// after planning and changes nothing.
func (s *Service) Create(ctx context.Context, p access.Principal, req CreateRequest, dryRun bool) (*Result, error) {
	if ps := req.validate(); len(ps) > 0 {
		return nil, ps
	}
	tenant := p.Tenant
	rev, err := s.cfg.Catalog.Revision(ctx, tenant)
	if err != nil {
		return nil, err
	}
	tmpl, err := s.cfg.Catalog.Resolve(ctx, tenant, req.Template, req.TemplateVersion)
	if err != nil {
		return nil, fieldNotFound(err, "template")
	}
	doc, sp, err := s.specFromCatalog(ctx, tenant)
	if err != nil {
		return nil, err
	}
	providerName := firstOf(req.Provider, tmpl.Defaults.Provider)
	if providerName == "" {
		return nil, domain.Problems{{Field: "provider", Code: domain.CodeRequired, Message: "the template names no default provider; name one"}}
	}
	prov, ok := findProvider(doc, providerName)
	if !ok {
		return nil, domain.Problems{{Field: "provider", Code: domain.CodeUnknownRef, Message: fmt.Sprintf("provider %q does not exist in this tenant's catalog", providerName)}}
	}
	sp.Provider = *prov
	if _, ok := s.cfg.Providers.Type(prov.ProviderType); !ok {
		return nil, domain.Problems{{Field: "provider", Code: domain.CodeInvalid, Message: fmt.Sprintf("provider %q is of type %q, which this heddle does not run", providerName, prov.ProviderType)}}
	}
	if ps := s.cfg.Providers.ValidateUserFields(prov.ProviderType, req.ProviderFields); len(ps) > 0 {
		return nil, prefixProblems(ps, "providerFields")
	}

	now := s.now()
	id := newClusterID(now)
	config := req.Config
	if len(config) == 0 {
		config = tmpl.Defaults.Config
	}
	in := createInputs{Size: req.Size, Services: req.Services, HardwareType: req.HardwareType, ImageType: req.ImageType, KeepOnFailure: req.KeepOnFailure}
	layout, plan, err := createPlan(id, tmpl, sp, providerName, in, config)
	if err != nil {
		return nil, err
	}
	c := domain.Cluster{
		ID: id, TenantID: tenant, Owner: p.User, Name: req.Name, Description: req.Description, ManagedBy: req.ManagedBy,
		Template: domain.TemplateRef{Name: tmpl.Name, Version: tmpl.Version}, Resolved: withDriftDefault(tmpl, prov.ProviderType),
		Provider: providerName, Services: servicesOn(layout.Nodes), Config: config,
		DNSSuffix: firstOf(req.DNSSuffix, tmpl.Defaults.DNSSuffix), Status: domain.ClusterPending, CreatedAt: now,
	}
	lease, err := firstLease(tmpl.Administration.Lease, time.Duration(req.Lease))
	if err != nil {
		return nil, err
	}
	if lease > 0 {
		c.ExpiresAt = now.Add(lease)
	}
	// The pool's room is checked in the dry run too: a preview of a layout
	// that cannot be built would promise what the submission refuses.
	hold := func() (engine.Hold, error) {
		return s.reserveHosts(ctx, tenant, *prov, id, nodeIDs(layout.Nodes), "size")
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
		refusal, err := s.foresee(ctx, tenant, 1, len(layout.Nodes))
		if err != nil {
			return nil, err
		}
		if poolRefusal != nil {
			refusal = poolRefusal // the submission checks the pool first
		}
		res := &Result{Cluster: c, Preview: pv.Bounded(PreviewItems), Layout: layout.Groups, DryRun: true, Refusal: refusal}
		if a := tmpl.Administration.Autoscale; a != nil {
			t, err := s.cfg.Access.GetTenant(ctx, tenant)
			if err != nil {
				return nil, err
			}
			lo, hi := domain.Bounds(a, tmpl.Constraints.Size)
			res.Autoscale = &SizeRange{Min: lo, Max: hi, QuotaMax: min(hi, max(0, t.MaxNodes-t.Usage.Nodes))}
		}
		return res, nil
	}
	if err := s.checkQuota(ctx, tenant, 1, len(layout.Nodes)); err != nil {
		return nil, err
	}
	// The engine's name reservation is the guard; this gives the live
	// clusters made before reservations existed theirs (once per tenant)
	// and finds one of this name among them.
	if holder, err := s.cfg.Engine.ReserveOldNames(ctx, tenant, req.Name); err != nil {
		return nil, err
	} else if holder != "" {
		return nil, &engine.NameTakenError{Name: req.Name, By: holder}
	}

	// The spec is written first: a crash before the job leaves an orphan spec
	// nobody reads, never a job whose executor cannot find its key.
	key, err := secrets.NewClusterKey(ctx, s.cfg.Keyring, tenant, id)
	if err != nil {
		return nil, fmt.Errorf("making the cluster's SSH key: %w", err)
	}
	sp.Key = key
	sp.ProviderFields, err = s.cfg.Providers.SealUserFields(ctx, s.cfg.Keyring, tenant, id, prov.ProviderType, req.ProviderFields)
	if err != nil {
		return nil, fmt.Errorf("sealing provider fields: %w", err)
	}
	if _, err := s.cfg.Store.Write(ctx, store.Put(store.Item{Key: specKey(tenant, id), Data: mustJSON(sp)}, store.Condition{MustNotExist: true})); err != nil {
		return nil, fmt.Errorf("writing the spec of cluster %s: %w", id, err)
	}
	sub := createSubmission(tenant, c, p.User, sp, layout, plan)
	sub.TakeClusters, sub.TakeNodes = 1, len(layout.Nodes)
	sub.Checks = []store.Op{revisionCheck(tenant, rev)}
	if s.planLaterNodes > 0 && len(layout.Nodes) >= s.planLaterNodes {
		// Large: the request writes the job and its inputs and answers;
		// the rest is planned and written in the background (replan.go).
		sub.Replan = mustJSON(in)
		sub.PlannedNodes = len(layout.Nodes)
		sub.PlannedTasks, _, _ = plan.Counts()
		sub.NewNodes, sub.Plan = nil, nil
		sub.OnSuccess.Nodes, sub.OnRollback.Nodes = nil, nil
	}
	job, err := s.submitHolding(ctx, sub, hold)
	var pe *PoolError
	if errors.As(err, &pe) {
		// Another create took the hosts between the check above and the
		// submission: no job was written, so neither is kept the spec.
		if _, derr := s.cfg.Store.Write(ctx, store.Delete(specKey(tenant, id), store.Condition{})); derr != nil {
			s.log.WarnContext(ctx, "deleting the spec of a refused create failed; nothing reads it", "cluster", id, "error", derr)
		}
	}
	if err != nil {
		return nil, s.submitError(ctx, tenant, err, 1, len(layout.Nodes))
	}
	s.log.InfoContext(ctx, "cluster create submitted", "tenant", tenant, "cluster", id, "nodes", len(layout.Nodes), "job", job.ID)
	c, _ = s.cfg.Engine.Cluster(ctx, tenant, id)
	return &Result{Cluster: c, Job: &job, Layout: layout.Groups}, nil
}

// revisionCheck holds while the tenant's catalog is still at the revision
// the plan was made from (invariant: a cluster is never built from a
// catalog that a concurrent delete or edit has already changed). The
// catalog's op names its key within the tenant's scope; Submit's checks
// take unscoped keys.
func revisionCheck(tenant string, rev int64) store.Op {
	op := catalog.RevisionCheck(rev)
	op.Key.PK = store.TenantPK(tenant, op.Key.PK)
	return op
}

// firstLease is how long a new cluster lives before it expires (0: never).
func firstLease(policy domain.LeasePolicy, asked time.Duration) (time.Duration, error) {
	initial := time.Duration(policy.Initial)
	if asked == 0 {
		return initial, nil
	}
	if initial > 0 && asked > initial {
		return 0, domain.Problems{{Field: "lease", Code: domain.CodeOutOfRange,
			Message: fmt.Sprintf("the template allows a first lease of at most %s; ask for less and extend it later", initial)}}
	}
	return asked, nil
}

// specFromCatalog reads the tenant's catalog (scripts aside: the spec names
// them) into a cluster's spec, with every script resource its services run
// pinned to the version that is the latest now. A cluster's jobs then all
// run the scripts its plan was made with, however many versions are pushed
// while they run, until a sync makes a new spec.
func (s *Service) specFromCatalog(ctx context.Context, tenant string) (*catalog.Document, *spec, error) {
	kinds := slices.DeleteFunc(slices.Clone(domain.Kinds), func(k domain.Kind) bool { return k == domain.KindScript })
	doc, err := s.cfg.Catalog.ExportKinds(ctx, tenant, kinds...)
	if err != nil {
		return nil, nil, err
	}
	sp := specFromDocument(doc)
	latest := map[string]string{}
	for name, svc := range sp.Services {
		for action, act := range svc.Actions {
			script := act.Fields[domain.FieldScriptResource]
			if script == "" || act.Fields[domain.FieldScriptVersion] != "" {
				continue
			}
			if _, ok := latest[script]; !ok {
				sc, err := s.cfg.Catalog.Script(ctx, tenant, script, 0)
				if err != nil {
					return nil, nil, fmt.Errorf("service %s, action %s: %w", name, action, err)
				}
				latest[script] = strconv.Itoa(sc.Version)
			}
			act.Fields = maps.Clone(act.Fields)
			act.Fields[domain.FieldScriptVersion] = latest[script]
			svc.Actions[action] = act
		}
		sp.Services[name] = svc
	}
	return doc, sp, nil
}

func specFromDocument(doc *catalog.Document) *spec {
	sp := &spec{HardwareTypes: map[string]domain.HardwareType{}, ImageTypes: map[string]domain.ImageType{}, Services: map[string]domain.Service{}}
	for _, h := range doc.HardwareTypes {
		sp.HardwareTypes[h.Name] = *h
	}
	for _, i := range doc.ImageTypes {
		sp.ImageTypes[i.Name] = *i
	}
	for _, svc := range doc.Services {
		sp.Services[svc.Name] = *svc
	}
	return sp
}

func findProvider(doc *catalog.Document, name string) (*domain.Provider, bool) {
	for _, p := range doc.Providers {
		if p.Name == name {
			return p, true
		}
	}
	return nil, false
}

func firstOf(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}

func prefixProblems(ps domain.Problems, prefix string) domain.Problems {
	out := make(domain.Problems, len(ps))
	for i, p := range ps {
		if p.Field == "" {
			p.Field = prefix
		} else {
			p.Field = prefix + "." + p.Field
		}
		out[i] = p
	}
	return out
}

// fieldNotFound turns "template does not exist" into a problem at the
// request's field, so a person sees which part of the request to fix.
func fieldNotFound(err error, field string) error {
	if errors.Is(err, catalog.ErrNotFound) {
		return domain.Problems{{Field: field, Code: domain.CodeUnknownRef, Message: err.Error()}}
	}
	return err
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("cluster: cannot encode %T: %v", v, err))
	}
	return b
}
