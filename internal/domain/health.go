package domain

import "time"

// CheckStatus is one check's verdict on one service of one node.
type CheckStatus string

const (
	CheckHealthy  CheckStatus = "healthy"  // the check exited 0
	CheckDegraded CheckStatus = "degraded" // it exited DegradedExitCode, or ran past its timeout
	CheckFailing  CheckStatus = "failing"  // any other exit, or it could not run
	CheckUnknown  CheckStatus = "unknown"  // it never ran (the verification was aborted or failed first)
)

// DegradedExitCode is the exit status by which a check says "working, but
// not well" (EX_TEMPFAIL in sysexits.h): the service answers, slowly or with
// reduced capacity. Exit 0 is healthy, anything else failing.
const DegradedExitCode = 75

// CheckVerdict reads a finished check attempt: its exit status, whether it
// ran to an exit at all (ran), and whether it was cut at its timeout.
func CheckVerdict(exitCode int, ran, timedOut bool) CheckStatus {
	switch {
	case timedOut:
		return CheckDegraded
	case ran && exitCode == 0:
		return CheckHealthy
	case ran && exitCode == DegradedExitCode:
		return CheckDegraded
	}
	return CheckFailing
}

// HealthStatus sums a cluster's checks up: GREEN when every check passed,
// RED when any failed, YELLOW otherwise (degraded, timed out or not run).
type HealthStatus string

const (
	HealthGreen  HealthStatus = "GREEN"
	HealthYellow HealthStatus = "YELLOW"
	HealthRed    HealthStatus = "RED"
)

// MinVerifyEvery is the shortest period a template may ask for: the janitor
// runs once a minute.
const MinVerifyEvery = Duration(time.Minute)

// MaxHealthProblems bounds ClusterHealth.Problems: the cluster item stays
// small whatever the cluster's size; the verification job's tasks hold every
// result.
const MaxHealthProblems = 20

// ClusterHealth is what a cluster's latest verification found: the summary
// the cluster record carries. Per node and service results (status, time,
// duration, output tail) are the verification job's check tasks.
type ClusterHealth struct {
	Status HealthStatus `json:"status"`
	JobID  string       `json:"jobId"`
	At     time.Time    `json:"at"`
	// Counts holds how many checks ended in each CheckStatus.
	Counts map[CheckStatus]int `json:"counts"`
	// Problems lists up to MaxHealthProblems checks that did not pass.
	Problems []CheckResult `json:"problems,omitempty"`
}

// CheckResult is one check of one service on one node.
type CheckResult struct {
	Node     string        `json:"node"`
	Service  string        `json:"service"`
	Status   CheckStatus   `json:"status"`
	At       time.Time     `json:"at,omitzero"`
	Duration time.Duration `json:"durationNs,omitempty"`
	// Output is the tail of what the check printed, or why it did not run
	// (bounded to MaxStateMessage bytes).
	Output string `json:"output,omitempty"`
}

// SumHealth computes a cluster's status from its checks' counts; a
// verification with no check at all is YELLOW (nothing is known).
func SumHealth(counts map[CheckStatus]int) HealthStatus {
	switch {
	case counts[CheckFailing] > 0:
		return HealthRed
	case counts[CheckDegraded] > 0 || counts[CheckUnknown] > 0 || counts[CheckHealthy] == 0:
		return HealthYellow
	}
	return HealthGreen
}
