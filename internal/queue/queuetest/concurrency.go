package queuetest

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/queue"
)

// testConcurrentReceivers: many receivers on one tenant's queue never hold
// the same message, or two messages of one group, at the same time; each
// group still comes in order; and every message is delivered.
func testConcurrentReceivers(t *testing.T, b backend) {
	const (
		groups    = 20
		perGroup  = 8
		receivers = 8
	)
	tenant := b.tenant(t, "acme")
	// Half the messages are queued before the receivers start, the rest
	// while they run, so sends also land on groups that are held.
	sendRound := func(i int) error {
		var batch []queue.Message
		for g := range groups {
			batch = append(batch, msg(fmt.Sprintf("c1#n%02d", g), i))
			if len(batch) == queue.MaxBatch {
				if err := b.Send(t.Context(), tenant, batch...); err != nil {
					return err
				}
				batch = nil
			}
		}
		return nil
	}
	for i := range perGroup / 2 {
		require.NoError(t, sendRound(i))
	}

	var (
		mu        sync.Mutex
		heldBy    = map[string]int{} // group -> receive holding it
		nextIndex = map[string]int{} // group -> index of the message due next
		acked     int
		problems  []string
	)
	ctx, cancel := context.WithTimeout(t.Context(), 45*time.Second)
	defer cancel()

	// take records a receive's deliveries; it reports what breaks the rules.
	take := func(receive int, ds []queue.Delivery) {
		mu.Lock()
		defer mu.Unlock()
		for _, d := range ds {
			if other, held := heldBy[d.Group]; held && other != receive {
				problems = append(problems, fmt.Sprintf("%s delivered to receive %d while receive %d holds its group", d.TaskID, receive, other))
			}
			heldBy[d.Group] = receive
			if want := msg(d.Group, nextIndex[d.Group]); d.Message != want {
				problems = append(problems, fmt.Sprintf("group %s: got %s, want %s", d.Group, d.TaskID, want.TaskID))
			}
			nextIndex[d.Group]++
		}
	}
	// release forgets a receive's deliveries before they are acknowledged:
	// once acked, the group may go to anyone.
	release := func(ds []queue.Delivery) {
		mu.Lock()
		defer mu.Unlock()
		for _, d := range ds {
			delete(heldBy, d.Group)
		}
		acked += len(ds)
	}
	done := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return acked >= groups*perGroup || len(problems) > 0
	}

	var wg sync.WaitGroup
	var receives atomic.Int64 // numbers each receive that got something
	errs := make(chan error, receivers+1)
	wg.Go(func() {
		for i := perGroup / 2; i < perGroup; i++ {
			if err := sendRound(i); err != nil {
				errs <- fmt.Errorf("send round %d: %w", i, err)
				return
			}
		}
	})
	for range receivers {
		wg.Go(func() {
			for !done() {
				ds, err := b.Receive(ctx, tenant, queue.MaxBatch, time.Second, longVisibility)
				if err != nil {
					errs <- err
					return
				}
				if len(ds) == 0 {
					continue
				}
				take(int(receives.Add(1)), ds)
				release(ds)
				for _, d := range ds {
					if err := b.Ack(ctx, tenant, d.Receipt); err != nil {
						errs <- fmt.Errorf("ack %s: %w", d.TaskID, err)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Empty(t, problems)
	require.Equal(t, groups*perGroup, acked)
	for g := range groups {
		require.Equal(t, perGroup, nextIndex[fmt.Sprintf("c1#n%02d", g)])
	}
	b.requireEmpty(t, tenant)
}
