package usage

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestNodeHoursFromATimeline sums a scripted timeline by hand: two nodes of
// one cluster, one node of another that the janitor deleted when its lease
// expired, and one still running.
func TestNodeHoursFromATimeline(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)
	h := func(n float64) time.Time { return t0.Add(time.Duration(n * float64(time.Hour))) }
	lifetimes := []Lifetime{
		{Tenant: "acme", Cluster: "c1", Node: "n1", Owner: "ann", Template: "web", HardwareType: "small", Start: h(1), End: h(3.5)},
		{Tenant: "acme", Cluster: "c1", Node: "n2", Owner: "ann", Template: "web", HardwareType: "large", Start: h(1), End: h(2)},
		// Deleted by the janitor at its lease's end.
		{Tenant: "acme", Cluster: "c2", Node: "n3", Owner: "bob", Template: "hadoop", HardwareType: "large", Start: h(2.25), End: h(4)},
		// Still running: counted up to now.
		{Tenant: "acme", Cluster: "c2", Node: "n4", Owner: "bob", Template: "hadoop", HardwareType: "large", Start: h(3)},
	}
	now := h(5)
	r, err := Compute(Query{From: t0, To: h(6), GroupBy: ByUser, Step: Hour}, lifetimes, now)
	require.NoError(t, err)
	require.Len(t, r.Buckets, 6)
	rows := map[string]Row{}
	for _, row := range r.Rows {
		rows[row.Group] = row
	}
	// ann: n1 1:00-3:30 (2.5 h), n2 1:00-2:00 (1 h).
	require.Equal(t, []float64{0, 2, 1, 0.5, 0, 0}, rows["acme/ann"].NodeHours)
	require.InDelta(t, 3.5, rows["acme/ann"].Total, 1e-9)
	// bob: n3 2:15-4:00 (1.75 h), n4 3:00-now 5:00 (2 h).
	require.Equal(t, []float64{0, 0, 0.75, 2, 1, 0}, rows["acme/bob"].NodeHours)
	require.Equal(t, "acme/bob", r.Rows[0].Group, "the largest first")

	r, err = Compute(Query{From: t0, To: h(24), GroupBy: ByHardwareType, Step: Day}, lifetimes, now)
	require.NoError(t, err)
	require.Len(t, r.Rows, 2)
	require.InDelta(t, 1+1.75+2, r.Rows[0].Total, 1e-9) // large
	require.InDelta(t, 2.5, r.Rows[1].Total, 1e-9)      // small

	r, err = Compute(Query{From: t0, To: h(24), GroupBy: ByCluster, Step: Day, Owner: "ann"}, lifetimes, now)
	require.NoError(t, err)
	require.Len(t, r.Rows, 1, "a user sees their own clusters only")
	require.Equal(t, "c1", r.Rows[0].Group)
}

func TestBadQueriesNameTheirField(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		q     Query
		field string
	}{
		{Query{From: t0, To: t0, GroupBy: ByTenant, Step: Hour}, "to"},
		{Query{From: t0, To: t0.Add(-time.Hour), GroupBy: ByTenant, Step: Hour}, "to"},
		{Query{From: t0, To: t0.Add(32 * 24 * time.Hour), GroupBy: ByTenant, Step: Hour}, "from"},
		{Query{From: t0, To: t0.Add(time.Hour), GroupBy: "colour", Step: Hour}, "groupBy"},
		{Query{From: t0, To: t0.Add(time.Hour), GroupBy: ByTenant, Step: "week"}, "step"},
		// Longer than a time.Duration holds: To.Sub saturates, and the count
		// of buckets must not wrap around to a small one.
		{Query{From: time.Time{}, To: time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC), GroupBy: ByTenant, Step: Day}, "from"},
		{Query{From: time.Time{}, To: t0, GroupBy: ByTenant, Step: Hour}, "from"},
		{Query{From: t0.AddDate(-300, 0, 0), To: t0, GroupBy: ByTenant, Step: Day}, "from"},
	} {
		_, err := Compute(tc.q, nil, t0)
		var p *Problem
		require.True(t, errors.As(err, &p), "%+v", tc.q)
		require.Equal(t, tc.field, p.Field)
	}
}
