package domain

import (
	"fmt"
	"math"
	"regexp"
	"strings"
	"time"
	_ "time/tzdata" // a Lambda image has no zoneinfo; schedules name zones

	"github.com/robfig/cron/v3"
)

// Autoscale is a template's administration.autoscale, or a cluster's
// override of it (which must stay within the template's Min and Max): the
// janitor sizes the cluster between Min and Max, from its Schedules and
// its Target. Sizes count the cluster's nodes.
type Autoscale struct {
	Min       int                 `json:"min"`
	Max       int                 `json:"max"`
	Schedules []AutoscaleSchedule `json:"schedules,omitempty"`
	Target    *AutoscaleTarget    `json:"target,omitempty"`
}

// AutoscaleSchedule sets the cluster's size from each time Cron (five
// fields, or a descriptor such as @daily) fires in Timezone (an IANA name;
// empty: UTC) until another schedule fires. With a Target, the latest
// schedule's size is the least size the target may reach.
type AutoscaleSchedule struct {
	Cron     string `json:"cron"`
	Timezone string `json:"timezone,omitempty"`
	Size     int    `json:"size"`
}

// AutoscaleTarget tracks a metric pushed for the cluster: the size grows
// (or shrinks) in proportion to Metric's value over Value once the value
// is outside Value ± Hysteresis (a fraction of Value, 0.1: 10%), by at most
// MaxStep nodes a decision (0: no limit), and no decision follows a scaling
// within Cooldown.
type AutoscaleTarget struct {
	Metric     string   `json:"metric"`
	Value      float64  `json:"value"`
	Cooldown   Duration `json:"cooldown,omitempty"`
	Hysteresis float64  `json:"hysteresis,omitempty"`
	MaxStep    int      `json:"maxStep,omitempty"`
}

// MetricFreshFor is how long a pushed value counts: an outside monitor
// that stopped pushing must not keep a cluster large (or small).
const MetricFreshFor = 10 * time.Minute

// MaxAutoscaleSchedules bounds a policy's schedules.
const MaxAutoscaleSchedules = 20

var metricName = regexp.MustCompile(`^[a-z][a-z0-9_.]{0,62}$`)

// ValidMetricName reports whether name can name a pushed metric.
func ValidMetricName(name string) bool { return metricName.MatchString(name) }

var cronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// ParseSchedule parses a schedule's cron spec in its time zone.
func (s AutoscaleSchedule) parse() (cron.Schedule, *time.Location, error) {
	if strings.Contains(s.Cron, "TZ=") {
		return nil, nil, fmt.Errorf("give the time zone in timezone, not in the cron spec")
	}
	sched, err := cronParser.Parse(s.Cron)
	if err != nil {
		return nil, nil, err
	}
	loc := time.UTC
	if s.Timezone != "" {
		if loc, err = time.LoadLocation(s.Timezone); err != nil {
			return nil, nil, fmt.Errorf("unknown time zone %q: give an IANA name such as Europe/Amsterdam", s.Timezone)
		}
	}
	return sched, loc, nil
}

// Problems checks the policy on its own, its fields named under prefix.
func (a *Autoscale) Problems(prefix string) Problems {
	var ps Problems
	add := func(field, code, format string, args ...any) {
		ps = append(ps, Problem{Field: prefix + field, Code: code, Message: fmt.Sprintf(format, args...)})
	}
	if a.Min < 1 {
		add(".min", CodeOutOfRange, "%d is too small; a policy keeps at least one node", a.Min)
	}
	if a.Max < a.Min || a.Max > MaxClusterSize {
		add(".max", CodeOutOfRange, "%d must be between min (%d) and %d", a.Max, a.Min, MaxClusterSize)
	}
	if len(a.Schedules) > MaxAutoscaleSchedules {
		add(".schedules", CodeOutOfRange, "%d schedules; give at most %d", len(a.Schedules), MaxAutoscaleSchedules)
	}
	for i, s := range a.Schedules {
		f := fmt.Sprintf(".schedules[%d]", i)
		if _, _, err := s.parse(); err != nil {
			field := ".cron"
			if strings.HasPrefix(err.Error(), "unknown time zone") {
				field = ".timezone"
			}
			add(f+field, CodeInvalid, "%v; a cron spec has five fields (minute hour day-of-month month day-of-week), such as \"0 8 * * 1-5\"", err)
		}
		if s.Size < a.Min || s.Size > a.Max {
			add(f+".size", CodeOutOfRange, "%d is outside the policy's range [%d, %d]", s.Size, a.Min, a.Max)
		}
	}
	if t := a.Target; t != nil {
		if !ValidMetricName(t.Metric) {
			add(".target.metric", CodeInvalid, "%q is not a metric name: lower-case letters, digits, '_' and '.', starting with a letter", t.Metric)
		}
		if !(t.Value > 0) || math.IsInf(t.Value, 0) {
			add(".target.value", CodeOutOfRange, "the target must be a positive number")
		}
		if t.Cooldown < 0 {
			add(".target.cooldown", CodeOutOfRange, "%s is negative; give the least time between two scalings, such as 5m", t.Cooldown)
		}
		if t.Hysteresis < 0 || t.Hysteresis >= 1 || math.IsNaN(t.Hysteresis) {
			add(".target.hysteresis", CodeOutOfRange, "give a fraction of the target in [0, 1), such as 0.1")
		}
		if t.MaxStep < 0 {
			add(".target.maxStep", CodeOutOfRange, "%d is negative; give the most nodes one decision adds or removes, or 0 for no limit", t.MaxStep)
		}
	}
	if len(a.Schedules) == 0 && a.Target == nil {
		add("", CodeRequired, "give schedules, a target, or both; a policy with neither never scales")
	}
	return ps
}

// WithinTemplate checks a cluster's override against the template's
// policy (and size constraint): an override may narrow the range, never
// widen it.
func (a *Autoscale) WithinTemplate(t *Autoscale, size SizeConstraint, prefix string) Problems {
	if t == nil {
		return Problems{{Field: prefix, Code: CodeConflict,
			Message: "the cluster's template has no administration.autoscale; a policy can only be set within the template's"}}
	}
	var ps Problems
	lo, hi := Bounds(t, size)
	if a.Min < lo {
		ps = append(ps, Problem{Field: prefix + ".min", Code: CodeOutOfRange, Message: fmt.Sprintf("%d is below the template's minimum %d", a.Min, lo)})
	}
	if a.Max > hi {
		ps = append(ps, Problem{Field: prefix + ".max", Code: CodeOutOfRange, Message: fmt.Sprintf("%d is above the template's maximum %d", a.Max, hi)})
	}
	return ps
}

// Bounds is the range a policy keeps a cluster in: its own, narrowed by
// the template's size constraint.
func Bounds(a *Autoscale, size SizeConstraint) (lo, hi int) {
	lo, hi = a.Min, a.Max
	if size.Min > lo {
		lo = size.Min
	}
	if size.Max > 0 && size.Max < hi {
		hi = size.Max
	}
	return lo, hi
}

// AutoscaleMetric is the latest value pushed for a metric.
type AutoscaleMetric struct {
	Value float64   `json:"value"`
	At    time.Time `json:"at"`
}

// AutoscaleInput is what a decision reads.
type AutoscaleInput struct {
	Now  time.Time
	Size int // the cluster's nodes now
	// Size constraint of the template (its minimum and maximum).
	Constraint  SizeConstraint
	Metrics     map[string]AutoscaleMetric
	LastScaleAt time.Time // the policy's last scaling; zero: never
	// FreeNodes is what the tenant's quota still allows; negative: no limit.
	FreeNodes int
}

// AutoscaleVerdict is a decision: To nodes (To == Size: hold), and why.
type AutoscaleVerdict struct {
	To     int
	Reason string
}

// Decide is the policy's decision for in: a pure function of it, so that
// a fake clock tests schedules and cooldowns. The result is never outside
// Bounds nor past the quota, and moves at most MaxStep.
func (a *Autoscale) Decide(in AutoscaleInput) AutoscaleVerdict {
	lo, hi := Bounds(a, in.Constraint)
	size := in.Size
	want, why := size, "at the target"
	floor, floorWhy := lo, fmt.Sprintf("kept at the minimum %d", lo)
	var latest time.Time
	for i, s := range a.Schedules {
		sched, loc, err := s.parse()
		if err != nil {
			continue // validated on the way in; an old record is not fatal
		}
		if at, ok := lastFiring(sched, in.Now.In(loc)); ok && at.After(latest) {
			latest = at
			floor, floorWhy = s.Size, fmt.Sprintf("schedule %d (%q in %s, fired %s) sets %d", i, s.Cron, loc, at.Format(time.RFC3339), s.Size)
		}
	}
	if t := a.Target; t != nil {
		m, ok := in.Metrics[t.Metric]
		switch {
		case !ok || in.Now.Sub(m.At) > MetricFreshFor:
			why = fmt.Sprintf("no value of %s pushed within %s", t.Metric, MetricFreshFor)
		case m.Value > t.Value*(1+t.Hysteresis):
			want = max(size+1, int(math.Ceil(float64(size)*m.Value/t.Value)))
			why = fmt.Sprintf("%s is %g, above the target %g", t.Metric, m.Value, t.Value)
		case m.Value < t.Value*(1-t.Hysteresis):
			want = min(size-1, int(math.Ceil(float64(size)*m.Value/t.Value)))
			why = fmt.Sprintf("%s is %g, below the target %g", t.Metric, m.Value, t.Value)
		default:
			why = fmt.Sprintf("%s is %g, within %g%% of the target %g", t.Metric, m.Value, t.Hysteresis*100, t.Value)
		}
		if want < floor {
			want, why = floor, why+"; "+floorWhy
		}
		if t.MaxStep > 0 && want > size+t.MaxStep {
			want, why = size+t.MaxStep, why+fmt.Sprintf("; at most %d nodes a step", t.MaxStep)
		}
		if t.MaxStep > 0 && want < size-t.MaxStep {
			want, why = size-t.MaxStep, why+fmt.Sprintf("; at most %d nodes a step", t.MaxStep)
		}
	} else if len(a.Schedules) > 0 {
		want, why = floor, floorWhy
	}
	if want < lo {
		want, why = lo, why+fmt.Sprintf("; kept at the minimum %d", lo)
	}
	if want > hi {
		want, why = hi, why+fmt.Sprintf("; kept at the maximum %d", hi)
	}
	if want != size && a.Target != nil && !in.LastScaleAt.IsZero() && in.Now.Before(in.LastScaleAt.Add(a.Target.Cooldown.Std())) {
		return AutoscaleVerdict{To: size, Reason: why + fmt.Sprintf("; cooling down until %s", in.LastScaleAt.Add(a.Target.Cooldown.Std()).Format(time.RFC3339))}
	}
	if want > size && in.FreeNodes >= 0 && want-size > in.FreeNodes {
		want, why = size+in.FreeNodes, why+fmt.Sprintf("; the tenant's quota allows %d more nodes", in.FreeNodes)
	}
	return AutoscaleVerdict{To: want, Reason: why}
}

// lastFiring is the latest time at or before now that sched fires,
// looked for in growing windows so that a frequent spec costs little.
func lastFiring(sched cron.Schedule, now time.Time) (time.Time, bool) {
	for _, back := range []time.Duration{time.Hour, 25 * time.Hour, 8 * 24 * time.Hour, 32 * 24 * time.Hour, 367 * 24 * time.Hour} {
		var last time.Time
		for t := sched.Next(now.Add(-back)); !t.IsZero() && !t.After(now); t = sched.Next(t) {
			last = t
		}
		if !last.IsZero() {
			return last, true
		}
	}
	return time.Time{}, false
}

// AutoscaleDecision is one decision of a cluster's policy, as `heddle
// clusters autoscale` shows it.
type AutoscaleDecision struct {
	At     time.Time `json:"at"`
	From   int       `json:"from"`
	To     int       `json:"to"`
	Reason string    `json:"reason"`
	// Job is the expand or shrink it submitted; Refused says why none was
	// (the cluster busy, the quota, the solver).
	Job     string `json:"job,omitempty"`
	Refused string `json:"refused,omitempty"`
}

// MaxAutoscaleDecisions is how many decisions a cluster keeps.
const MaxAutoscaleDecisions = 20
