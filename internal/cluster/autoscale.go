package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/heddle-io/heddle/internal/access"
	"github.com/heddle-io/heddle/internal/audit"
	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/engine"
	"github.com/heddle-io/heddle/internal/events"
	"github.com/heddle-io/heddle/internal/store"
)

// PolicyActor is the user an autoscale decision's job and audit record
// name: the policy acted, not the cluster's owner.
const PolicyActor = "policy:autoscale"

// autoscaleState is the body of a cluster's autoscale item (see the
// engine's autoscale.go).
type autoscaleState struct {
	Override    *domain.Autoscale                 `json:"override,omitempty"`
	Metrics     map[string]domain.AutoscaleMetric `json:"metrics,omitempty"`
	Decisions   []domain.AutoscaleDecision        `json:"decisions,omitempty"`
	LastScaleAt time.Time                         `json:"lastScaleAt,omitzero"`
	// Last is the latest evaluation, a hold included, so `heddle clusters
	// autoscale` can say why the cluster is the size it is.
	Last *domain.AutoscaleDecision `json:"last,omitempty"`
}

// AutoscaleView is a cluster's policy as GET /v1/clusters/{id}/autoscale
// answers it.
type AutoscaleView struct {
	Cluster string            `json:"cluster"`
	Policy  *domain.Autoscale `json:"policy"`
	// Source is "template" or "cluster" (an override).
	Source string `json:"source"`
	// Min and Max are the range the policy keeps the cluster in, narrowed
	// by the template's size constraint.
	Min            int                               `json:"min"`
	Max            int                               `json:"max"`
	Size           int                               `json:"size"`
	Metrics        map[string]domain.AutoscaleMetric `json:"metrics,omitempty"`
	Last           *domain.AutoscaleDecision         `json:"last,omitempty"`
	Decisions      []domain.AutoscaleDecision        `json:"decisions"`
	NextEvaluation time.Time                         `json:"nextEvaluation,omitzero"`
}

func policyOf(c domain.Cluster, st autoscaleState) (*domain.Autoscale, string) {
	if st.Override != nil {
		return st.Override, "cluster"
	}
	if c.Resolved != nil && c.Resolved.Administration.Autoscale != nil {
		return c.Resolved.Administration.Autoscale, "template"
	}
	return nil, ""
}

func sizeOf(c domain.Cluster) domain.SizeConstraint {
	if c.Resolved == nil {
		return domain.SizeConstraint{}
	}
	return c.Resolved.Constraints.Size
}

// loadAutoscale reads the cluster's autoscale item; a missing one is an
// empty state with a nil item.
func (s *Service) loadAutoscale(ctx context.Context, tenant, id string) (*store.Item, autoscaleState, error) {
	var st autoscaleState
	it, err := s.cfg.Store.Get(ctx, engine.AutoscaleKey(tenant, id))
	if errors.Is(err, store.ErrNotFound) {
		return nil, st, nil
	}
	if err != nil {
		return nil, st, fmt.Errorf("reading the autoscale state of cluster %s: %w", id, err)
	}
	if len(it.Data) == 0 {
		return &it, st, nil // armed by the create's end, nothing written yet
	}
	if err := json.Unmarshal(it.Data, &st); err != nil {
		return nil, st, fmt.Errorf("decoding the autoscale state of cluster %s: %w", id, err)
	}
	return &it, st, nil
}

// saveAutoscale writes st on the version read (it nil: creating it), due
// at due (zero: out of the janitor's index).
func (s *Service) saveAutoscale(ctx context.Context, tenant, id string, it *store.Item, st autoscaleState, due time.Time) error {
	data, err := json.Marshal(st)
	if err != nil {
		return err
	}
	key := engine.AutoscaleKey(tenant, id)
	var index *store.IndexKey
	if !due.IsZero() {
		index = engine.AutoscaleIndex(tenant, id, due)
	}
	var op store.Op
	if it == nil {
		op = store.Put(store.Item{Key: key, Data: data, Index: index}, store.Condition{MustNotExist: true})
	} else {
		op = store.Update(key, store.Condition{Version: it.Version}, store.Changes{Data: data, Index: index, ClearIndex: index == nil})
	}
	_, err = s.cfg.Store.Write(ctx, op)
	return err
}

// edit applies change to the cluster's autoscale state and saves it due
// now, again on a concurrent write (a push racing the janitor).
func (s *Service) editAutoscale(ctx context.Context, tenant, id string, change func(*autoscaleState)) (autoscaleState, error) {
	for attempt := 0; ; attempt++ {
		it, st, err := s.loadAutoscale(ctx, tenant, id)
		if err != nil {
			return st, err
		}
		change(&st)
		err = s.saveAutoscale(ctx, tenant, id, it, st, s.now())
		if err == nil || attempt == 4 || !errors.Is(err, store.ErrConditionFailed) {
			return st, err
		}
	}
}

func (s *Service) autoscaleView(c domain.Cluster, st autoscaleState, it *store.Item) AutoscaleView {
	policy, source := policyOf(c, st)
	v := AutoscaleView{Cluster: c.ID, Policy: policy, Source: source, Size: c.NodeCount, Metrics: st.Metrics,
		Last: st.Last, Decisions: st.Decisions}
	if v.Decisions == nil {
		v.Decisions = []domain.AutoscaleDecision{}
	}
	if policy != nil {
		v.Min, v.Max = domain.Bounds(policy, sizeOf(c))
	}
	if it != nil && it.Index != nil {
		if ms, err := strconv.ParseInt(it.Index.Sort, 10, 64); err == nil {
			v.NextEvaluation = time.UnixMilli(ms).UTC()
		}
	}
	return v
}

// Autoscale shows the cluster's policy, the metrics pushed for it and its
// last decisions.
func (s *Service) Autoscale(ctx context.Context, p access.Principal, id string) (AutoscaleView, error) {
	c, err := s.visible(ctx, p, id)
	if err != nil {
		return AutoscaleView{}, err
	}
	it, st, err := s.loadAutoscale(ctx, p.Tenant, id)
	if err != nil {
		return AutoscaleView{}, err
	}
	return s.autoscaleView(c, st, it), nil
}

// SetAutoscale overrides the cluster's policy within its template's: the
// range may narrow, never widen. The policy is evaluated at the next pass.
func (s *Service) SetAutoscale(ctx context.Context, p access.Principal, id string, policy domain.Autoscale) (AutoscaleView, error) {
	c, err := s.visible(ctx, p, id)
	if err != nil {
		return AutoscaleView{}, err
	}
	if c.Status.Terminal() {
		return AutoscaleView{}, &StateError{Cluster: id, Status: c.Status, Reason: "it was deleted; create a new cluster"}
	}
	var tmpl *domain.Autoscale
	if c.Resolved != nil {
		tmpl = c.Resolved.Administration.Autoscale
	}
	ps := policy.Problems("")
	if len(ps) == 0 {
		ps = policy.WithinTemplate(tmpl, sizeOf(c), "")
	}
	for i := range ps {
		ps[i].Field = trimDot(ps[i].Field)
	}
	if len(ps) > 0 {
		return AutoscaleView{}, ps
	}
	if _, err := s.editAutoscale(ctx, p.Tenant, id, func(st *autoscaleState) { st.Override = &policy }); err != nil {
		return AutoscaleView{}, err
	}
	return s.Autoscale(ctx, p, id)
}

func trimDot(f string) string {
	if len(f) > 0 && f[0] == '.' {
		return f[1:]
	}
	if f == "" {
		return "policy"
	}
	return f
}

// MetricsRequest is what an outside monitor pushes: the latest value of
// each metric it watches.
type MetricsRequest struct {
	Metrics []MetricValue `json:"metrics"`
}

// MetricValue is one metric's latest value.
type MetricValue struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
}

// MaxPushedMetrics bounds a push, and the metrics a cluster keeps.
const MaxPushedMetrics = 20

// PushMetrics records the metrics' values for the cluster's policy, and
// has the janitor evaluate it at its next pass.
func (s *Service) PushMetrics(ctx context.Context, p access.Principal, id string, req MetricsRequest) (AutoscaleView, error) {
	var ps domain.Problems
	if len(req.Metrics) == 0 || len(req.Metrics) > MaxPushedMetrics {
		ps = append(ps, domain.Problem{Field: "metrics", Code: domain.CodeOutOfRange,
			Message: fmt.Sprintf("push between 1 and %d metrics at once", MaxPushedMetrics)})
	}
	seen := map[string]bool{}
	for i, m := range req.Metrics {
		switch {
		case !domain.ValidMetricName(m.Name):
			ps = append(ps, domain.Problem{Field: fmt.Sprintf("metrics[%d].name", i), Code: domain.CodeInvalid,
				Message: fmt.Sprintf("%q is not a metric name: lower-case letters, digits, '_' and '.', starting with a letter, at most 63", m.Name)})
		case seen[m.Name]:
			ps = append(ps, domain.Problem{Field: fmt.Sprintf("metrics[%d].name", i), Code: domain.CodeDuplicate,
				Message: fmt.Sprintf("%q is pushed twice; push each metric once", m.Name)})
		}
		seen[m.Name] = true
		if math.IsNaN(m.Value) || math.IsInf(m.Value, 0) || math.Abs(m.Value) > 1e15 {
			ps = append(ps, domain.Problem{Field: fmt.Sprintf("metrics[%d].value", i), Code: domain.CodeOutOfRange,
				Message: "give a finite number of magnitude at most 1e15"})
		}
	}
	if len(ps) > 0 {
		return AutoscaleView{}, ps
	}
	c, err := s.visible(ctx, p, id)
	if err != nil {
		return AutoscaleView{}, err
	}
	if c.Status.Terminal() {
		return AutoscaleView{}, &StateError{Cluster: id, Status: c.Status, Reason: "it was deleted; create a new cluster"}
	}
	_, st, err := s.loadAutoscale(ctx, p.Tenant, id)
	if err != nil {
		return AutoscaleView{}, err
	}
	if policy, _ := policyOf(c, st); policy == nil {
		return AutoscaleView{}, domain.Problems{{Field: "metrics", Code: domain.CodeConflict,
			Message: "the cluster has no autoscale policy; its template's administration.autoscale sets one"}}
	}
	now := s.now()
	var full bool
	if _, err := s.editAutoscale(ctx, p.Tenant, id, func(st *autoscaleState) {
		if st.Metrics == nil {
			st.Metrics = map[string]domain.AutoscaleMetric{}
		}
		full = false
		for _, m := range req.Metrics {
			if _, ok := st.Metrics[m.Name]; !ok && len(st.Metrics) >= MaxPushedMetrics {
				full = true
				continue
			}
			st.Metrics[m.Name] = domain.AutoscaleMetric{Value: m.Value, At: now}
		}
	}); err != nil {
		return AutoscaleView{}, err
	}
	if full {
		return AutoscaleView{}, domain.Problems{{Field: "metrics", Code: domain.CodeOutOfRange,
			Message: fmt.Sprintf("the cluster keeps at most %d metrics; the values of known ones were recorded, new names were not", MaxPushedMetrics)}}
	}
	return s.Autoscale(ctx, p, id)
}

// AutoscaleDue is the janitor's hook (engine.Config.Autoscale): it
// evaluates the cluster's policy and, when the size should change, submits
// an ordinary expand or shrink (the solver, planner, quota and pool checks
// and pre-start hooks a user's goes through) in the policy's name. It
// never submits while any job holds the cluster: the engine's lock makes
// the submission itself refuse a job that took it meanwhile.
func (s *Service) AutoscaleDue(ctx context.Context, tenant, id string) (bool, error) {
	it, st, err := s.loadAutoscale(ctx, tenant, id)
	if err != nil || it == nil {
		return false, err
	}
	c, err := s.cfg.Engine.Cluster(ctx, tenant, id)
	if errors.Is(err, engine.ErrNotFound) || err == nil && c.Status.Terminal() {
		_, err := s.cfg.Store.Write(ctx, store.Delete(it.Key, store.Condition{Version: it.Version}))
		if errors.Is(err, store.ErrConditionFailed) {
			return false, nil
		}
		return false, err
	}
	if err != nil {
		return false, err
	}
	now := s.now()
	next := now.Add(engine.AutoscaleEvery)
	policy, _ := policyOf(c, st)
	if policy != nil && policy.Target != nil && !st.LastScaleAt.IsZero() {
		// A cooldown shorter than the period ends at its own time, not at
		// the next whole period.
		if end := st.LastScaleAt.Add(policy.Target.Cooldown.Std()); end.After(now) && end.Before(next) {
			next = end
		}
	}
	if policy == nil {
		return false, s.saveIgnoringRace(ctx, tenant, id, it, st, time.Time{})
	}
	if c.ActiveJobID != "" || c.Status != domain.ClusterActive {
		// Never over another job, and never on a cluster a person must
		// look at (INCONSISTENT, FAILED): wait for the next pass.
		return false, s.saveIgnoringRace(ctx, tenant, id, it, st, next)
	}
	in := domain.AutoscaleInput{Now: now, Size: c.NodeCount, Constraint: sizeOf(c), Metrics: st.Metrics,
		LastScaleAt: st.LastScaleAt, FreeNodes: -1}
	v := policy.Decide(in)
	if v.To > c.NodeCount {
		// Only a decision to grow reads the quota.
		t, err := s.cfg.Access.GetTenant(ctx, tenant)
		if err != nil {
			return false, err
		}
		in.FreeNodes = max(0, t.MaxNodes-t.Usage.Nodes)
		v = policy.Decide(in)
	}
	d := domain.AutoscaleDecision{At: now, From: c.NodeCount, To: v.To, Reason: v.Reason}
	st.Last = &d
	if v.To == c.NodeCount {
		return false, s.saveIgnoringRace(ctx, tenant, id, it, st, next)
	}
	p := access.Principal{Tenant: tenant, User: PolicyActor, Role: domain.RoleAdmin}
	var res *Result
	op := domain.OpExpand
	if v.To > c.NodeCount {
		res, err = s.Expand(ctx, p, id, ExpandRequest{Count: v.To - c.NodeCount}, false)
	} else {
		op = domain.OpShrink
		res, err = s.Shrink(ctx, p, id, ShrinkRequest{Count: c.NodeCount - v.To}, false)
	}
	if errors.Is(err, engine.ErrClusterBusy) {
		// A user's job took the lock since the cluster was read: it wins.
		return false, s.saveIgnoringRace(ctx, tenant, id, it, st, next)
	}
	if err != nil && len(st.Decisions) > 0 {
		// The same refusal as last time (the solver's, a pool's) is the
		// latest evaluation, not a new decision: no event or audit record
		// a minute for as long as it lasts.
		if prev := st.Decisions[len(st.Decisions)-1]; prev.Job == "" && prev.From == d.From && prev.To == d.To && prev.Refused == err.Error() {
			d.Refused = prev.Refused
			st.Last = &d
			return false, s.saveIgnoringRace(ctx, tenant, id, it, st, next)
		}
	}
	ev := events.Event{Type: events.ClusterAutoscale, At: now, Cluster: id, Operation: string(op), Status: "submitted",
		Message: truncate(v.Reason, events.MaxMessage), Counts: map[string]int{"from": d.From, "to": d.To}}
	if err != nil {
		d.Refused = err.Error()
		ev.Status, ev.Message = "refused", truncate(d.Refused, events.MaxMessage)
	} else {
		d.Job, ev.Job = res.Job.ID, res.Job.ID
		st.LastScaleAt = now
	}
	st.Last = &d
	st.Decisions = append(st.Decisions, d)
	if len(st.Decisions) > domain.MaxAutoscaleDecisions {
		st.Decisions = st.Decisions[len(st.Decisions)-domain.MaxAutoscaleDecisions:]
	}
	rec := audit.Record{At: now, Tenant: tenant, User: PolicyActor, Method: http.MethodPost,
		Route: "/v1/clusters/{cluster}/" + string(op), Path: "/v1/clusters/" + id + "/" + string(op),
		Target: map[string]string{"cluster": id}, RequestID: "autoscale-" + now.Format("20060102T150405Z"),
		Status: http.StatusAccepted, Outcome: audit.Done}
	if d.Job != "" {
		rec.Target["job"] = d.Job
	} else {
		rec.Status, rec.Outcome = http.StatusConflict, audit.Refused
	}
	if werr := s.saveDecision(ctx, tenant, id, it, st, d, next); werr != nil {
		return d.Job != "", werr
	}
	if _, werr := s.cfg.Store.Write(ctx, events.Op(tenant, ev)); werr != nil {
		return d.Job != "", fmt.Errorf("recording the autoscale event: %w", werr)
	}
	if werr := audit.New(s.cfg.Store).Append(ctx, rec); werr != nil {
		return d.Job != "", fmt.Errorf("auditing the autoscale decision: %w", werr)
	}
	s.log.InfoContext(ctx, "autoscale decision", "tenant", tenant, "cluster", id, "from", d.From, "to", d.To, "job", d.Job, "refused", d.Refused)
	return d.Job != "", nil
}

// saveIgnoringRace saves an evaluation that decided nothing: a push or
// an override written meanwhile wins, and has the next pass look again.
func (s *Service) saveIgnoringRace(ctx context.Context, tenant, id string, it *store.Item, st autoscaleState, due time.Time) error {
	err := s.saveAutoscale(ctx, tenant, id, it, st, due)
	if errors.Is(err, store.ErrConditionFailed) {
		return nil
	}
	return err
}

// saveDecision records a decision whatever was written meanwhile: a lost
// LastScaleAt would let the next pass scale again inside the cooldown.
func (s *Service) saveDecision(ctx context.Context, tenant, id string, it *store.Item, st autoscaleState, d domain.AutoscaleDecision, due time.Time) error {
	for attempt := 0; ; attempt++ {
		err := s.saveAutoscale(ctx, tenant, id, it, st, due)
		if err == nil || attempt == 4 || !errors.Is(err, store.ErrConditionFailed) {
			if err != nil {
				return fmt.Errorf("recording the autoscale decision of cluster %s: %w", id, err)
			}
			return nil
		}
		var fresh autoscaleState
		if it, fresh, err = s.loadAutoscale(ctx, tenant, id); err != nil {
			return err
		}
		if it == nil {
			return nil // the cluster ended meanwhile
		}
		fresh.Last = st.Last
		fresh.Decisions = st.Decisions
		if d.Job != "" {
			fresh.LastScaleAt = d.At
		}
		st = fresh
	}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}
