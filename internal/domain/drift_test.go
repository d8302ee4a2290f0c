package domain

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestSumDriftHidesWhatANodeFindingExplainsAndKeepsFirstSeen(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	t1 := t0.Add(time.Hour)
	prev := &ClusterDrift{Findings: []DriftFinding{{Node: "n2", Service: "web", Kind: DriftConfigStale, Since: t0}}}
	d := SumDrift("j2", t1, 3, []DriftFinding{
		{Node: "n1", Kind: DriftUnreachable, Detail: "connection refused"},
		{Node: "n1", Service: "web", Kind: DriftServiceDown},
		{Node: "n1", Service: "web", Kind: DriftConfigStale},
		{Node: "n2", Service: "web", Kind: DriftConfigStale},
		{Node: "n3", Kind: DriftRebooted},
		{Node: "n3", Service: "web", Kind: DriftServiceDown},
	}, prev)
	require.Equal(t, 3, d.Drifted)
	require.Equal(t, 3, d.Nodes)
	require.Equal(t, map[DriftKind]int{DriftUnreachable: 1, DriftConfigStale: 1, DriftRebooted: 1, DriftServiceDown: 1}, d.Counts,
		"an unreachable node's services are not reported again; a rebooted node's are")
	require.Len(t, d.Findings, 4)
	require.Equal(t, "n1", d.Findings[0].Node)
	require.Equal(t, t0, d.Findings[1].Since, "found before: keeps its first time")
	require.Equal(t, t1, d.Findings[0].Since)
	require.Equal(t, []string{"n1", "n2", "n3"}, d.DriftedNodes())
	require.Equal(t, []string{"n2"}, d.DriftedNodes(DriftConfigStale))

	clean := SumDrift("j3", t1, 3, nil, d)
	require.Zero(t, clean.Drifted)
	require.Empty(t, clean.Findings)
}

func TestSumDriftStaysBounded(t *testing.T) {
	t.Parallel()
	var many []DriftFinding
	for i := range 500 {
		many = append(many, DriftFinding{Node: fmt.Sprintf("n%04d", i), Kind: DriftUnreachable, Detail: string(make([]byte, 1000))})
	}
	d := SumDrift("j", time.Now(), 500, many, nil)
	require.Equal(t, 500, d.Drifted)
	require.Equal(t, 500, d.Counts[DriftUnreachable])
	require.Len(t, d.Findings, MaxDriftFindings)
	for _, f := range d.Findings {
		require.LessOrEqual(t, len(f.Detail), MaxStateMessage)
	}
}

func TestDriftEveryIsAtLeastAMinuteOrOff(t *testing.T) {
	t.Parallel()
	tmpl := func(every *Duration) ClusterTemplate {
		return ClusterTemplate{Meta: Meta{Name: "t"}, TemplateSections: TemplateSections{Administration: Administration{DriftEvery: every}}}
	}
	for _, ok := range []*Duration{nil, new(Duration), ptr(Duration(time.Minute)), ptr(Duration(time.Hour))} {
		tt := tmpl(ok)
		require.Empty(t, tt.Validate(), "%v", ok)
	}
	for _, bad := range []Duration{Duration(time.Second), Duration(-time.Hour)} {
		tt := tmpl(&bad)
		ps := tt.Validate()
		require.Equal(t, []string{"administration.driftEvery"}, fieldsOf(ps))
		require.Contains(t, ps[0].Message, "at most once a minute")
	}
	require.Equal(t, Duration(time.Hour), DefaultDriftEvery("ec2"))
	require.Equal(t, Duration(time.Hour), DefaultDriftEvery("static"))
	require.Zero(t, DefaultDriftEvery("local"))
}

func ptr[T any](v T) *T { return &v }

func TestRepairPolicy(t *testing.T) {
	t.Parallel()
	require.Equal(t, RepairReport, RepairModeOf(nil))
	require.Equal(t, 1, MaxUnhealthyOf(nil, 100))
	require.Equal(t, 3, MaxUnhealthyOf(&RepairPolicy{MaxUnhealthy: "3"}, 100))
	require.Equal(t, 10, MaxUnhealthyOf(&RepairPolicy{MaxUnhealthy: "10%"}, 100))
	require.Equal(t, 1, MaxUnhealthyOf(&RepairPolicy{MaxUnhealthy: "10%"}, 5), "a share of a small cluster is at least one")
	require.Equal(t, DefaultRepairBackoff.Std(), BackoffOf(nil))
	for _, bad := range []RepairPolicy{{Mode: "sometimes"}, {MaxUnhealthy: "0"}, {MaxUnhealthy: "150%"}, {MaxUnhealthy: "half"}, {Backoff: Duration(-1)}} {
		tt := ClusterTemplate{Meta: Meta{Name: "t"}, TemplateSections: TemplateSections{Administration: Administration{Repair: &bad}}}
		require.Len(t, tt.Validate(), 1, "%+v", bad)
	}
}
