package engine

import (
	"context"
	"errors"
	"fmt"
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

// healthOutput is the bounded tail a check result shows: what the check
// itself printed (the last of stderr, else of stdout), which says why it
// failed ("answering in 900 ms"), rather than the SSH layer's "command
// exited with status 75". An error of another kind (a timeout, an
// unreachable node) leads, followed by whatever the check printed; with no
// output at all the error stands alone.
func healthOutput(a domain.TaskAttempt) string {
	own := strings.TrimSpace(a.Stderr)
	if own == "" {
		own = strings.TrimSpace(a.Stdout)
	}
	out := own
	switch {
	case own == "":
		out = a.Error
	case a.Error != "" && !exitStatusOnly(a.Error):
		out = a.Error + "; the check printed: " + own
	}
	if len(out) > domain.MaxStateMessage {
		out = strings.ToValidUTF8(out[len(out)-domain.MaxStateMessage:], "")
	}
	return out
}

// exitStatusOnly reports whether err says no more than that the command
// exited non-zero (sshexec.ExitError's text), which the check's own output
// explains better.
func exitStatusOnly(err string) bool {
	return strings.Contains(err, "command exited with status")
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

// ErrNothingToVerify: no service of the cluster defines a check action.
var ErrNothingToVerify = errors.New("engine: no service of the cluster defines a check action")

// A due verification is an item of its own per cluster (VERIFYDUE,
// indexed in VERIFY#<shard> by when it is due), not a field of the cluster
// item, whose one index entry already serves its lease. The job end that
// makes one due writes it in its transaction; the janitor deletes it once
// it has submitted the verification (whose end writes the next one when
// the template asks for periodic verification).
func verifyPartition(shard int) string { return fmt.Sprintf("VERIFY#%d", shard) }

func verifyDueKey(tenant, cluster string) store.Key {
	return store.Key{PK: store.TenantPK(tenant, "VERIFYDUE"), SK: cluster}
}

// verifySchedule is what a job's end does to c's due verification: make
// one due now (a create or scale that succeeded, Effect.Verify), due a
// period after a verification ended (the template's VerifyEvery), or none
// (the cluster is gone, or a verification ended, whatever it found, and
// none is periodic: one that was due is what it did, and another right
// after it would only stand in the way of the user's next operation).
func verifySchedule(tenant string, c domain.Cluster, job domain.Job, effect Effect, succeeded bool, now time.Time) []store.Op {
	key := verifyDueKey(tenant, c.ID)
	if c.Status.Terminal() {
		return []store.Op{store.Delete(key, store.Condition{})}
	}
	var due time.Time
	switch {
	case effect.Verify && succeeded:
		due = now
	case job.Operation == domain.OpVerify && c.Resolved != nil && c.Resolved.Administration.VerifyEvery > 0:
		due = now.Add(c.Resolved.Administration.VerifyEvery.Std())
	case job.Operation == domain.OpVerify:
		// A verification just ended: one due from an earlier job's end
		// (a create's) is done, and started later it would hold the
		// cluster against the user's next operation for nothing.
		return []store.Op{store.Delete(key, store.Condition{})}
	default:
		return nil
	}
	return []store.Op{store.Put(store.Item{Key: key, Data: mustJSON(map[string]string{"cluster": c.ID}),
		Index: &store.IndexKey{Partition: verifyPartition(shardOf(tenant + c.ID)), Sort: store.SortableTime(due)}}, store.Condition{})}
}

// startDueVerification hands a cluster whose verification is due to
// Verify, unless a job holds it (a later pass looks again), then drops
// the due item, on the version it read: a job end that made it due again
// meanwhile wins.
func (e *Engine) startDueVerification(ctx context.Context, indexed store.Item, r *JanitorReport) error {
	return e.startDue(ctx, indexed, "VERIFYDUE", func(domain.Cluster) bool { return true }, e.cfg.Verify, &r.Verifications)
}
