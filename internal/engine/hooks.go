package engine

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/queue"
	"github.com/heddle-io/heddle/internal/store"
)

// Hooks delivers events to webhooks (package webhooks implements it). The
// engine carries its messages on the tenants' queues, so deliveries share
// the tenant's workers and never run in an API request, and runs its
// passes with the janitor's.
type Hooks interface {
	// Deliver makes the due attempt of one delivery; a positive answer is
	// when its message should come back (the next attempt's backoff).
	Deliver(ctx context.Context, tenant, endpoint, eventID string) (time.Duration, error)
	// Dispatch turns new events into deliveries.
	Dispatch(ctx context.Context) (int, error)
	// ResendLost sends again the messages of overdue deliveries.
	ResendLost(ctx context.Context) (int, error)
}

// hookCluster stands in the cluster's place in a delivery's message
// ("~hook|<endpoint>|<event id>"): no cluster id starts with '~'. A worker
// of an older version reads it as a task that does not exist and drops
// it; the janitor's ResendLost sends it again.
const hookCluster = "~hook"

type hooksBox struct{ h Hooks }

// SetHooks wires the webhook deliverer in, before workers start (it needs
// the engine to send its messages, so it is made after).
func (e *Engine) SetHooks(h Hooks) { e.hooks.Store(&hooksBox{h}) }

func (e *Engine) hooksOrNil() Hooks {
	if b := e.hooks.Load(); b != nil {
		return b.h
	}
	return nil
}

// SendHook queues the message of one delivery attempt; send tells
// re-sends apart for the queue's deduplication.
func (e *Engine) SendHook(ctx context.Context, tenant, endpoint, eventID string, send int) error {
	ref := TaskRef{Tenant: tenant, Cluster: hookCluster, Job: endpoint, Task: eventID}
	return e.queue.Send(ctx, tenant, queue.Message{
		TaskID: ref.String(),
		Format: FormatVersion,
		// A group per delivery: a failing delivery's backoff holds no other
		// (receivers order events by their ids, which sort by time).
		Group: hookCluster + "#" + endpoint + "#" + eventID,
		Dedup: "hook#" + endpoint + "#" + eventID + "#" + strconv.Itoa(send),
	})
}

// deliverHook handles a delivery's message.
func (e *Engine) deliverHook(ctx context.Context, ref TaskRef) (Disposition, error) {
	h := e.hooksOrNil()
	if h == nil {
		// This process delivers no webhooks: leave the message to one that does.
		return Disposition{Delay: e.cfg.Visibility}, nil
	}
	wait, err := h.Deliver(ctx, ref.Tenant, ref.Job, ref.Task)
	if err != nil {
		return Disposition{}, err
	}
	return Disposition{Delay: wait}, nil
}

// PreStarter is what Hooks may also implement: the tenant's pre-start
// hooks (Coopr's onStart), which must accept a job before it starts.
type PreStarter interface {
	// HasPreStart reports whether the tenant has any.
	HasPreStart(ctx context.Context, tenant string) (bool, error)
	// PreStart asks each of them; ok false says which refused and why.
	PreStart(ctx context.Context, tenant string, job domain.Job) (ok bool, reason string, err error)
}

// preStartCluster marks a pre-start message: "~prestart|<cluster>|<job>".
const preStartCluster = "~prestart"

func (e *Engine) preStarter() PreStarter {
	ps, _ := e.hooksOrNil().(PreStarter)
	return ps
}

// gateOnPreStart leaves a job PENDING, marked, and queues the message that
// has a worker ask the tenant's pre-start hooks, when it has any: nothing
// slow happens in the request that submitted the job. gated false: start
// it now.
func (e *Engine) gateOnPreStart(ctx context.Context, tenant, cluster string, job *jobRecord, counters map[string]int64) (bool, error) {
	ps := e.preStarter()
	if ps == nil || job.AwaitingPreStart {
		return false, nil
	}
	has, err := ps.HasPreStart(ctx, tenant)
	if err != nil {
		return false, fmt.Errorf("reading the pre-start hooks of %s: %w", tenant, err)
	}
	if !has {
		return false, nil
	}
	// A staged job has two writers that may both get here (the submitter's
	// background one and the janitor's). Only the first marks it: a second
	// mark would change the job's version under a worker already answering
	// the first question, whose conditional fail or start would then find
	// the job changed and do nothing, leaving it PENDING with its question
	// consumed until the janitor asks again (ResendAfter: minutes).
	for attempt := 0; ; attempt++ {
		cur, err := e.loadJob(ctx, tenant, cluster, job.ID)
		if err != nil {
			return true, fmt.Errorf("reading job %s before asking its pre-start hooks: %w", job.ID, err)
		}
		switch {
		case cur.job.Status != domain.JobPending:
			return true, ErrSubmitAborted
		case cur.job.AwaitingPreStart:
			*job = cur.job // marked and asked by the other writer
			return true, nil
		case attempt == maxSettleAttempts:
			return true, fmt.Errorf("marking job %s for its pre-start hooks: it kept changing", job.ID)
		}
		job.AwaitingPreStart = true
		now := e.now()
		job.PreStartAskedAt, job.PreStartSentAt = now, now
		_, err = e.store.Write(ctx, store.Update(cur.item.Key, store.Condition{Version: cur.item.Version, StatusIn: []string{string(domain.JobPending)}},
			store.Changes{Data: mustJSON(job), Set: counters}))
		if errors.Is(err, store.ErrConditionFailed) {
			job.AwaitingPreStart = false
			continue // look again: the other writer may have marked it
		}
		if err != nil {
			return true, fmt.Errorf("marking job %s for its pre-start hooks: %w", job.ID, err)
		}
		break
	}
	if err := e.sendPreStart(ctx, tenant, cluster, job); err != nil {
		// The job is PENDING and marked: the janitor sends it again.
		e.log.WarnContext(ctx, "queueing the pre-start hooks failed; the janitor will resend", "job", job.ID, "error", err)
	}
	return true, nil
}

// sendPreStart queues the message that has a worker ask job's pre-start
// hooks.
func (e *Engine) sendPreStart(ctx context.Context, tenant, cluster string, job *jobRecord) error {
	ref := TaskRef{Tenant: tenant, Cluster: preStartCluster, Job: cluster, Task: job.ID}
	return e.queue.Send(ctx, tenant, queue.Message{TaskID: ref.String(), Format: FormatVersion, Group: preStartCluster + "#" + cluster, Dedup: preStartDedup(job)})
}

// preStartDedup is the deduplication id of a pre-start message. The queue
// drops, for 5 minutes, an id its group has seen, and the message that
// was lost may have been seen (a worker of an older release drops it as a
// task that does not exist), so every message must differ from all
// earlier ones of the job: a retry of a withdrawn job asks again
// (resubmit) and counts in Retries, a re-send counts in PreStartSends,
// bumped in the write that records it. A submission's first message keeps
// the id older releases gave it.
func preStartDedup(job *jobRecord) string {
	id := "prestart#" + job.ID
	if job.Retries > 0 || job.PreStartSends > 0 {
		id += "#" + strconv.Itoa(job.Retries)
	}
	if job.PreStartSends > 0 {
		id += "#" + strconv.Itoa(job.PreStartSends)
	}
	return id
}

// preStartResendAfter is how long a pre-start message may go unanswered
// before the janitor sends it again: ResendAfter, but at most half of
// SubmitTimeout, so that a lost message is sent again before the janitor
// gives up on the job (the AWS defaults make both 2 minutes).
func (e *Engine) preStartResendAfter() time.Duration {
	return min(e.cfg.ResendAfter, e.cfg.SubmitTimeout/2)
}

// resendPreStart sends the message asking a PENDING job's pre-start hooks
// again; restart says the process lost its queue with its last run, so
// the question starts over (SubmitTimeout counts from now). The write is
// conditional on the job as read: of two janitors, or a janitor and the
// worker that answers, one writes and the other does nothing. A duplicate
// ask is harmless: a worker asks only a job still PENDING and marked, and
// starting or failing it is conditional on PENDING, so the second answer
// finds it moved and writes nothing.
func (e *Engine) resendPreStart(ctx context.Context, tenant, cluster string, lj loadedJob, restart bool) (bool, error) {
	job := lj.job
	if job.Status != domain.JobPending || !job.AwaitingPreStart {
		return false, nil
	}
	now := e.now()
	job.PreStartSends++
	job.PreStartSentAt = now
	if restart {
		job.PreStartAskedAt = now
	}
	_, err := e.store.Write(ctx, store.Update(lj.item.Key, store.Condition{Version: lj.item.Version, StatusIn: []string{string(domain.JobPending)}},
		store.Changes{Data: mustJSON(job)}))
	if errors.Is(err, store.ErrConditionFailed) {
		return false, nil // answered, undone or re-sent meanwhile
	}
	if err != nil {
		return false, fmt.Errorf("recording the re-send of job %s's pre-start message: %w", job.ID, err)
	}
	return true, e.sendPreStart(ctx, tenant, cluster, &job)
}

// askPreStart handles a pre-start message: the hooks accept the job (it
// starts) or one refuses it (it fails with the hook's answer, nothing run).
func (e *Engine) askPreStart(ctx context.Context, tenant, cluster, jobID string) (Disposition, error) {
	ps := e.preStarter()
	if ps == nil {
		return Disposition{Delay: e.cfg.Visibility}, nil // leave it to a process that has them
	}
	lj, err := e.loadJob(ctx, tenant, cluster, jobID)
	if errors.Is(err, store.ErrNotFound) {
		return Disposition{}, nil
	}
	if err != nil {
		return Disposition{}, err
	}
	if lj.job.Status != domain.JobPending || !lj.job.AwaitingPreStart {
		return Disposition{}, nil // started, failed or undone already
	}
	ok, reason, err := ps.PreStart(ctx, tenant, lj.job.Job)
	if err != nil {
		return Disposition{}, err
	}
	if !ok {
		e.log.InfoContext(ctx, "a pre-start hook refused a job", "tenant", tenant, "cluster", cluster, "job", jobID, "reason", reason)
		return Disposition{}, e.failPending(ctx, tenant, cluster, lj, reason)
	}
	defs, err := e.deferredTasks(ctx, tenant, jobID)
	if err != nil {
		return Disposition{}, err
	}
	var ready []domain.Task
	for _, t := range defs {
		if t.Status == domain.TaskReady {
			ready = append(ready, t)
		}
	}
	job := lj.job
	err = e.startNow(ctx, tenant, cluster, &job, ready, nil) // counters were set with the mark
	if errors.Is(err, ErrSubmitAborted) {
		return Disposition{}, nil
	}
	if err != nil {
		return Disposition{}, err
	}
	if job.TaskTotal == 0 && len(ready) == 0 {
		return Disposition{}, e.checkJobEnd(ctx, tenant, cluster, jobID)
	}
	return Disposition{}, nil
}
