package engine

import (
	"context"
	"strconv"
	"time"

	"github.com/heddle-io/heddle/internal/queue"
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
		// A group per delivery: a failing delivery's backoff holds no other
		// (receivers order events by their ids, which sort by time).
		Group: hookCluster + "#" + endpoint + "#" + eventID,
		Dedup:  "hook#" + endpoint + "#" + eventID + "#" + strconv.Itoa(send),
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
