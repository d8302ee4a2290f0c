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
	job.AwaitingPreStart = true
	_, err = e.store.Write(ctx, store.Update(jobKey(tenant, cluster, job.ID), store.Condition{StatusIn: []string{string(domain.JobPending)}},
		store.Changes{Data: mustJSON(job), Set: counters}))
	if errors.Is(err, store.ErrConditionFailed) {
		return true, ErrSubmitAborted
	}
	if err != nil {
		return true, fmt.Errorf("marking job %s for its pre-start hooks: %w", job.ID, err)
	}
	ref := TaskRef{Tenant: tenant, Cluster: preStartCluster, Job: cluster, Task: job.ID}
	dedup := "prestart#" + job.ID
	if job.Retries > 0 {
		// A retry of a withdrawn job asks again (resubmit): the queue
		// would drop a second message with the first's id.
		dedup += "#" + strconv.Itoa(job.Retries)
	}
	if err := e.queue.Send(ctx, tenant, queue.Message{TaskID: ref.String(), Format: FormatVersion, Group: preStartCluster + "#" + cluster, Dedup: dedup}); err != nil {
		// The job is PENDING: the janitor fails it after SubmitTimeout.
		e.log.WarnContext(ctx, "queueing the pre-start hooks failed", "job", job.ID, "error", err)
	}
	return true, nil
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
