package assemble

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/access"
	"github.com/heddle-io/heddle/internal/audit"
	"github.com/heddle-io/heddle/internal/automator"
	"github.com/heddle-io/heddle/internal/automator/shell"
	"github.com/heddle-io/heddle/internal/catalog"
	"github.com/heddle-io/heddle/internal/cluster"
	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/events"
	"github.com/heddle-io/heddle/internal/queue/memqueue"
)

const autoscaleCatalog = `
apiVersion: heddle/v1
providers:
  - {name: local, providerType: local}
hardwareTypes:
  - {name: small, providerMap: {local: {flavor: small}}}
imageTypes:
  - {name: debian, providerMap: {local: {image: host}}}
services:
  - name: app
    actions:
      install: {type: shell, fields: {script: 'true'}}
clusterTemplates:
  - name: elastic
    compatibility: {services: [app]}
    defaults: {services: [app], provider: local, hardwareType: small, imageType: debian}
    constraints: {size: {min: 1, max: 10}}
    administration:
      autoscale:
        min: 1
        max: 4
        target: {metric: queue_depth, value: 10, cooldown: 5m, hysteresis: 0.1, maxStep: 2}
  - name: capped
    description: A policy wider than what the solver may build (app on at most 2 nodes).
    compatibility: {services: [app]}
    defaults: {services: [app], provider: local, hardwareType: small, imageType: debian}
    constraints: {size: {min: 1, max: 10}, services: {app: {quantities: {max: 2}}}}
    administration:
      autoscale:
        min: 1
        max: 4
        target: {metric: queue_depth, value: 10}
`

// clock is a fake clock the engine and the cluster service share.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Add(d time.Duration) { c.mu.Lock(); c.now = c.now.Add(d); c.mu.Unlock() }

type scaler struct {
	t     testing.TB
	p     Parts
	svc   *Services
	clock *clock
	who   access.Principal
}

func newScaler(t testing.TB, maxNodes int, wrap ...func(Parts) Parts) *scaler {
	t.Helper()
	p := parts(t)
	for _, w := range wrap {
		p = w(p)
	}
	sh := shell.New(shell.Config{})
	t.Cleanup(sh.Close)
	p.Automators = map[string]automator.Automator{shell.Type: sh}
	clk := &clock{now: time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)}
	p.Engine.Clock = clk.Now
	svc, err := Build(p)
	require.NoError(t, err)
	ctx := context.Background()
	_, _, err = svc.Access.CreateTenant(ctx, domain.Tenant{ID: "acme", Workers: 1, MaxClusters: 20, MaxNodes: maxNodes}, "")
	require.NoError(t, err)
	require.NoError(t, p.Queue.(*memqueue.Queue).CreateTenantQueue(ctx, "acme"))
	doc, err := catalog.DecodeDocument([]byte(autoscaleCatalog))
	require.NoError(t, err)
	_, err = svc.Catalog.Import(ctx, "acme", doc)
	require.NoError(t, err)
	return &scaler{t: t, p: p, svc: svc, clock: clk, who: access.Principal{Tenant: "acme", User: "ann", Role: domain.RoleAdmin}}
}

// work runs the tenant's queued messages until no job holds the cluster.
func (s *scaler) work(id string) domain.Cluster {
	s.t.Helper()
	ctx := context.Background()
	for range 2000 {
		c, err := s.svc.Engine.Cluster(ctx, "acme", id)
		require.NoError(s.t, err)
		if c.ActiveJobID == "" {
			return c
		}
		ds, err := s.p.Queue.Receive(ctx, "acme", 10, 50*time.Millisecond, time.Minute)
		require.NoError(s.t, err)
		for _, d := range ds {
			disp, err := s.svc.Engine.Handle(ctx, "acme", d)
			require.NoError(s.t, err)
			if disp.Delay <= 0 {
				require.NoError(s.t, s.p.Queue.Ack(ctx, "acme", d.Receipt))
			}
		}
	}
	s.t.Fatalf("cluster %s: its job did not end", id)
	return domain.Cluster{}
}

// pass pushes value (when >= 0), moves the clock by d and runs a janitor
// pass; it returns the cluster's policy view after it.
func (s *scaler) pass(id string, value float64, d time.Duration) cluster.AutoscaleView {
	s.t.Helper()
	ctx := context.Background()
	if value >= 0 {
		_, err := s.svc.Clusters.PushMetrics(ctx, s.who, id, cluster.MetricsRequest{Metrics: []cluster.MetricValue{{Name: "queue_depth", Value: value}}})
		require.NoError(s.t, err)
	}
	s.clock.Add(d)
	_, err := s.svc.Engine.RunJanitor(ctx)
	require.NoError(s.t, err)
	v, err := s.svc.Clusters.Autoscale(ctx, s.who, id)
	require.NoError(s.t, err)
	return v
}

// TestAutoscaleTracksAPushedMetric: a metric above the target scales the
// cluster out by at most maxStep through an ordinary expand in the
// policy's name; the cooldown holds the next decision; the quota caps the
// size; a user's job is never joined; a metric below the target scales in
// to the minimum and never below it.
func TestAutoscaleTracksAPushedMetric(t *testing.T) {
	t.Parallel()
	s := newScaler(t, 3)
	ctx := context.Background()
	res, err := s.svc.Clusters.Create(ctx, s.who, cluster.CreateRequest{Name: "shop", Template: "elastic", Size: 1}, false)
	require.NoError(t, err)
	id := res.Cluster.ID
	require.Equal(t, 1, s.work(id).NodeCount)

	v := s.pass(id, 100, time.Minute)
	require.Len(t, v.Decisions, 1, "%+v", v.Last)
	d := v.Decisions[0]
	require.Equal(t, 1, d.From)
	require.Equal(t, 3, d.To, "ten times the target, at most 2 nodes a step")
	require.NotEmpty(t, d.Job, d.Refused)
	require.Contains(t, d.Reason, "queue_depth is 100, above the target 10")
	job, err := s.svc.Engine.Job(ctx, "acme", id, d.Job)
	require.NoError(t, err)
	require.Equal(t, domain.OpExpand, job.Operation)
	require.Equal(t, cluster.PolicyActor, job.RequestedBy)
	require.Equal(t, 3, s.work(id).NodeCount)

	// Within the cooldown: nothing, and the evaluation says why.
	v = s.pass(id, 100, time.Minute)
	require.Len(t, v.Decisions, 1)
	require.Equal(t, 3, v.Last.To)
	require.Contains(t, v.Last.Reason, "cooling down until")

	// Past the cooldown, the quota (3 nodes) is the cap though max is 4.
	v = s.pass(id, 100, 5*time.Minute)
	require.Len(t, v.Decisions, 1)
	require.Equal(t, 3, v.Last.To)
	require.Contains(t, v.Last.Reason, "the tenant's quota allows 0 more nodes")

	// A user's job holds the cluster: the policy waits for it.
	user, err := s.svc.Clusters.Shrink(ctx, s.who, id, cluster.ShrinkRequest{Count: 1}, false)
	require.NoError(t, err)
	v = s.pass(id, 1, time.Minute)
	require.Len(t, v.Decisions, 1, "no decision over a user's job")
	c, err := s.svc.Engine.Cluster(ctx, "acme", id)
	require.NoError(t, err)
	require.Equal(t, user.Job.ID, c.ActiveJobID)
	require.Equal(t, 2, s.work(id).NodeCount)

	// Below the target: in to the minimum, then never below it.
	v = s.pass(id, 1, time.Minute)
	require.Len(t, v.Decisions, 2)
	d = v.Decisions[1]
	require.Equal(t, 2, d.From)
	require.Equal(t, 1, d.To)
	require.NotEmpty(t, d.Job, d.Refused)
	require.Equal(t, 1, s.work(id).NodeCount)
	v = s.pass(id, 0, 10*time.Minute)
	require.Len(t, v.Decisions, 2)
	require.Equal(t, 1, v.Last.To)
	require.Contains(t, v.Last.Reason, "kept at the minimum 1")

	// Every decision left an event and an audit record in the policy's name.
	evs, _, err := events.New(s.p.Store).List(ctx, "acme", id, "", 100, "")
	require.NoError(t, err)
	var ops []string
	for _, e := range evs {
		if e.Type == events.ClusterAutoscale {
			require.Equal(t, "submitted", e.Status)
			ops = append(ops, e.Operation)
		}
	}
	require.ElementsMatch(t, []string{"expand", "shrink"}, ops)
	recs, _, err := audit.New(s.p.Store).List(ctx, "acme", 100, "")
	require.NoError(t, err)
	policy := 0
	for _, r := range recs {
		if r.User == cluster.PolicyActor {
			policy++
			require.Equal(t, id, r.Target["cluster"])
			require.NotEmpty(t, r.Target["job"])
		}
	}
	require.Equal(t, 2, policy)
}

// TestAutoscaleOverrideStaysWithinTheTemplate: an override may narrow the
// template's range, never widen it; bad input changes nothing and says
// which field; metrics are bounded and validated.
func TestAutoscaleOverrideStaysWithinTheTemplate(t *testing.T) {
	t.Parallel()
	s := newScaler(t, 10)
	ctx := context.Background()
	res, err := s.svc.Clusters.Create(ctx, s.who, cluster.CreateRequest{Name: "shop", Template: "elastic", Size: 1}, false)
	require.NoError(t, err)
	id := res.Cluster.ID
	s.work(id)

	_, err = s.svc.Clusters.SetAutoscale(ctx, s.who, id, domain.Autoscale{Min: 1, Max: 9, Target: &domain.AutoscaleTarget{Metric: "queue_depth", Value: 5}})
	var ps domain.Problems
	require.ErrorAs(t, err, &ps)
	require.Equal(t, "max", ps[0].Field)
	require.Contains(t, ps[0].Message, "above the template's maximum 4")
	_, err = s.svc.Clusters.SetAutoscale(ctx, s.who, id, domain.Autoscale{Min: 1, Max: 2,
		Schedules: []domain.AutoscaleSchedule{{Cron: "0 8 * * 1-5", Timezone: "Mars/Olympus", Size: 2}}})
	require.ErrorAs(t, err, &ps)
	require.Equal(t, "schedules[0].timezone", ps[0].Field)
	v, err := s.svc.Clusters.Autoscale(ctx, s.who, id)
	require.NoError(t, err)
	require.Equal(t, "template", v.Source, "a refused override changes nothing")

	v, err = s.svc.Clusters.SetAutoscale(ctx, s.who, id, domain.Autoscale{Min: 2, Max: 2,
		Schedules: []domain.AutoscaleSchedule{{Cron: "@daily", Size: 2}}})
	require.NoError(t, err)
	require.Equal(t, "cluster", v.Source)
	require.Equal(t, 2, v.Min)
	v = s.pass(id, -1, time.Minute)
	require.Len(t, v.Decisions, 1)
	require.Equal(t, 2, v.Decisions[0].To)
	require.Contains(t, v.Decisions[0].Reason, "schedule 0")
	require.Equal(t, 2, s.work(id).NodeCount)

	for _, bad := range []struct {
		req   cluster.MetricsRequest
		field string
	}{
		{cluster.MetricsRequest{}, "metrics"},
		{cluster.MetricsRequest{Metrics: []cluster.MetricValue{{Name: "Queue", Value: 1}}}, "metrics[0].name"},
		{cluster.MetricsRequest{Metrics: []cluster.MetricValue{{Name: "q", Value: 1}, {Name: "q", Value: 2}}}, "metrics[1].name"},
		{cluster.MetricsRequest{Metrics: []cluster.MetricValue{{Name: "q", Value: 1e300}}}, "metrics[0].value"},
	} {
		_, err := s.svc.Clusters.PushMetrics(ctx, s.who, id, bad.req)
		require.ErrorAs(t, err, &ps, "%+v", bad.req)
		require.Equal(t, bad.field, ps[0].Field)
	}
	v, err = s.svc.Clusters.Autoscale(ctx, s.who, id)
	require.NoError(t, err)
	require.Empty(t, v.Metrics, "a refused push records nothing")
}

// A value pushed while the create runs is kept when the create's end arms
// the policy, and its first evaluation, due at once, reads it.
func TestAutoscaleKeepsWhatWasPushedDuringTheCreate(t *testing.T) {
	t.Parallel()
	s := newScaler(t, 10)
	ctx := context.Background()
	res, err := s.svc.Clusters.Create(ctx, s.who, cluster.CreateRequest{Name: "shop", Template: "elastic", Size: 1}, false)
	require.NoError(t, err)
	id := res.Cluster.ID
	_, err = s.svc.Clusters.PushMetrics(ctx, s.who, id, cluster.MetricsRequest{Metrics: []cluster.MetricValue{{Name: "queue_depth", Value: 20}}})
	require.NoError(t, err)
	s.work(id)
	v := s.pass(id, -1, time.Second)
	require.Len(t, v.Decisions, 1, "%+v", v.Last)
	require.Equal(t, 2, v.Decisions[0].To)
	require.Equal(t, 20.0, v.Metrics["queue_depth"].Value)

	// A cooldown shorter than the period: the hold inside it is evaluated
	// again when it ends, not a whole period later.
	_, err = s.svc.Clusters.SetAutoscale(ctx, s.who, id, domain.Autoscale{Min: 1, Max: 4,
		Target: &domain.AutoscaleTarget{Metric: "queue_depth", Value: 10, Cooldown: domain.Duration(20 * time.Second)}})
	require.NoError(t, err)
	s.work(id)
	v = s.pass(id, 40, time.Second)
	require.Contains(t, v.Last.Reason, "cooling down until")
	require.Equal(t, v.Decisions[0].At.Add(20*time.Second), v.NextEvaluation)
}

// A decision the cluster service refuses (here the solver: app runs on at
// most 2 nodes) is recorded once with why, with a "refused" event; the
// same refusal on later passes is only the latest evaluation.
func TestAutoscaleRecordsARefusalOnce(t *testing.T) {
	t.Parallel()
	s := newScaler(t, 10)
	ctx := context.Background()
	res, err := s.svc.Clusters.Create(ctx, s.who, cluster.CreateRequest{Name: "shop", Template: "capped", Size: 2}, false)
	require.NoError(t, err)
	id := res.Cluster.ID
	s.work(id)
	v := s.pass(id, 30, time.Second)
	require.Len(t, v.Decisions, 1, "%+v", v.Last)
	require.Empty(t, v.Decisions[0].Job)
	require.NotEmpty(t, v.Decisions[0].Refused)
	require.Equal(t, 4, v.Decisions[0].To)
	v = s.pass(id, 30, 2*time.Minute)
	require.Len(t, v.Decisions, 1, "the same refusal again is not a new decision")
	require.Equal(t, v.Decisions[0].Refused, v.Last.Refused)
	require.True(t, v.Last.At.After(v.Decisions[0].At))
	evs, _, err := events.New(s.p.Store).List(ctx, "acme", id, "", 100, "")
	require.NoError(t, err)
	refusedEvents := 0
	for _, e := range evs {
		if e.Type == events.ClusterAutoscale {
			require.Equal(t, "refused", e.Status)
			refusedEvents++
		}
	}
	require.Equal(t, 1, refusedEvents)
	c, err := s.svc.Engine.Cluster(ctx, "acme", id)
	require.NoError(t, err)
	require.Equal(t, 2, c.NodeCount)
	require.Empty(t, c.ActiveJobID)
}
