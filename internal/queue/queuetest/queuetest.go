package queuetest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/queue"
)

// Backend is what a backend's test hands the suite.
type Backend struct {
	Queue       queue.Queue
	Provisioner queue.Provisioner
	// Advance, if set, moves the backend's clock forward by d (and keeps it
	// running with real time). The tests of the 5-minute deduplication
	// window need it and are skipped without it: they cannot wait that long
	// for SQS.
	Advance func(d time.Duration)
}

// NewBackend returns a fresh backend for t, with no tenant queues, and
// arranges its cleanup with t.Cleanup. Backends that share a server (SQS)
// give each call a namespace of its own, since every test uses the same
// tenant names.
type NewBackend func(tb testing.TB) Backend

// Run runs the conformance suite, every test in parallel.
func Run(t *testing.T, newBackend NewBackend) {
	tests := []struct {
		name string
		run  func(t *testing.T, b backend)
	}{
		{"SendReceiveAck", testSendReceiveAck},
		{"MessageRoundTrip", testMessageRoundTrip},
		{"NoQueue", testNoQueue},
		{"ProvisionerIdempotent", testProvisionerIdempotent},
		{"FIFOWithinGroup", testFIFOWithinGroup},
		{"GroupBlockedWhileInFlight", testGroupBlockedWhileInFlight},
		{"VisibilityExpiry", testVisibilityExpiry},
		{"ExtendPushesVisibility", testExtendPushesVisibility},
		{"ExtendZeroRedelivers", testExtendZeroRedelivers},
		{"UnknownReceipt", testUnknownReceipt},
		{"Deduplication", testDeduplication},
		{"DeduplicationWindowCloses", testDeduplicationWindowCloses},
		{"DeduplicationOutlivesAck", testDeduplicationOutlivesAck},
		{"UnusualDeduplicationIDs", testUnusualDeduplicationIDs},
		{"ReceiveWaitsForSend", testReceiveWaitsForSend},
		{"ReceiveTimesOutEmpty", testReceiveTimesOutEmpty},
		{"ReceiveHonorsCancel", testReceiveHonorsCancel},
		{"BatchLimits", testBatchLimits},
		{"InvalidArguments", testInvalidArguments},
		{"TenantsIsolated", testTenantsIsolated},
		{"ConcurrentReceivers", testConcurrentReceivers},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.run(t, backend{newBackend(t)})
		})
	}
}

// backend is the Backend under test, with the helpers tests share.
type backend struct{ Backend }

func (b backend) Send(ctx context.Context, tenant string, msgs ...queue.Message) error {
	return b.Queue.Send(ctx, tenant, msgs...)
}

func (b backend) Receive(ctx context.Context, tenant string, max int, wait, visibility time.Duration) ([]queue.Delivery, error) {
	return b.Queue.Receive(ctx, tenant, max, wait, visibility)
}

func (b backend) Ack(ctx context.Context, tenant, receipt string) error {
	return b.Queue.Ack(ctx, tenant, receipt)
}

func (b backend) Extend(ctx context.Context, tenant, receipt string, visibility time.Duration) error {
	return b.Queue.Extend(ctx, tenant, receipt, visibility)
}

func (b backend) CreateTenantQueue(ctx context.Context, tenant string) error {
	return b.Provisioner.CreateTenantQueue(ctx, tenant)
}

func (b backend) DeleteTenantQueue(ctx context.Context, tenant string) error {
	return b.Provisioner.DeleteTenantQueue(ctx, tenant)
}

const (
	// longVisibility outlasts any test: a delivery received with it stays
	// in flight until the test acts on it.
	longVisibility = 60 * time.Second
	// emptyWait is how long a receive that expects nothing polls.
	emptyWait = time.Second
)

// tenant creates a tenant queue named name.
func (b backend) tenant(t *testing.T, name string) string {
	t.Helper()
	require.NoError(t, b.CreateTenantQueue(t.Context(), name))
	return name
}

// msg is the i-th task message of group.
func msg(group string, i int) queue.Message {
	return queue.Message{
		TaskID:  fmt.Sprintf("%s/task-%d", group, i),
		Attempt: 1,
		Group:   group,
		Dedup:   fmt.Sprintf("%s/task-%d#1#0", group, i),
	}
}

func (b backend) send(t *testing.T, tenant string, msgs ...queue.Message) {
	t.Helper()
	require.NoError(t, b.Send(t.Context(), tenant, msgs...))
}

// receive makes one Receive of up to max deliveries, long-polling up to
// wait.
func (b backend) receive(t *testing.T, tenant string, max int, wait, visibility time.Duration) []queue.Delivery {
	t.Helper()
	ds, err := b.Receive(t.Context(), tenant, max, wait, visibility)
	require.NoError(t, err)
	require.LessOrEqual(t, len(ds), max)
	return ds
}

// receiveOne long-polls until one delivery comes.
func (b backend) receiveOne(t *testing.T, tenant string, visibility time.Duration) queue.Delivery {
	t.Helper()
	ds := b.receiveN(t, tenant, 1, visibility)
	return ds[0]
}

// receiveN receives until n deliveries came, without acknowledging them,
// and fails if they take more than 30 seconds. Receives ask for at most the
// number still missing.
func (b backend) receiveN(t *testing.T, tenant string, n int, visibility time.Duration) []queue.Delivery {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var out []queue.Delivery
	for len(out) < n {
		ds, err := b.Receive(ctx, tenant, min(n-len(out), queue.MaxBatch), 2*time.Second, visibility)
		require.NoError(t, err, "after %d of %d deliveries", len(out), n)
		out = append(out, ds...)
	}
	require.Len(t, out, n)
	return out
}

// drain receives and acknowledges until n deliveries came, and returns
// their task ids in the order they came. It fails if they take more than 30
// seconds.
func (b backend) drain(t *testing.T, tenant string, n int) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var ids []string
	for len(ids) < n {
		ds, err := b.Receive(ctx, tenant, queue.MaxBatch, 2*time.Second, longVisibility)
		require.NoError(t, err, "after %d of %d deliveries", len(ids), n)
		ids = append(ids, taskIDs(ds)...)
		b.ack(t, tenant, ds...)
	}
	return ids
}

// requireEmpty checks that nothing is deliverable now.
func (b backend) requireEmpty(t *testing.T, tenant string) {
	t.Helper()
	ds := b.receive(t, tenant, queue.MaxBatch, emptyWait, longVisibility)
	require.Empty(t, taskIDs(ds), "nothing should be deliverable")
}

func (b backend) ack(t *testing.T, tenant string, ds ...queue.Delivery) {
	t.Helper()
	for _, d := range ds {
		require.NoError(t, b.Ack(t.Context(), tenant, d.Receipt), "ack %s", d.TaskID)
	}
}

// requireStaleAck acks with a receipt that is no longer valid: memqueue
// refuses, SQS accepts and ignores it. Either way the message must survive,
// which callers check afterwards.
func (b backend) requireStaleAck(t *testing.T, tenant, receipt string) {
	t.Helper()
	err := b.Ack(t.Context(), tenant, receipt)
	if err != nil {
		require.ErrorIs(t, err, queue.ErrReceiptInvalid)
	}
}

func taskIDs(ds []queue.Delivery) []string {
	ids := make([]string, len(ds))
	for i, d := range ds {
		ids[i] = d.TaskID
	}
	return ids
}

// requireRefused fails unless err is an error other than ErrNoQueue: the
// argument itself was refused.
func requireRefused(t *testing.T, err error, what string) {
	t.Helper()
	require.Error(t, err, what)
	require.False(t, errors.Is(err, queue.ErrNoQueue), "%s: refused for a missing queue rather than for the argument: %v", what, err)
}
