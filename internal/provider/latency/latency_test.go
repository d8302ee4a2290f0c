package latency

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/provider"
	"github.com/stretchr/testify/require"
)

// clock is a settable time; sleeps advance it.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

type fixture struct {
	clock *clock
	p     *Latency
	rand  float64
}

func setup(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{clock: &clock{now: time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)}, rand: 0.5}
	f.p = New(Config{Now: f.clock.Now, Rand: func() float64 { return f.rand },
		Sleep: func(_ context.Context, d time.Duration) error { f.clock.advance(d); return nil }})
	return f
}

func request(node string, fields map[string]string) provider.Request {
	return provider.Request{Tenant: "acme", ClusterID: "c1", Provider: "sim", Node: domain.Node{ID: node},
		Token: "tok-" + node, Hostname: node + ".local", SSHUser: "admin", Fields: fields}
}

var fields = map[string]string{FieldCreateLatency: "2s", FieldBoot: "60s", FieldSSHAfter: "15s", FieldDeleteAfter: "20s", FieldPollInterval: "5s"}

func TestCreateBootSSHDelete(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := context.Background()
	req := request("c1-1000", fields)
	start := f.clock.Now()
	n, err := f.p.Create(ctx, req)
	require.NoError(t, err)
	require.Equal(t, 2*time.Second, f.clock.Now().Sub(start), "accepted after create_latency")
	require.True(t, strings.HasPrefix(n.ProviderID, "latency:"))
	require.Regexp(t, `^198\.1[89]\.\d+\.\d+$`, n.Addresses[provider.AddressAccess])
	again, err := f.p.Create(ctx, req)
	require.NoError(t, err)
	require.Equal(t, n, again, "idempotent on the token")
	other, err := f.p.Create(ctx, request("c1-1001", fields))
	require.NoError(t, err)
	require.NotEqual(t, n.ProviderID, other.ProviderID)

	req.Node.ProviderID = n.ProviderID
	f.clock.now = start.Add(2 * time.Second) // acceptance
	var waits []string
	for {
		p, err := f.p.Confirm(ctx, req)
		require.NoError(t, err)
		if !p.Pending() {
			require.Equal(t, n.ProviderID, p.Node.ProviderID)
			require.Equal(t, n.Addresses, p.Node.Addresses)
			break
		}
		require.Equal(t, 5*time.Second, p.Again)
		waits = append(waits, p.Waiting)
		f.clock.advance(p.Again)
	}
	require.Len(t, waits, 15, "75 s at a 5 s poll: 12 booting, 3 waiting for SSH")
	require.Contains(t, waits[0], "booting")
	require.Contains(t, waits[14], "does not answer SSH yet")

	p, err := f.p.Delete(ctx, req)
	require.NoError(t, err)
	require.True(t, p.Pending())
	polls := 1
	for p.Pending() {
		f.clock.advance(p.Again)
		req.Poll = p.Poll
		p, err = f.p.Delete(ctx, req)
		require.NoError(t, err)
		polls++
	}
	require.Equal(t, 5, polls, "gone 20 s after the terminate")
	again, err = f.p.Create(ctx, request("c1-1000", fields))
	require.NoError(t, err)
	require.NotEqual(t, n.ProviderID, again.ProviderID, "the deleted node's token is forgotten")
}

func TestFailuresAtTheRate(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := context.Background()
	flaky := map[string]string{FieldCreateLatency: "0s", FieldFailureRate: "0.25"}
	f.rand = 0.2
	_, err := f.p.Create(ctx, request("c1-1000", flaky))
	require.ErrorIs(t, err, errTransient)
	require.ErrorContains(t, err, "node c1-1000")
	f.rand = 0.3
	n, err := f.p.Create(ctx, request("c1-1000", flaky))
	require.NoError(t, err)
	req := request("c1-1000", flaky)
	req.Node.ProviderID = n.ProviderID
	f.rand = 0.1
	_, err = f.p.Confirm(ctx, req)
	require.ErrorIs(t, err, errTransient)
	_, err = f.p.Delete(ctx, req)
	require.ErrorIs(t, err, errTransient)
}

func TestBadInput(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := context.Background()
	_, err := f.p.Confirm(ctx, request("c1-1000", nil))
	require.ErrorContains(t, err, "not a node id of this provider")
	noToken := request("c1-1000", nil)
	noToken.Token = ""
	_, err = f.p.Create(ctx, noToken)
	require.Error(t, err)
	_, err = f.p.Create(ctx, request("c1-1000", map[string]string{FieldBoot: "soon"}))
	require.ErrorContains(t, err, "field boot")

	r := provider.NewRegistry()
	require.NoError(t, r.Register(Type(), f.p))
	got := map[string]string{}
	for _, p := range r.Validate(&domain.Provider{ProviderType: TypeName, Fields: map[string]string{
		FieldBoot: "soon", FieldSSHAfter: "-1s", FieldPollInterval: "0s", FieldFailureRate: "2", FieldDeleteAfter: "48h",
	}}) {
		got[p.Field] = p.Code
	}
	require.Equal(t, map[string]string{"fields.boot": domain.CodeInvalid, "fields.ssh_after": domain.CodeInvalid,
		"fields.poll_interval": domain.CodeInvalid, "fields.failure_rate": domain.CodeInvalid, "fields.delete_after": domain.CodeInvalid}, got)
	require.Empty(t, r.Validate(&domain.Provider{ProviderType: TypeName, Fields: fields}))
}

// FuzzCheckFields: any field values are either accepted, and then usable,
// or refused with a problem naming the field.
func FuzzCheckFields(f *testing.F) {
	f.Add("60s", "0.1")
	f.Add("soon", "-1")
	f.Add("9999999h", "NaN")
	f.Add("1s", "NaN")
	f.Fuzz(func(t *testing.T, boot, rate string) {
		values := map[string]string{FieldBoot: boot, FieldFailureRate: rate}
		ps := checkFields(values)
		tm, err := parse(values)
		if len(ps) == 0 {
			require.NoError(t, err)
			require.GreaterOrEqual(t, tm.boot, time.Duration(0))
			require.True(t, tm.failureRate >= 0 && tm.failureRate <= 1)
		} else {
			require.Error(t, err)
		}
	})
}

// TestDeleteOfANodeNeverMade: a node whose create failed (no provider id)
// is deleted like any other, so a rollback or a plain delete of a cluster
// that has one ends (issue 28).
func TestDeleteOfANodeNeverMade(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := context.Background()
	req := request("c1-1000", fields)
	p, err := f.p.Delete(ctx, req)
	require.NoError(t, err)
	for p.Pending() {
		f.clock.advance(p.Again)
		req.Poll = p.Poll
		p, err = f.p.Delete(ctx, req)
		require.NoError(t, err)
	}
	n, err := f.p.Create(ctx, request("c1-1001", fields))
	require.NoError(t, err)
	require.NotEmpty(t, n.ProviderID, "the other nodes are untouched")
}

// TestInspectFindsWhatWasLost: a node runs until Lose terminates it
// outside heddle; a node the provider never accepted is gone.
func TestInspectFindsWhatWasLost(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := context.Background()
	req := request("c1-1000", fields)
	n, err := f.p.Create(ctx, req)
	require.NoError(t, err)
	req.Node.ProviderID = n.ProviderID
	state, _, err := f.p.Inspect(ctx, req)
	require.NoError(t, err)
	require.Equal(t, provider.MachineRunning, state)

	f.p.Lose(n.ProviderID)
	state, detail, err := f.p.Inspect(ctx, req)
	require.NoError(t, err)
	require.Equal(t, provider.MachineGone, state)
	require.Contains(t, detail, "terminated outside heddle")

	state, detail, err = f.p.Inspect(ctx, request("c1-1001", fields))
	require.NoError(t, err)
	require.Equal(t, provider.MachineGone, state)
	require.Contains(t, detail, "never accepted")
}
