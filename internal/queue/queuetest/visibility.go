package queuetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/queue"
)

// shortVisibility runs out within a test: the shortest SQS can express.
const shortVisibility = time.Second

func testVisibilityExpiry(t *testing.T, b backend) {
	ctx := t.Context()
	tenant := b.tenant(t, "acme")
	b.send(t, tenant, msg("g", 1), msg("g", 2))

	first := b.receiveOne(t, tenant, shortVisibility)
	require.Equal(t, msg("g", 1), first.Message)
	require.Equal(t, 1, first.Received)

	// Nobody acknowledges it: it comes back, still at the head of its group.
	again := b.receiveOne(t, tenant, longVisibility)
	require.Equal(t, msg("g", 1), again.Message)
	require.Equal(t, 2, again.Received)
	require.NotEqual(t, first.Receipt, again.Receipt)
	// When it was first received stays with it (the engine tells a message
	// back from a dead worker by it).
	require.WithinDuration(t, time.Now(), first.FirstReceived, time.Minute, "the first receive's time")
	require.True(t, again.FirstReceived.Equal(first.FirstReceived), "first received %s, then %s", first.FirstReceived, again.FirstReceived)

	// The first delivery is over: its receipt cannot extend, and an ack with
	// it must not remove the message delivered since.
	require.ErrorIs(t, b.Extend(ctx, tenant, first.Receipt, longVisibility), queue.ErrReceiptInvalid)
	b.requireStaleAck(t, tenant, first.Receipt)
	require.NoError(t, b.Extend(ctx, tenant, again.Receipt, 0), "the current receipt still works")
	third := b.receiveOne(t, tenant, longVisibility)
	require.Equal(t, msg("g", 1), third.Message, "a stale ack removed the message")
	require.Equal(t, 3, third.Received)

	b.ack(t, tenant, third)
	next := b.receiveOne(t, tenant, longVisibility)
	require.Equal(t, msg("g", 2), next.Message)
	require.Equal(t, 1, next.Received)
	require.False(t, next.FirstReceived.Before(first.FirstReceived), "another message, received later")
}

func testExtendPushesVisibility(t *testing.T, b backend) {
	ctx := t.Context()
	tenant := b.tenant(t, "acme")
	b.send(t, tenant, msg("g", 1))

	// Received for 2 s, extended to a minute at once: it must not come back
	// after the 2 s.
	d := b.receiveOne(t, tenant, 2*time.Second)
	require.NoError(t, b.Extend(ctx, tenant, d.Receipt, longVisibility))
	ds := b.receive(t, tenant, queue.MaxBatch, 3*time.Second, longVisibility)
	require.Empty(t, taskIDs(ds), "extended visibility did not hold")

	// Extending again (a heartbeat) works while it runs, and ack still works.
	require.NoError(t, b.Extend(ctx, tenant, d.Receipt, longVisibility))
	b.ack(t, tenant, d)
	b.requireEmpty(t, tenant)
	require.ErrorIs(t, b.Extend(ctx, tenant, d.Receipt, longVisibility), queue.ErrReceiptInvalid, "extend after ack")
}

func testExtendZeroRedelivers(t *testing.T, b backend) {
	ctx := t.Context()
	tenant := b.tenant(t, "acme")
	b.send(t, tenant, msg("g", 1))

	d := b.receiveOne(t, tenant, longVisibility)
	require.NoError(t, b.Extend(ctx, tenant, d.Receipt, 0))
	again := b.receiveOne(t, tenant, longVisibility)
	require.Equal(t, msg("g", 1), again.Message)
	require.Equal(t, 2, again.Received)
	require.ErrorIs(t, b.Extend(ctx, tenant, d.Receipt, longVisibility), queue.ErrReceiptInvalid, "extend with the receipt given up")
	b.ack(t, tenant, again)
	b.requireEmpty(t, tenant)
}

func testUnknownReceipt(t *testing.T, b backend) {
	ctx := t.Context()
	tenant := b.tenant(t, "acme")
	b.send(t, tenant, msg("g", 1))
	d := b.receiveOne(t, tenant, longVisibility)

	// A receipt of this backend's shape that names no delivery.
	bogus := d.Receipt[:len(d.Receipt)-1] + map[bool]string{true: "A", false: "B"}[d.Receipt[len(d.Receipt)-1] != 'A']
	for _, receipt := range []string{bogus, "not-a-receipt"} {
		require.ErrorIs(t, b.Extend(ctx, tenant, receipt, longVisibility), queue.ErrReceiptInvalid, "extend %q", receipt)
		b.requireStaleAck(t, tenant, receipt)
	}
	b.requireEmpty(t, tenant) // the real delivery is untouched
	b.ack(t, tenant, d)
}
