package engine

import (
	"sync"
	"time"

	"github.com/heddle-io/heddle/internal/domain"
)

// Poll schedules that follow the work (issue 35). A detached service
// action used to be looked at first after the executor's PollAfter (the
// shell's 5 s PollInterval), however short the script: on the worker
// Lambda, which detaches every action, a one-line echo cost 5 s a step.
// Now the engine keeps, per process, a small running estimate of how long
// each service action took when it last ran on the same cluster (and, as a
// fallback, on any cluster of the tenant: the same service's script), and
// schedules a parked attempt's polls from it:
//
//   - the first look comes when the attempt is likely to have ended: its
//     estimate less what has already passed, at least Config.FirstPoll;
//     with no estimate, after FirstPoll;
//   - each later look comes after twice the one before (FirstPoll, 2x,
//     4x...), at most the executor's PollAfter (the shell's PollInterval);
//   - the estimate also reaches the executor (Attempt.Expect), so the
//     shell watches a run in place only when it is likely to end within
//     its QuickWait.
//
// Provider actions (create, confirm, delete) keep their executors' own
// schedules: the EC2 provider already first looks at a booting instance
// when it is likely to answer (its BootEstimate).
//
// The queue sets a poll's delay as the visibility of the message that
// carries the polls (SQS FIFO queues have no per-message delay, and a
// delayed send would need a new message: every poll would be a send): SQS
// counts visibility in whole seconds, rounded up (sqsqueue), so FirstPoll
// is a second, and a poll is never early; one that comes back before its
// due time is kept again for what is left (poll).
//
// The estimate lives in memory (a warm Lambda keeps it between
// invocations; each environment learns its own, and a cold one starts
// with none): an exponentially weighted mean of the attempts that
// succeeded, weight estimateWeight for the newest, bounded to
// maxEstimates keys.

// estimateWeight is the newest sample's share of a running estimate.
const estimateWeight = 0.3

// maxEstimates bounds the estimates a process keeps; when full it forgets
// them all and learns again (a few short first looks), rather than keep
// an order of use for a few kilobytes.
const maxEstimates = 4096

type estimates struct {
	mu sync.Mutex
	m  map[string]time.Duration
}

func estimateKeys(tenant string, t domain.Task) (cluster, service string) {
	svc := "|" + t.Service + "|" + string(t.Action)
	return tenant + "|" + t.ClusterID + svc, tenant + svc
}

// expect is the estimate of t's action, zero when nothing is known.
func (s *estimates) expect(tenant string, t domain.Task) time.Duration {
	if t.Service == "" {
		return 0
	}
	cluster, service := estimateKeys(tenant, t)
	s.mu.Lock()
	defer s.mu.Unlock()
	if d, ok := s.m[cluster]; ok {
		return d
	}
	return s.m[service]
}

// learn folds one successful attempt's duration into t's estimates.
func (s *estimates) learn(tenant string, t domain.Task, took time.Duration) {
	if t.Service == "" || took <= 0 {
		return
	}
	cluster, service := estimateKeys(tenant, t)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil || len(s.m) >= maxEstimates {
		s.m = map[string]time.Duration{}
	}
	for _, k := range []string{cluster, service} {
		if old, ok := s.m[k]; ok {
			s.m[k] = old + time.Duration(estimateWeight*float64(took-old))
		} else {
			s.m[k] = took
		}
	}
}

// pollDelay is how long a parked attempt of t waits for its next look,
// and the backoff step to record (parked.Step); asked is the executor's
// PollAfter, and prev the attempt's parked entry when again (it was
// looked at before).
func (e *Engine) pollDelay(tenant string, t domain.Task, asked time.Duration, prev parked, again bool) (delay, step time.Duration) {
	first := e.cfg.FirstPoll
	if t.Service == "" || first <= 0 {
		return asked, 0
	}
	if again {
		step = first
		if prev.Step > 0 {
			step = 2 * prev.Step
		}
		step = min(step, asked)
		return step, step
	}
	if est := e.est.expect(tenant, t); est > 0 {
		// The estimate may be longer than PollInterval: the first look
		// waits for it (bounded by the action's timeout, see park).
		return max(est-e.now().Sub(e.attemptStart(t)), min(first, asked)), 0
	}
	first = min(first, asked)
	return first, first
}
