package domain

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// DriftKind names one way a cluster's reality differs from heddle's record.
type DriftKind string

const (
	// Node drift, found by a probe of the node.
	DriftUnreachable    DriftKind = "unreachable"    // no SSH answer at the recorded address
	DriftHostKeyChanged DriftKind = "hostKeyChanged" // it answers with another host key than the pinned one: reported, never trusted
	DriftRebooted       DriftKind = "rebooted"       // its boot id differs from the one recorded at its first probe
	DriftMachineGone    DriftKind = "machineGone"    // the provider no longer has the machine (terminated)
	DriftMachineStopped DriftKind = "machineStopped" // the provider has it, stopped
	// Service drift, found by the service's check action.
	DriftServiceDown    DriftKind = "serviceDown"    // recorded running, its check fails
	DriftServiceRunning DriftKind = "serviceRunning" // recorded stopped, its check passes
	// Config drift, found without contacting the node.
	DriftConfigStale DriftKind = "configStale" // its last applied configuration differs from what the cluster renders now
)

// DriftKinds lists every kind, node kinds first.
var DriftKinds = []DriftKind{DriftUnreachable, DriftHostKeyChanged, DriftRebooted, DriftMachineGone, DriftMachineStopped,
	DriftServiceDown, DriftServiceRunning, DriftConfigStale}

// NodeLevel reports whether k is about the machine rather than one service.
func (k DriftKind) NodeLevel() bool {
	switch k {
	case DriftUnreachable, DriftHostKeyChanged, DriftRebooted, DriftMachineGone, DriftMachineStopped:
		return true
	}
	return false
}

// DefaultDriftEvery is how often the janitor checks a cluster for drift
// when its template does not say: machines heddle does not own the
// lifecycle of (EC2 instances, static hosts) hourly; the local and model
// providers' nodes live in heddle's own process, so never.
func DefaultDriftEvery(providerType string) Duration {
	switch providerType {
	case "ec2", "static":
		return Duration(time.Hour)
	}
	return 0
}

// MaxDriftFindings bounds ClusterDrift.Findings: the cluster item stays
// small whatever the cluster's size; the drift job's tasks hold every
// probe's and check's result.
const MaxDriftFindings = 50

// ClusterDrift is what the latest drift check of a cluster found.
type ClusterDrift struct {
	JobID string    `json:"jobId"`
	At    time.Time `json:"at"`
	// Drifted is how many nodes differ from heddle's record in any way.
	Drifted int `json:"drifted"`
	// Nodes is how many nodes the check looked at.
	Nodes int `json:"nodes"`
	// Counts holds how many findings of each kind there were.
	Counts map[DriftKind]int `json:"counts,omitempty"`
	// Findings lists up to MaxDriftFindings of them, by node.
	Findings []DriftFinding `json:"findings,omitempty"`
}

// DriftFinding is one difference on one node (and service, for service and
// config drift).
type DriftFinding struct {
	Node    string    `json:"node"`
	Service string    `json:"service,omitempty"`
	Kind    DriftKind `json:"kind"`
	// Detail says what was seen (bounded to MaxStateMessage bytes).
	Detail string `json:"detail,omitempty"`
	// Since is when a drift check first found it: a finding the previous
	// check also found keeps that check's time.
	Since time.Time `json:"since"`
}

// SumDrift builds a cluster's drift record from the findings of one check
// of nodes nodes: findings a node-level finding explains (the services of
// an unreachable node fail their checks too) are dropped, each keeps the
// Since of the same finding in prev, and the list is sorted and bounded.
func SumDrift(jobID string, at time.Time, nodes int, findings []DriftFinding, prev *ClusterDrift) *ClusterDrift {
	down := map[string]bool{}
	for _, f := range findings {
		if f.Kind.NodeLevel() && f.Kind != DriftRebooted {
			down[f.Node] = true
		}
	}
	since := map[string]time.Time{}
	if prev != nil {
		for _, f := range prev.Findings {
			since[f.key()] = f.Since
		}
	}
	d := &ClusterDrift{JobID: jobID, At: at, Nodes: nodes, Counts: map[DriftKind]int{}}
	drifted := map[string]bool{}
	kept := []DriftFinding{}
	for _, f := range findings {
		if down[f.Node] && !f.Kind.NodeLevel() {
			continue
		}
		if t, ok := since[f.key()]; ok && !t.IsZero() {
			f.Since = t
		} else {
			f.Since = at
		}
		if len(f.Detail) > MaxStateMessage {
			f.Detail = strings.ToValidUTF8(f.Detail[:MaxStateMessage], "")
		}
		d.Counts[f.Kind]++
		drifted[f.Node] = true
		kept = append(kept, f)
	}
	slices.SortStableFunc(kept, func(a, b DriftFinding) int {
		return strings.Compare(a.Node+"\x00"+a.Service+"\x00"+string(a.Kind), b.Node+"\x00"+b.Service+"\x00"+string(b.Kind))
	})
	if len(kept) > MaxDriftFindings {
		kept = kept[:MaxDriftFindings]
	}
	if len(kept) > 0 {
		d.Findings = kept
	}
	d.Drifted = len(drifted)
	return d
}

func (f DriftFinding) key() string { return f.Node + "\x00" + f.Service + "\x00" + string(f.Kind) }

// DriftedNodes lists the nodes of d's findings that have one of kinds (any
// kind when none is given), in order, once each.
func (d *ClusterDrift) DriftedNodes(kinds ...DriftKind) []string {
	if d == nil {
		return nil
	}
	var out []string
	for _, f := range d.Findings {
		if len(kinds) > 0 && !slices.Contains(kinds, f.Kind) {
			continue
		}
		if !slices.Contains(out, f.Node) {
			out = append(out, f.Node)
		}
	}
	return out
}

// RepairMode is what heddle does about drift: off (not even a report
// event beyond the check's own), report (the default: the report only),
// auto (repair what it can, within MaxUnhealthy).
type RepairMode string

const (
	RepairOff    RepairMode = "off"
	RepairReport RepairMode = "report"
	RepairAuto   RepairMode = "auto"
)

// RepairPolicy is a template's administration.repair.
type RepairPolicy struct {
	Mode RepairMode `json:"mode,omitempty"`
	// MaxUnhealthy is how many drifted nodes heddle repairs at once, a
	// count ("2") or a share of the cluster's nodes ("10%"); with more
	// drifted than that it repairs nothing and raises cluster.repair_halted
	// (something larger than a node is wrong). Empty: "1".
	MaxUnhealthy string `json:"maxUnhealthy,omitempty"`
	// Backoff is the least time between two repairs of one node. Empty:
	// DefaultRepairBackoff.
	Backoff Duration `json:"backoff,omitempty"`
}

// DefaultRepairBackoff spaces the repairs of one node when the template
// does not.
const DefaultRepairBackoff = Duration(30 * time.Minute)

// RepairModeOf is p's mode, report when p or its mode is unset.
func RepairModeOf(p *RepairPolicy) RepairMode {
	if p == nil || p.Mode == "" {
		return RepairReport
	}
	return p.Mode
}

// MaxUnhealthyOf is how many of nodes may be repaired at once under p: a
// count, or a share rounded down (at least 1 of a non-empty cluster).
func MaxUnhealthyOf(p *RepairPolicy, nodes int) int {
	v := "1"
	if p != nil && p.MaxUnhealthy != "" {
		v = p.MaxUnhealthy
	}
	n, pct, err := parseMaxUnhealthy(v)
	if err != nil {
		return 1
	}
	if !pct {
		return n
	}
	return max(1, nodes*n/100)
}

// BackoffOf is p's backoff, DefaultRepairBackoff when unset.
func BackoffOf(p *RepairPolicy) time.Duration {
	if p == nil || p.Backoff == 0 {
		return DefaultRepairBackoff.Std()
	}
	return p.Backoff.Std()
}

func parseMaxUnhealthy(v string) (n int, percent bool, err error) {
	s, percent := strings.CutSuffix(v, "%")
	n, err = strconv.Atoi(s)
	switch {
	case err != nil:
		return 0, false, fmt.Errorf("%q is neither a count (2) nor a percentage (10%%)", v)
	case n < 1 || percent && n > 100:
		return 0, false, fmt.Errorf("%q is out of range: a count from 1, or a percentage from 1%% to 100%%", v)
	}
	return n, percent, nil
}
