package queuetest

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/queue"
)

func testSendReceiveAck(t *testing.T, b backend) {
	tenant := b.tenant(t, "acme")
	m := msg("c1#n1", 1)
	b.send(t, tenant, m)

	d := b.receiveOne(t, tenant, longVisibility)
	require.Equal(t, m, d.Message)
	require.Equal(t, 1, d.Received)
	require.NotEmpty(t, d.Receipt)

	b.ack(t, tenant, d)
	b.requireEmpty(t, tenant)
	b.requireStaleAck(t, tenant, d.Receipt)

	// Sending nothing is allowed and does nothing.
	require.NoError(t, b.Send(t.Context(), tenant))
	b.requireEmpty(t, tenant)
}

func testMessageRoundTrip(t *testing.T, b backend) {
	tenant := b.tenant(t, "acme")
	msgs := []queue.Message{
		{TaskID: "t-0", Attempt: 0, Group: "g", Dedup: "d"},
		{TaskID: "cluster-7/node-12/install:hadoop-hdfs-namenode", Attempt: 3, Group: "cluster-7#node-12", Dedup: "cluster-7/node-12/install:hadoop-hdfs-namenode#3#2"},
		{TaskID: "unicode ✓ \"quoted\" \\ back", Attempt: 1 << 30, Group: "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~", Dedup: "punct!#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"},
		{TaskID: "t-3", Attempt: 2, Group: string(make128('g')), Dedup: string(make128('d'))},
	}
	b.send(t, tenant, msgs...)

	got := map[string]queue.Delivery{}
	for _, d := range b.receiveN(t, tenant, len(msgs), longVisibility) {
		got[d.TaskID] = d
	}
	for _, m := range msgs {
		d, ok := got[m.TaskID]
		require.True(t, ok, "no delivery of %q", m.TaskID)
		require.Equal(t, m, d.Message, "fields of %q", m.TaskID)
		require.Equal(t, 1, d.Received)
	}
}

func make128(c byte) []byte {
	b := make([]byte, queue.MaxGroupLength)
	for i := range b {
		b[i] = c
	}
	return b
}

func testNoQueue(t *testing.T, b backend) {
	ctx := t.Context()
	requireNoQueue := func(t *testing.T, tenant string) {
		t.Helper()
		require.ErrorIs(t, b.Send(ctx, tenant, msg("g", 1)), queue.ErrNoQueue, "send")
		_, err := b.Receive(ctx, tenant, 1, 0, longVisibility)
		require.ErrorIs(t, err, queue.ErrNoQueue, "receive")
		_, err = b.Receive(ctx, tenant, 1, emptyWait, longVisibility)
		require.ErrorIs(t, err, queue.ErrNoQueue, "receive with wait")
		require.ErrorIs(t, b.Ack(ctx, tenant, "receipt"), queue.ErrNoQueue, "ack")
		require.ErrorIs(t, b.Extend(ctx, tenant, "receipt", longVisibility), queue.ErrNoQueue, "extend")
	}

	t.Run("never created", func(t *testing.T) {
		requireNoQueue(t, "nobody")
	})
	t.Run("deleted", func(t *testing.T) {
		tenant := b.tenant(t, "gone")
		b.send(t, tenant, msg("g", 1))
		d := b.receiveOne(t, tenant, longVisibility)
		require.NoError(t, b.DeleteTenantQueue(ctx, tenant))
		requireNoQueue(t, tenant)
		require.ErrorIs(t, b.Ack(ctx, tenant, d.Receipt), queue.ErrNoQueue, "ack of a delivery from the deleted queue")
	})
}

func testProvisionerIdempotent(t *testing.T, b backend) {
	ctx := t.Context()
	tenant := b.tenant(t, "acme")
	b.send(t, tenant, msg("g", 1))
	// Creating again keeps the queue and its messages.
	require.NoError(t, b.CreateTenantQueue(ctx, tenant))
	d := b.receiveOne(t, tenant, longVisibility)
	require.Equal(t, msg("g", 1), d.Message)

	require.NoError(t, b.DeleteTenantQueue(ctx, tenant))
	require.NoError(t, b.DeleteTenantQueue(ctx, tenant), "deleting twice")
	require.NoError(t, b.DeleteTenantQueue(ctx, "never-created"), "deleting what never existed")
}

func testFIFOWithinGroup(t *testing.T, b backend) {
	tenant := b.tenant(t, "acme")
	const n = 15 // two sends: a full batch, then more
	var want []string
	var batch []queue.Message
	for i := range n {
		m := msg("c1#n1", i)
		want = append(want, m.TaskID)
		batch = append(batch, m)
		if len(batch) == queue.MaxBatch || i == n-1 {
			b.send(t, tenant, batch...)
			batch = nil
		}
	}
	require.Equal(t, want, b.drain(t, tenant, n))
	b.requireEmpty(t, tenant)
}

func testGroupBlockedWhileInFlight(t *testing.T, b backend) {
	tenant := b.tenant(t, "acme")
	b.send(t, tenant, msg("a", 1), msg("a", 2), msg("b", 1))

	first := b.receiveOne(t, tenant, longVisibility)
	require.Equal(t, msg(first.Group, 1), first.Message, "a group's head comes first")
	other := map[string]string{"a": "b", "b": "a"}[first.Group]

	// The other group is served while the first one is blocked.
	second := b.receiveOne(t, tenant, longVisibility)
	require.Equal(t, msg(other, 1), second.Message, "only the other group's head; %s is blocked by %s", first.Group, first.TaskID)

	// Both groups are held now: nothing is deliverable, not even what is
	// sent to them meanwhile.
	b.requireEmpty(t, tenant)
	b.send(t, tenant, msg("a", 3), msg("b", 2))
	b.requireEmpty(t, tenant)

	// Acknowledging a group's message unblocks that group, and only it.
	byGroup := map[string]queue.Delivery{first.Group: first, second.Group: second}
	b.ack(t, tenant, byGroup["b"])
	next := b.receiveOne(t, tenant, longVisibility)
	require.Equal(t, msg("b", 2), next.Message)
	b.requireEmpty(t, tenant) // a is still held, b again
	b.ack(t, tenant, next)

	b.ack(t, tenant, byGroup["a"])
	require.Equal(t, []string{msg("a", 2).TaskID, msg("a", 3).TaskID}, b.drain(t, tenant, 2))
	b.requireEmpty(t, tenant)
}

func testTenantsIsolated(t *testing.T, b backend) {
	ctx := t.Context()
	acme, globex := b.tenant(t, "acme"), b.tenant(t, "globex")
	b.send(t, acme, msg("g", 1))
	b.requireEmpty(t, globex)

	d := b.receiveOne(t, acme, longVisibility)
	require.Equal(t, msg("g", 1), d.Message)

	// Another tenant's receipt does nothing on this tenant's queue.
	require.ErrorIs(t, b.Extend(ctx, globex, d.Receipt, 0), queue.ErrReceiptInvalid)
	b.requireStaleAck(t, globex, d.Receipt)
	b.requireEmpty(t, acme) // still in flight at acme, not released

	// Same group and deduplication id in another tenant: not a duplicate.
	b.send(t, globex, msg("g", 1))
	dg := b.receiveOne(t, globex, longVisibility)
	require.Equal(t, msg("g", 1), dg.Message)

	// Deleting one tenant's queue leaves the other's alone.
	require.NoError(t, b.DeleteTenantQueue(ctx, globex))
	b.ack(t, acme, d)
	b.send(t, acme, msg("g", 2))
	require.Equal(t, msg("g", 2), b.receiveOne(t, acme, longVisibility).Message)
}
