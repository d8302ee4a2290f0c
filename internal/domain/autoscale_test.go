package domain

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Office hours in Amsterdam: 3 nodes from 08:00 on weekdays, 1 from 19:00
// every day; a weekend keeps Friday evening's size.
func TestAutoscaleSchedulesFollowTheirTimeZone(t *testing.T) {
	t.Parallel()
	p := Autoscale{Min: 1, Max: 5, Schedules: []AutoscaleSchedule{
		{Cron: "0 8 * * 1-5", Timezone: "Europe/Amsterdam", Size: 3},
		{Cron: "0 19 * * *", Timezone: "Europe/Amsterdam", Size: 1},
	}}
	require.Empty(t, p.Problems("administration.autoscale"))
	ams, err := time.LoadLocation("Europe/Amsterdam")
	require.NoError(t, err)
	at := func(day, hour, minute int) AutoscaleVerdict {
		return p.Decide(AutoscaleInput{Now: time.Date(2026, 3, day, hour, minute, 0, 0, ams), Size: 2, FreeNodes: -1})
	}
	// 2 March 2026 is a Monday.
	require.Equal(t, 3, at(2, 8, 0).To, "at 08:00 itself")
	require.Equal(t, 1, at(2, 7, 59).To, "before 08:00: Sunday evening's size")
	require.Equal(t, 3, at(2, 18, 59).To)
	require.Equal(t, 1, at(2, 19, 0).To)
	require.Equal(t, 1, at(7, 10, 0).To, "Saturday: Friday 19:00's size")
	require.Contains(t, at(2, 9, 0).Reason, `schedule 0 ("0 8 * * 1-5" in Europe/Amsterdam`)
	// 07:30 UTC is 08:30 in Amsterdam in March (CET).
	require.Equal(t, 3, p.Decide(AutoscaleInput{Now: time.Date(2026, 3, 2, 7, 30, 0, 0, time.UTC), Size: 2, FreeNodes: -1}).To)
}

func TestAutoscaleTargetCooldownStepAndBounds(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	p := Autoscale{Min: 2, Max: 8, Target: &AutoscaleTarget{Metric: "cpu", Value: 50, Cooldown: Duration(5 * time.Minute), Hysteresis: 0.1, MaxStep: 3}}
	in := func(v float64, size int, last time.Time) AutoscaleInput {
		return AutoscaleInput{Now: now, Size: size, Metrics: map[string]AutoscaleMetric{"cpu": {Value: v, At: now.Add(-time.Minute)}},
			LastScaleAt: last, FreeNodes: -1}
	}
	require.Equal(t, 7, p.Decide(in(100, 4, time.Time{})).To, "twice the target: 4 -> 8, at most 3 a step")
	require.Equal(t, 4, p.Decide(in(54, 4, time.Time{})).To, "within the hysteresis")
	require.Equal(t, 2, p.Decide(in(10, 4, time.Time{})).To, "far below: the minimum")
	require.Equal(t, 2, p.Decide(in(10, 2, time.Time{})).To, "never below the minimum")
	require.Equal(t, 8, p.Decide(in(500, 7, time.Time{})).To, "never above the maximum")
	cool := p.Decide(in(100, 4, now.Add(-4*time.Minute)))
	require.Equal(t, 4, cool.To)
	require.Contains(t, cool.Reason, "cooling down until 2026-03-02T09:01:00Z")
	require.Equal(t, 7, p.Decide(in(100, 4, now.Add(-5*time.Minute))).To, "the cooldown is over")
	q := in(100, 4, time.Time{})
	q.FreeNodes = 1
	require.Equal(t, 5, p.Decide(q).To, "never past the quota")
	stale := in(100, 4, time.Time{})
	stale.Metrics["cpu"] = AutoscaleMetric{Value: 100, At: now.Add(-MetricFreshFor - time.Second)}
	require.Equal(t, 4, p.Decide(stale).To, "a stale value decides nothing")
	// The template's size constraint narrows the range.
	c := in(10, 4, time.Time{})
	c.Constraint = SizeConstraint{Min: 3}
	require.Equal(t, 3, p.Decide(c).To)
}

func TestAutoscaleProblemsNameTheField(t *testing.T) {
	t.Parallel()
	bad := Autoscale{Min: 0, Max: 3, Schedules: []AutoscaleSchedule{{Cron: "0 8 * *", Size: 9}},
		Target: &AutoscaleTarget{Metric: "CPU", Value: -1, Hysteresis: 1, MaxStep: -1, Cooldown: -1}}
	fields := map[string]bool{}
	for _, p := range bad.Problems("a") {
		fields[p.Field] = true
	}
	for _, f := range []string{"a.min", "a.schedules[0].cron", "a.schedules[0].size", "a.target.metric", "a.target.value",
		"a.target.hysteresis", "a.target.maxStep", "a.target.cooldown"} {
		require.True(t, fields[f], "%s in %v", f, fields)
	}
	require.NotEmpty(t, (&Autoscale{Min: 1, Max: 2}).Problems(""), "neither schedules nor a target")
	require.NotEmpty(t, (&Autoscale{Min: 1, Max: 2}).WithinTemplate(nil, SizeConstraint{}, "policy"))
}
