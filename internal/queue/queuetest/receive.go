package queuetest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/queue"
)

// testReceiveWaitsForSend: a blocked Receive returns as soon as something
// becomes deliverable, for every way that can happen. The receive may wait
// 20 s but its context ends after 10 s, so returning a delivery at all proves
// it returned early; the test never measures how long it took.
func testReceiveWaitsForSend(t *testing.T, b backend) {
	tests := []struct {
		name string
		// before runs before the receive starts; after, once it waits.
		before func(t *testing.T, tenant string) queue.Delivery
		after  func(t *testing.T, tenant string, held queue.Delivery)
		want   queue.Message
	}{
		{
			name:   "send",
			before: func(t *testing.T, tenant string) queue.Delivery { return queue.Delivery{} },
			after:  func(t *testing.T, tenant string, _ queue.Delivery) { b.send(t, tenant, msg("g", 1)) },
			want:   msg("g", 1),
		},
		{
			name: "ack unblocks the group",
			before: func(t *testing.T, tenant string) queue.Delivery {
				b.send(t, tenant, msg("g", 1), msg("g", 2))
				return b.receiveOne(t, tenant, longVisibility)
			},
			after: func(t *testing.T, tenant string, held queue.Delivery) { b.ack(t, tenant, held) },
			want:  msg("g", 2),
		},
		{
			name: "extend to zero",
			before: func(t *testing.T, tenant string) queue.Delivery {
				b.send(t, tenant, msg("g", 1))
				return b.receiveOne(t, tenant, longVisibility)
			},
			after: func(t *testing.T, tenant string, held queue.Delivery) {
				require.NoError(t, b.Extend(t.Context(), tenant, held.Receipt, 0))
			},
			want: msg("g", 1),
		},
		{
			name: "visibility runs out",
			before: func(t *testing.T, tenant string) queue.Delivery {
				b.send(t, tenant, msg("g", 1))
				return b.receiveOne(t, tenant, shortVisibility)
			},
			after: func(t *testing.T, tenant string, held queue.Delivery) {},
			want:  msg("g", 1),
		},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tenant := b.tenant(t, "waiter-"+string(rune('a'+i)))
			held := tt.before(t, tenant)

			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			type result struct {
				ds  []queue.Delivery
				err error
			}
			done := make(chan result, 1)
			go func() {
				ds, err := b.Receive(ctx, tenant, queue.MaxBatch, queue.MaxWait, longVisibility)
				done <- result{ds, err}
			}()
			// Give the receive time to start waiting. Were it not waiting
			// yet, it would find the delivery at once: the test would pass
			// without proving the wake-up, but could not fail wrongly.
			time.Sleep(300 * time.Millisecond)
			tt.after(t, tenant, held)

			r := <-done
			require.NoError(t, r.err, "the receive did not return before its context ended")
			require.Len(t, r.ds, 1)
			require.Equal(t, tt.want, r.ds[0].Message)
		})
	}
}

func testReceiveTimesOutEmpty(t *testing.T, b backend) {
	tenant := b.tenant(t, "acme")
	ds, err := b.Receive(t.Context(), tenant, queue.MaxBatch, emptyWait, longVisibility)
	require.NoError(t, err, "an empty wait is not an error")
	require.Empty(t, ds)
	ds, err = b.Receive(t.Context(), tenant, queue.MaxBatch, 0, longVisibility)
	require.NoError(t, err)
	require.Empty(t, ds)
}

func testReceiveHonorsCancel(t *testing.T, b backend) {
	tenant := b.tenant(t, "acme")
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		time.Sleep(200 * time.Millisecond)
		cancel()
	}()
	// An SQS long poll goes on at the server after its caller gave up, and
	// may still take a message, which then stays invisible for the
	// receive's visibility: hence the short one.
	_, err := b.Receive(ctx, tenant, queue.MaxBatch, queue.MaxWait, shortVisibility)
	require.ErrorIs(t, err, context.Canceled)

	_, err = b.Receive(ctx, tenant, queue.MaxBatch, 0, shortVisibility)
	require.ErrorIs(t, err, context.Canceled, "a receive on a canceled context")

	// The queue still works for others.
	b.send(t, tenant, msg("g", 1))
	require.Equal(t, msg("g", 1), b.receiveOne(t, tenant, longVisibility).Message)
}

func testBatchLimits(t *testing.T, b backend) {
	ctx := t.Context()
	tenant := b.tenant(t, "acme")
	var eleven []queue.Message
	for i := range queue.MaxBatch + 1 {
		eleven = append(eleven, msg(string(rune('a'+i)), 1))
	}
	requireRefused(t, b.Send(ctx, tenant, eleven...), "a send of 11")
	b.requireEmpty(t, tenant)

	for _, max := range []int{0, -1, queue.MaxBatch + 1} {
		_, err := b.Receive(ctx, tenant, max, 0, longVisibility)
		requireRefused(t, err, fmt.Sprintf("a receive of %d", max))
	}

	// Eleven ready groups: a receive of 3 gets at most 3, and everything
	// comes eventually, each message once.
	b.send(t, tenant, eleven[:queue.MaxBatch]...)
	b.send(t, tenant, eleven[queue.MaxBatch:]...)
	some := b.receive(t, tenant, 3, 2*time.Second, longVisibility)
	require.NotEmpty(t, some)
	rest := b.receiveN(t, tenant, len(eleven)-len(some), longVisibility)
	var got []string
	for _, d := range append(some, rest...) {
		got = append(got, d.TaskID)
	}
	require.ElementsMatch(t, taskIDs(deliveries(eleven)), got)
	b.requireEmpty(t, tenant)
}

func deliveries(msgs []queue.Message) []queue.Delivery {
	ds := make([]queue.Delivery, len(msgs))
	for i, m := range msgs {
		ds[i].Message = m
	}
	return ds
}

func testInvalidArguments(t *testing.T, b backend) {
	ctx := t.Context()
	tenant := b.tenant(t, "acme")
	b.send(t, tenant, msg("held", 1))
	held := b.receiveOne(t, tenant, longVisibility)

	good := msg("g", 1)
	with := func(change func(m *queue.Message)) queue.Message {
		m := good
		change(&m)
		return m
	}
	sends := map[string]queue.Message{
		"empty group":    with(func(m *queue.Message) { m.Group = "" }),
		"group too long": with(func(m *queue.Message) { m.Group = strings.Repeat("g", queue.MaxGroupLength+1) }),
		"group space":    with(func(m *queue.Message) { m.Group = "c1 n1" }),
		"group unicode":  with(func(m *queue.Message) { m.Group = "c1#nœud" }),
		"empty task":     with(func(m *queue.Message) { m.TaskID = "" }),
		"empty dedup":    with(func(m *queue.Message) { m.Dedup = "" }),
	}
	for name, bad := range sends {
		// The valid message in the same batch is not sent either.
		requireRefused(t, b.Send(ctx, tenant, msg("other", 1), bad), "send with "+name)
	}

	receives := map[string]struct{ wait, visibility time.Duration }{
		"negative wait":       {-time.Second, longVisibility},
		"wait over the limit": {queue.MaxWait + time.Second, longVisibility},
		"negative visibility": {0, -time.Second},
		"visibility too long": {0, queue.MaxVisibility + time.Second},
	}
	for name, r := range receives {
		_, err := b.Receive(ctx, tenant, 1, r.wait, r.visibility)
		requireRefused(t, err, "receive with "+name)
	}

	for name, v := range map[string]time.Duration{"negative": -time.Second, "too long": queue.MaxVisibility + time.Second} {
		requireRefused(t, b.Extend(ctx, tenant, held.Receipt, v), "extend with "+name+" visibility")
	}

	requireRefused(t, b.CreateTenantQueue(ctx, ""), "create without a tenant")
	requireRefused(t, b.Send(ctx, "", good), "send without a tenant")

	// Nothing was sent, and the held delivery is untouched.
	b.requireEmpty(t, tenant)
	b.ack(t, tenant, held)
}
