package ec2

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/provider"
)

// TestInspectReportsTerminatedAndStoppedInstancesFromOneListing: a drift
// check's probes of a cluster's nodes read one shared DescribeInstances
// answer, and tell running, stopped, terminated and vanished instances
// apart.
func TestInspectReportsTerminatedAndStoppedInstancesFromOneListing(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := testCtx(t)
	ids := map[string]string{}
	for _, n := range []string{"c1-1000", "c1-1001", "c1-1002", "c1-1003"} {
		req := f.request(n)
		req.Token = "tok-" + n
		created, err := f.ec2.Create(ctx, req)
		require.NoError(t, err)
		ids[n] = created.ProviderID
	}
	f.fake.mu.Lock()
	for _, inst := range f.fake.instances {
		switch inst.ID {
		case ids["c1-1001"]:
			inst.State = "stopped"
		case ids["c1-1002"]:
			inst.State = "terminated"
		}
	}
	f.fake.mu.Unlock()
	describes := len(f.fake.calls("DescribeInstances"))

	want := map[string]provider.MachineState{
		"c1-1000": provider.MachineRunning, "c1-1001": provider.MachineStopped,
		"c1-1002": provider.MachineGone, "c1-1003": provider.MachineGone,
	}
	for n, state := range want {
		req := f.request(n)
		req.Node.ProviderID = ids[n]
		if n == "c1-1003" {
			req.Node.ProviderID = "i-0000000000000dead" // long gone: no longer listed
		}
		got, detail, err := f.ec2.Inspect(ctx, req)
		require.NoError(t, err)
		require.Equal(t, state, got, "%s: %s", n, detail)
		require.Contains(t, detail, req.Node.ProviderID)
	}
	require.Equal(t, describes+1, len(f.fake.calls("DescribeInstances")), "four probes, one listing")
}

// TestInspectReadsARecordedListingWithAStoppedAndATerminatedInstance: a
// DescribeInstances answer as EC2 gives it for a cluster some of whose
// instances were stopped and terminated outside heddle (stateReason,
// "User initiated" reasons, a terminated instance without addresses or
// volumes) reads as one running, one stopped and one gone machine, and a
// node whose instance is not listed at all is gone too: what a drift
// check's probes report as machineStopped and machineGone.
func TestInspectReadsARecordedListingWithAStoppedAndATerminatedInstance(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.fake.describeFixture = "DescribeInstances-drift.xml"
	ctx := testCtx(t)
	want := map[string]struct {
		instance string
		state    provider.MachineState
		detail   string
	}{
		"c1-1000": {"i-0a1b2c3d4e5f60001", provider.MachineRunning, "is running"},
		"c1-1001": {"i-0a1b2c3d4e5f60002", provider.MachineStopped, "is stopped"},
		"c1-1002": {"i-0a1b2c3d4e5f60003", provider.MachineGone, "is terminated"},
		"c1-1003": {"i-0a1b2c3d4e5f60004", provider.MachineGone, "is not listed"},
	}
	for n, w := range want {
		req := f.request(n)
		req.Node.ProviderID = w.instance
		got, detail, err := f.ec2.Inspect(ctx, req)
		require.NoError(t, err)
		require.Equal(t, w.state, got, "%s: %s", n, detail)
		require.Contains(t, detail, w.instance+" ")
		require.Contains(t, detail, w.detail)
	}
	require.Len(t, f.fake.calls("DescribeInstances"), 1, "four probes, one listing")
}
