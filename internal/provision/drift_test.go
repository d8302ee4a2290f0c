package provision

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/macros"
	"github.com/heddle-io/heddle/internal/sshexec"
	"github.com/heddle-io/heddle/internal/sshexec/sshtest"
)

// TestProbeRecordsTheBootIDThenReportsWhatChanged: the first probe of a
// node records its boot id; later ones find nothing while it holds, a
// rebooted node by another boot id, and a host key other than the pinned
// one without trusting it.
func TestProbeRecordsTheBootIDThenReportsWhatChanged(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 1)
	w.must(domain.ActionCreate, "")
	w.must(domain.ActionConfirm, "")

	first := w.exec(domain.ActionProbe, "c1-1000", "")
	require.NoError(t, first.Err)
	require.Empty(t, first.Drift)
	boot := w.clusters.node("c1-1000").Properties[BootIDProperty]
	if boot == "" {
		t.Skip("this kernel has no /proc/sys/kernel/random/boot_id")
	}
	require.Len(t, boot, 36, "recorded: %q", boot)

	again := w.exec(domain.ActionProbe, "c1-1000", "")
	require.NoError(t, again.Err)
	require.Empty(t, again.Drift)
	require.Nil(t, again.Node, "nothing new to record: no node write")

	w.clusters.update(func(s *ClusterSpec) { s.Nodes[0].Properties[BootIDProperty] = "00000000-0000-0000-0000-000000000000" })
	rebooted := w.exec(domain.ActionProbe, "c1-1000", "")
	require.NoError(t, rebooted.Err)
	require.Equal(t, domain.DriftRebooted, rebooted.Drift)
	require.Contains(t, rebooted.Stdout, boot)

	impostor := sshtest.NewHostKey(t).PublicKey()
	w.clusters.update(func(s *ClusterSpec) { s.Nodes[0].HostKey = sshexec.FormatPublicKey(impostor) })
	changed := w.exec(domain.ActionProbe, "c1-1000", "")
	require.Equal(t, domain.DriftHostKeyChanged, changed.Drift)
	var hk *sshexec.HostKeyError
	require.ErrorAs(t, changed.Err, &hk, "the engine turns it into a finding (probeResult); the error says which keys")
	require.Nil(t, changed.Node, "a changed key is never re-pinned")
}

// TestConfigureRecordsTheDigestTheLayoutChanges: a configure's result
// carries the digest of what it applied, equal to ConfigDigest over the
// same definition; another layout (a node more for
// %num.service.zookeeper%) or another cluster config gives another digest.
func TestConfigureRecordsTheDigestTheLayoutChanges(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 2)
	w.must(domain.ActionCreate, "")
	w.must(domain.ActionConfirm, "")
	w.must(domain.ActionBootstrap, "")
	w.must(domain.ActionInstall, "zookeeper")
	res := w.must(domain.ActionConfigure, "zookeeper")
	require.NotEmpty(t, res[0].Digest)

	spec := w.clusters.spec
	n := w.clusters.node("c1-1000")
	now, err := ConfigDigest(&spec, macros.NewLayout(spec.ClusterID, spec.Owner, spec.Nodes), &n, "zookeeper")
	require.NoError(t, err)
	require.Equal(t, res[0].Digest, now, "what a drift check renders for an unchanged cluster")

	moved := append(append([]domain.Node(nil), spec.Nodes...), domain.Node{ID: "c1-1002", Num: 1002,
		NodeLayout: domain.NodeLayout{Services: []string{"zookeeper"}}})
	grown, err := ConfigDigest(&spec, macros.NewLayout(spec.ClusterID, spec.Owner, moved), &n, "zookeeper")
	require.NoError(t, err)
	require.NotEqual(t, now, grown, "the config's %%num.service.zookeeper%% reads the layout")

	spec.Config = []byte(`{"zk":{"quorum":"5"}}`)
	other, err := ConfigDigest(&spec, macros.NewLayout(spec.ClusterID, spec.Owner, spec.Nodes), &n, "zookeeper")
	require.NoError(t, err)
	require.NotEqual(t, now, other)
}
