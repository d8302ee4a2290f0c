package engine

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/store"
)

// Verification (domain.OpVerify) is an ordinary job whose tasks are check
// actions: it holds the cluster's lock while it runs (so at most one runs
// per cluster, and never beside an operation), its checks run in parallel
// on the tenant's workers, and each is cut at its timeout like any action.
// What differs is the outcome: a check that finds a fault has still done
// its work, so its task succeeds with a verdict (checkResult) instead of
// failing the job, and the job's end sums the verdicts up into the
// cluster's Health in the same transaction that releases the lock
// (finish.go). A check lost with its worker is failed by the janitor like
// any attempt; its verdict is then read from the failed task.

// checkResult turns a check's answer into a successful attempt that
// carries its verdict.
func checkResult(res Result, timedOut bool) Result {
	ran := res.Err == nil || res.ExitCode > 0
	code := res.ExitCode
	if res.Err == nil {
		code = 0
	}
	res.Health = domain.CheckVerdict(code, ran, timedOut)
	if res.Err != nil {
		res.Note = res.Err.Error()
		res.Err = nil
	}
	return res
}

// verdictOf reads a check task's result; ok is false for a task that never
// ended (canceled by an abort, or still blocked).
func verdictOf(t domain.Task, status domain.TaskStatus) domain.CheckResult {
	r := domain.CheckResult{Node: t.NodeID, Service: t.Service, Status: domain.CheckUnknown}
	if n := len(t.Attempts); n > 0 {
		last := t.Attempts[n-1]
		r.At = last.EndedAt
		if !last.EndedAt.IsZero() {
			r.Duration = last.EndedAt.Sub(last.StartedAt)
		}
		r.Output = healthOutput(last)
		switch {
		case status == domain.TaskSucceeded && last.Health != "":
			r.Status = last.Health
		case status == domain.TaskFailed && strings.HasPrefix(last.Error, "timed out"):
			r.Status = domain.CheckDegraded
		case status == domain.TaskFailed:
			r.Status = domain.CheckFailing
		}
	}
	return r
}

// healthOutput is the bounded tail a check result shows: the error, else
// the last lines of stderr, else of stdout.
func healthOutput(a domain.TaskAttempt) string {
	out := a.Error
	if out == "" {
		out = strings.TrimSpace(a.Stderr)
	}
	if out == "" {
		out = strings.TrimSpace(a.Stdout)
	}
	if len(out) > domain.MaxStateMessage {
		out = strings.ToValidUTF8(out[len(out)-domain.MaxStateMessage:], "")
	}
	return out
}

// healthOf reads a verification job's check tasks and sums them up.
// total is the job's count of work tasks: all checks.
func (e *Engine) healthOf(ctx context.Context, tenant, jobID string, total int, at time.Time) (*domain.ClusterHealth, error) {
	h := &domain.ClusterHealth{JobID: jobID, At: at, Counts: map[domain.CheckStatus]int{}}
	err := e.eachTask(ctx, tenant, jobID, func(it store.Item, t domain.Task) (bool, error) {
		if t.Action != domain.ActionCheck {
			return true, nil
		}
		r := verdictOf(t, domain.TaskStatus(it.Status))
		h.Counts[r.Status]++
		if r.Status != domain.CheckHealthy && len(h.Problems) < domain.MaxHealthProblems {
			h.Problems = append(h.Problems, r)
		}
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	// Checks that never got an item never ran (chunks.go): unknown.
	seen := 0
	for _, n := range h.Counts {
		seen += n
	}
	if total > seen {
		h.Counts[domain.CheckUnknown] += total - seen
	}
	slices.SortStableFunc(h.Problems, func(a, b domain.CheckResult) int { return strings.Compare(a.Node+a.Service, b.Node+b.Service) })
	h.Status = domain.SumHealth(h.Counts)
	return h, nil
}
