package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/access"
	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/engine"
	"github.com/heddle-io/heddle/internal/provider/ec2"
	"github.com/heddle-io/heddle/internal/provider/static"
)

// fakeTenants answers one tenant per page, so that paging is exercised.
type fakeTenants struct {
	ids []string
	err error
}

func (f *fakeTenants) ListTenants(_ context.Context, _ int, cursor string) ([]access.TenantView, string, error) {
	if f.err != nil {
		return nil, "", f.err
	}
	i := 0
	if cursor != "" {
		_, _ = fmt.Sscan(cursor, &i)
	}
	if i >= len(f.ids) {
		return nil, "", nil
	}
	next := ""
	if i+1 < len(f.ids) {
		next = fmt.Sprint(i + 1)
	}
	return []access.TenantView{{Tenant: domain.Tenant{ID: f.ids[i]}}}, next, nil
}

type fakeProviders struct {
	byTenant map[string][]domain.Entity
	err      map[string]error
}

func (f *fakeProviders) List(_ context.Context, tenant string, k domain.Kind, _ int, _ string) ([]domain.Entity, string, error) {
	if k != domain.KindProvider {
		return nil, "", fmt.Errorf("asked for %s", k)
	}
	if err := f.err[tenant]; err != nil {
		return nil, "", err
	}
	return f.byTenant[tenant], "", nil
}

// fakeOpener "opens" a field by dropping its "sealed:" prefix.
type fakeOpener struct {
	mu     sync.Mutex
	opened []string // tenant/provider
	fail   map[string]bool
}

func (f *fakeOpener) OpenFields(_ context.Context, tenant string, p domain.Provider) (map[string]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.opened = append(f.opened, tenant+"/"+p.Name)
	if f.fail[tenant+"/"+p.Name] {
		return nil, errors.New("secrets: the value was sealed for another binding")
	}
	out := map[string]string{}
	for k, v := range p.Fields {
		if len(v) > 7 && v[:7] == "sealed:" {
			v = v[7:]
		}
		out[k] = v
	}
	return out, nil
}

type lookup struct {
	c   domain.Cluster
	err error
}

type fakeClusters map[string]lookup // tenant/cluster

func (f fakeClusters) Cluster(_ context.Context, tenant, id string) (domain.Cluster, error) {
	l, ok := f[tenant+"/"+id]
	if !ok {
		return domain.Cluster{}, fmt.Errorf("%w: cluster %s", engine.ErrNotFound, id)
	}
	return l.c, l.err
}

type sweepCall struct {
	fields  map[string]string
	opts    ec2.SweepOptions
	answers map[string]bool // tenant/cluster -> exists
}

// fakeSweeper asks exists about each of its tagged clusters and reports
// those that do not exist as terminated.
type fakeSweeper struct {
	tagged []string          // tenant/cluster of the instances it "finds"
	fail   map[string]string // region -> error
	calls  []sweepCall
}

func (f *fakeSweeper) Sweep(ctx context.Context, fields map[string]string, exists ec2.ClusterExists, opts ec2.SweepOptions) (ec2.SweepReport, error) {
	call := sweepCall{fields: maps.Clone(fields), opts: opts, answers: map[string]bool{}}
	defer func() { f.calls = append(f.calls, call) }()
	if msg, ok := f.fail[fields[ec2.FieldRegion]]; ok {
		return ec2.SweepReport{}, errors.New(msg)
	}
	var rep ec2.SweepReport
	for _, tc := range f.tagged {
		var tenant, cluster string
		_, _ = fmt.Sscanf(tc, "%s %s", &tenant, &cluster)
		ok, err := exists(ctx, tenant, cluster)
		if err != nil {
			return rep, err
		}
		call.answers[tenant+"/"+cluster] = ok
		rep.Examined++
		if !ok {
			rep.Terminated = append(rep.Terminated, "i-"+cluster)
			rep.KeyPairsDeleted = append(rep.KeyPairsDeleted, ec2.KeyPairName(tenant, cluster))
		}
	}
	return rep, nil
}

func ec2Provider(name, region, keyID string) *domain.Provider {
	return &domain.Provider{Meta: domain.Meta{Name: name}, ProviderType: ec2.TypeName, Fields: map[string]string{
		ec2.FieldRegion: region, ec2.FieldAccessKeyID: keyID, ec2.FieldSecretAccessKey: "sealed:secret-of-" + keyID,
		ec2.FieldSubnetID: "subnet-" + name,
	}}
}

type sweepFixture struct {
	tenants   *fakeTenants
	providers *fakeProviders
	opener    *fakeOpener
	clusters  fakeClusters
	sweeper   *fakeSweeper
}

// newSweepFixture: tenant acme has two ec2 providers on the same account
// and region and a static one; tenant beta has an ec2 provider in another
// region.
func newSweepFixture() *sweepFixture {
	return &sweepFixture{
		tenants: &fakeTenants{ids: []string{"acme", "beta"}},
		providers: &fakeProviders{byTenant: map[string][]domain.Entity{
			"acme": {
				ec2Provider("aws-prod", "eu-west-1", "AKIDACME"),
				&domain.Provider{Meta: domain.Meta{Name: "rack"}, ProviderType: static.TypeName, Fields: map[string]string{"hosts": "10.0.0.1"}},
				ec2Provider("aws-prod-big", "eu-west-1", "AKIDACME"),
			},
			"beta": {ec2Provider("aws", "us-east-1", "AKIDBETA")},
		}},
		opener: &fakeOpener{fail: map[string]bool{}},
		clusters: fakeClusters{
			"acme/live":  {c: domain.Cluster{ID: "live", Status: domain.ClusterActive}},
			"acme/done":  {c: domain.Cluster{ID: "done", Status: domain.ClusterTerminated}},
			"acme/flaky": {err: errors.New("dynamodb: throttled")},
		},
		sweeper: &fakeSweeper{tagged: []string{"acme live", "acme gone", "acme done", "acme flaky"}, fail: map[string]string{}},
	}
}

func (f *sweepFixture) sweep(mode SweepMode) *ec2Sweep {
	return &ec2Sweep{mode: mode, tenants: f.tenants, providers: f.providers, opener: f.opener, clusters: f.clusters,
		sweeper: f.sweeper, log: slog.New(slog.DiscardHandler)}
}

func regions(calls []sweepCall) []string {
	var out []string
	for _, c := range calls {
		out = append(out, c.fields[ec2.FieldRegion])
	}
	return out
}

// TestSweepOncePerAccountAndRegion: every tenant's ec2 providers are swept
// with their opened fields, two providers on the same account and region
// once, and a static provider not at all.
func TestSweepOncePerAccountAndRegion(t *testing.T) {
	t.Parallel()
	f := newSweepFixture()
	rep := f.sweep(SweepOn).run(t.Context())

	require.Equal(t, []string{"eu-west-1", "us-east-1"}, regions(f.sweeper.calls))
	require.Equal(t, "secret-of-AKIDACME", f.sweeper.calls[0].fields[ec2.FieldSecretAccessKey], "the fields are opened")
	require.Equal(t, "subnet-aws-prod", f.sweeper.calls[0].fields[ec2.FieldSubnetID])
	require.NotContains(t, f.opener.opened, "acme/rack", "a static provider is not looked at")
	require.Equal(t, 3, rep.Providers)
	require.Equal(t, 2, rep.Swept)
	require.Zero(t, rep.Failed)
	require.Equal(t, SweepOn, rep.Mode)
	// Each sweep found acme's gone and done clusters' instances.
	require.Equal(t, 4, rep.Terminated)
	require.Equal(t, 4, rep.KeyPairsDeleted)
	require.Equal(t, 8, rep.Examined)
	for _, c := range f.sweeper.calls {
		require.False(t, c.opts.DryRun)
	}

	// Another endpoint is another place, even with the same keys.
	f = newSweepFixture()
	p := ec2Provider("aws-prod-big", "eu-west-1", "AKIDACME")
	p.Fields[ec2.FieldEndpoint] = "https://ec2.example.test"
	f.providers.byTenant["acme"][2] = p
	rep = f.sweep(SweepOn).run(t.Context())
	require.Equal(t, 3, rep.Swept)
}

// TestSweepClusterExists: a cluster exists when its record is there and not
// TERMINATED; a missing or TERMINATED one does not; one whose lookup fails
// does (when in doubt, spare), without failing the sweep.
func TestSweepClusterExists(t *testing.T) {
	t.Parallel()
	f := newSweepFixture()
	f.tenants.ids = []string{"acme"}
	rep := f.sweep(SweepOn).run(t.Context())
	require.Len(t, f.sweeper.calls, 1)
	require.Equal(t, map[string]bool{"acme/live": true, "acme/gone": false, "acme/done": false, "acme/flaky": true},
		f.sweeper.calls[0].answers)
	require.Equal(t, 1, rep.Doubts)
	require.Zero(t, rep.Failed)
	require.Equal(t, 2, rep.Terminated)
}

// TestSweepFailuresDoNotStopOthers: a provider whose fields cannot be opened
// or whose sweep fails is counted, and the next ones are swept.
func TestSweepFailuresDoNotStopOthers(t *testing.T) {
	t.Parallel()
	f := newSweepFixture()
	f.providers.byTenant["acme"] = append([]domain.Entity{ec2Provider("aws-tokyo", "ap-northeast-1", "AKIDACME")},
		f.providers.byTenant["acme"]...)
	f.providers.byTenant["gamma"] = []domain.Entity{ec2Provider("aws", "eu-central-1", "AKIDGAMMA")}
	f.providers.err = map[string]error{"delta": errors.New("dynamodb: throttled")}
	f.tenants.ids = []string{"acme", "delta", "gamma", "beta"}
	f.opener.fail["gamma/aws"] = true
	f.sweeper.fail["ap-northeast-1"] = "ec2: sweep: list instances: UnauthorizedOperation"
	rep := f.sweep(SweepOn).run(t.Context())

	require.Equal(t, []string{"ap-northeast-1", "eu-west-1", "us-east-1"}, regions(f.sweeper.calls))
	require.Equal(t, 3, rep.Failed, "tokyo's sweep, delta's listing and gamma's fields")
	require.Equal(t, 2, rep.Swept)
	require.Equal(t, 5, rep.Providers)

	// A sweep that failed is tried again through another provider of the
	// same place (its secret key may be the current one).
	f = newSweepFixture()
	f.tenants.ids = []string{"acme"}
	f.sweeper.fail["eu-west-1"] = "InvalidClientTokenId"
	rep = f.sweep(SweepOn).run(t.Context())
	require.Len(t, f.sweeper.calls, 2)
	require.Equal(t, 2, rep.Failed)
	require.Zero(t, rep.Swept)

	// Tenants that cannot be listed: nothing swept, counted.
	f = newSweepFixture()
	f.tenants.err = errors.New("dynamodb: throttled")
	rep = f.sweep(SweepOn).run(t.Context())
	require.Empty(t, f.sweeper.calls)
	require.Equal(t, 1, rep.Failed)
}

// TestSweepModes: dry-run passes DryRun; off sweeps nothing.
func TestSweepModes(t *testing.T) {
	t.Parallel()
	f := newSweepFixture()
	rep := f.sweep(SweepDryRun).run(t.Context())
	require.Len(t, f.sweeper.calls, 2)
	for _, c := range f.sweeper.calls {
		require.True(t, c.opts.DryRun)
	}
	require.Equal(t, SweepDryRun, rep.Mode)
	require.Equal(t, 4, rep.Terminated, "what would be terminated")

	f = newSweepFixture()
	rep = f.sweep(SweepOff).run(t.Context())
	require.Empty(t, f.sweeper.calls)
	require.Empty(t, f.opener.opened)
	require.Equal(t, SweepReport{Mode: SweepOff}, rep)

	var none *ec2Sweep
	require.Equal(t, SweepReport{Mode: SweepOff}, none.run(t.Context()))

	for in, want := range map[string]SweepMode{"": SweepOn, "on": SweepOn, "off": SweepOff, "dry-run": SweepDryRun} {
		m, err := parseSweepMode(in)
		require.NoError(t, err)
		require.Equal(t, want, m, in)
	}
	for _, in := range []string{"yes", "OFF", "dryrun"} {
		_, err := parseSweepMode(in)
		require.ErrorContains(t, err, "HEDDLE_EC2_SWEEP", in)
	}
}

// TestHandleSweepsAfterThePass: the handler's report carries the sweep's
// counts, also when the pass met errors; sweep failures do not fail the
// invocation.
func TestHandleSweepsAfterThePass(t *testing.T) {
	t.Parallel()
	f := newSweepFixture()
	f.sweeper.fail["us-east-1"] = "throttled"
	pass := &fakeJanitor{report: engine.JanitorReport{Resent: 1}}
	j := &janitor{engine: pass, sweep: f.sweep(SweepOn), log: slog.New(slog.DiscardHandler)}
	r, err := j.handle(t.Context(), events.EventBridgeEvent{})
	require.NoError(t, err)
	require.Equal(t, 1, r.Resent)
	require.Equal(t, SweepReport{Mode: SweepOn, Providers: 3, Swept: 1, Failed: 1, Examined: 4, Terminated: 2, KeyPairsDeleted: 2, Doubts: 1}, r.EC2Sweep)

	pass.err = errors.New("store down")
	r, err = j.handle(t.Context(), events.EventBridgeEvent{})
	require.ErrorContains(t, err, "store down")
	require.Equal(t, 1, r.EC2Sweep.Swept, "swept all the same")
	require.True(t, slices.Equal([]string{"eu-west-1", "us-east-1", "eu-west-1", "us-east-1"}, regions(f.sweeper.calls)))
}
