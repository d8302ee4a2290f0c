package engine

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"time"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/queue"
	"github.com/heddle-io/heddle/internal/store"
)

// pollParam is the task param that holds a parked attempt: one whose
// executor answered PollAfter (see doc.go, "Detached attempts"). The task
// document is the only place a task's state lives, and Params is its one
// free-form field; executors never see this entry (Attempt.Poll carries
// its state instead).
const pollParam = "engine.poll"

// parked is a RUNNING attempt waiting for its next poll.
type parked struct {
	// Attempt binds the entry to one attempt: a later attempt never
	// mistakes it for its own.
	Attempt int `json:"attempt"`
	// State is the executor's PollState, handed back in Attempt.Poll.
	State string `json:"state,omitempty"`
	// Due is when the next poll may run; a delivery before it waits.
	Due time.Time `json:"due"`
	// Msg is the Dedup of the message that carries the polls: any other
	// message for the task (a duplicate, a copy the janitor replaced) is
	// acknowledged, so polls never multiply.
	Msg string `json:"msg,omitempty"`
	// Step is the last wait of the polls' backoff (estimate.go); zero
	// before it starts. Older code ignores it and polls at PollAfter.
	Step time.Duration `json:"step,omitempty"`
	// Seen is when the executor last said the run goes on: a run found
	// ended at the next look ended between the two, and its estimate
	// learns the middle (not the look's time, or the estimate would grow
	// to the polls' steps).
	Seen time.Time `json:"seen,omitzero"`
}

// parkedOf returns t's parked entry if t is RUNNING and parked for its
// current attempt.
func parkedOf(t domain.Task) (parked, bool) {
	s, ok := t.Params[pollParam]
	if !ok || t.Status != domain.TaskRunning {
		return parked{}, false
	}
	var p parked
	if err := json.Unmarshal([]byte(s), &p); err != nil || p.Attempt != t.Attempt {
		return parked{}, false
	}
	return p, true
}

func setParked(t *domain.Task, p parked) {
	t.Params = maps.Clone(t.Params)
	if t.Params == nil {
		t.Params = map[string]string{}
	}
	t.Params[pollParam] = string(mustJSON(p))
}

func clearParked(t *domain.Task) {
	if _, ok := t.Params[pollParam]; ok {
		t.Params = maps.Clone(t.Params)
		delete(t.Params, pollParam)
	}
}

// forExecutor is the task as an executor sees it: without the engine's
// parked entry.
func forExecutor(t domain.Task) domain.Task {
	clearParked(&t)
	return t
}

// attemptStart is when t's current attempt started.
func (e *Engine) attemptStart(t domain.Task) time.Time {
	if n := len(t.Attempts); n > 0 {
		return t.Attempts[n-1].StartedAt
	}
	return e.now()
}

// runEnd is when t's current attempt has used up the action's timeout.
func (e *Engine) runEnd(t domain.Task) time.Time {
	return e.attemptStart(t).Add(t.Timeout.Std())
}

// lastDeadline is the latest deadline t's current attempt can have: the
// action's timeout plus DeadlineGrace.
func (e *Engine) lastDeadline(t domain.Task) time.Time {
	return e.runEnd(t).Add(e.cfg.DeadlineGrace)
}

// poll handles a delivery for a RUNNING task: if the attempt is parked and
// the message is the one that carries its polls, it takes the poll (a
// conditional write, so of two deliveries one polls) and calls the
// executor again with the attempt's poll state. Anything else is a
// duplicate, acknowledged.
func (e *Engine) poll(ctx context.Context, ref TaskRef, lt loadedTask, d queue.Delivery) (Disposition, error) {
	p, ok := parkedOf(lt.task)
	if !ok {
		return Disposition{}, nil // running on a worker: a duplicate
	}
	if p.Msg != "" && d.Dedup != "" && d.Dedup != p.Msg {
		return Disposition{}, nil // not the message that carries the polls
	}
	if wait := p.Due.Sub(e.now()); wait > 0 {
		return Disposition{Delay: wait}, nil // back early (a worker that parked it stopped before its delay)
	}
	t := lt.task
	// While the poll runs the heartbeat renews the deadline as for any
	// running attempt; the entry stays, so that a worker dying mid-poll
	// leaves a parked attempt the janitor polls again rather than fails.
	// The deadline parking set (the due time plus ResendAfter) stays when
	// it is far enough ahead for the heartbeat's first renewal: the
	// RUNNING index then changes once per poll (when it parks again)
	// rather than twice, and DynamoDB bills an index change twice (the old
	// entry out, the new in).
	if lease := e.attemptDeadline(t); t.Deadline.Before(e.now().Add(e.cfg.TaskLease/2)) || t.Deadline.After(e.lastDeadline(t)) {
		t.Deadline = lease
	}
	p.Due = t.Deadline
	setParked(&t, p)
	key := taskKey(ref.Tenant, ref.Job, ref.Task)
	it, err := e.store.Write(ctx, store.Update(key, store.Condition{Version: lt.item.Version, StatusIn: []string{string(domain.TaskRunning)}}, taskChanges(key, t)))
	if errors.Is(err, store.ErrConditionFailed) {
		return Disposition{}, nil // another delivery took this poll, or the attempt ended
	}
	if err != nil {
		return Disposition{}, err
	}
	t.Version = it.Version
	return e.runFrom(ctx, ref, loadedTask{item: it, task: t}, d, p.State)
}

// park records that a running attempt waits for a poll after res.PollAfter
// and returns how long the delivery d is to stay hidden (zero: acknowledge
// it). The attempt stays RUNNING; its deadline becomes the poll's due time
// plus ResendAfter (never past its last deadline), so a lost poll message is
// noticed by the janitor, which sends another. The delivery carries the
// polls unless it names another task (a continuation parked: the message
// belongs to the task before it) or has been delivered PollReceives times;
// then the polls move to a fresh message, and d is acknowledged. The fresh
// message joins the node's queue group, which holds nothing else meanwhile:
// the planner chains each node's tasks, so no other task of the node is
// ready while this one runs.
func (e *Engine) park(ctx context.Context, ref TaskRef, lt loadedTask, res Result, d queue.Delivery) (time.Duration, error) {
	t := lt.task
	now := e.now()
	prev, again := parkedOf(t)
	delay, step := e.pollDelay(ref.Tenant, t, res.PollAfter, prev, again)
	due := now.Add(min(delay, queue.MaxVisibility))
	if end := e.runEnd(t); due.After(end) {
		// The last poll comes when the timeout ends: it finds the run done,
		// or the executor stops it.
		due = maxTime(end, now)
	}
	p := parked{Attempt: t.Attempt, State: res.PollState, Due: due, Msg: d.Dedup, Step: step, Seen: now}
	continuation := d.TaskID != ref.String()
	rotate := d.Receipt != "" && (continuation || (e.cfg.PollReceives > 0 && d.Received >= e.cfg.PollReceives))
	if rotate {
		if continuation {
			t.NoteSend(domain.SendContinuationPolls)
		} else {
			t.NoteSend(domain.SendPollReceives)
		}
		p.Msg = dedupID(ref, t.Attempt, t.Sends)
	}
	setParked(&t, p)
	t.Deadline = e.lastDeadline(t)
	if lease := due.Add(e.cfg.ResendAfter); lease.Before(t.Deadline) {
		t.Deadline = lease
	}
	key := taskKey(ref.Tenant, ref.Job, ref.Task)
	_, err := e.store.Write(ctx, store.Update(key, store.Condition{Version: lt.item.Version, StatusIn: []string{string(domain.TaskRunning)}}, taskChanges(key, t)))
	if errors.Is(err, store.ErrConditionFailed) {
		return 0, nil // the janitor took the attempt meanwhile
	}
	if err != nil {
		return 0, err
	}
	if rotate {
		if err := e.send(ctx, ref.Tenant, []domain.Task{t}); err != nil {
			e.log.WarnContext(ctx, "sending a parked attempt's poll message failed; the janitor will resend", "task", t.ID, "error", err)
		}
		return 0, nil
	}
	// At least a moment: a zero delay would acknowledge the message.
	return max(due.Sub(now), time.Millisecond), nil
}

// repoll is the janitor's answer to a parked attempt past its deadline
// while its last deadline is still ahead: the message that carries its
// polls was lost (or moved to the dead-letter queue, or the worker polling
// it died), so it sends a fresh one rather than fail a run that may be
// going well.
func (e *Engine) repoll(ctx context.Context, ref TaskRef, lt loadedTask, p parked, r *JanitorReport) error {
	t := lt.task
	now := e.now()
	t.NoteSend(domain.SendPollLost)
	p.Msg, p.Due = dedupID(ref, t.Attempt, t.Sends), now
	setParked(&t, p)
	t.Deadline = e.lastDeadline(t)
	if lease := now.Add(e.cfg.ResendAfter); lease.Before(t.Deadline) {
		t.Deadline = lease
	}
	key := taskKey(ref.Tenant, ref.Job, ref.Task)
	if _, err := e.store.Write(ctx, store.Update(key, store.Condition{Version: lt.item.Version, StatusIn: []string{string(domain.TaskRunning)}}, taskChanges(key, t))); err != nil {
		if errors.Is(err, store.ErrConditionFailed) {
			return nil // polled or ended meanwhile
		}
		return err
	}
	r.Resent++
	return e.send(ctx, ref.Tenant, []domain.Task{t})
}
