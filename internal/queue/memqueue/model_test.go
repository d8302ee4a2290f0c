package memqueue_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/queue"
	"github.com/heddle-io/heddle/internal/queue/memqueue"
)

// FuzzOperations runs arbitrary sequences of sends, receives, acks, extends
// and clock moves against a Queue on a fake clock, and checks every answer
// against a plain model of the queue's observable state: which message heads
// each group, which deliveries are in flight, which receipts are valid and
// which sends the deduplication window drops. It checks no order between
// groups (that is the queue's choice), only that a Receive serves as many
// groups as it may.
func FuzzOperations(f *testing.F) {
	f.Add([]byte{0, 1, 1, 0, 1, 2, 1, 3, 1, 2, 0, 4, 3, 1, 2, 1, 3, 1})
	f.Add([]byte{0, 0, 0, 0, 0, 0, 1, 9, 1, 5, 0, 0, 0, 1, 4, 7, 1, 9, 0, 2, 0, 5, 0})
	f.Add([]byte{0, 1, 2, 1, 0, 3, 4, 6, 1, 1, 3, 0, 0, 2, 0, 1, 5, 5, 5, 0, 1, 2})
	f.Add([]byte{0, 2, 3, 0, 3, 3, 1, 7, 2, 0, 3, 0, 1, 1, 1, 0, 3, 1, 2, 2, 4, 1, 1, 3})
	f.Fuzz(func(t *testing.T, ops []byte) {
		runModel(t, ops)
	})
}

func TestOperationsAgainstModel(t *testing.T) {
	t.Parallel()
	// A fixed pseudo-random walk long enough to cross deduplication windows
	// and visibility deadlines many times; the fuzz target explores more.
	ops := make([]byte, 4000)
	x := uint32(1)
	for i := range ops {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		ops[i] = byte(x)
	}
	runModel(t, ops)
}

type modelMessage struct {
	queue.Message
	received int
	receipt  string // of the current delivery, "" when none
	deadline time.Time
	acked    bool
}

type model struct {
	now      time.Time
	groups   map[string][]*modelMessage // unacknowledged, in send order
	dedup    map[[2]string]time.Time    // first send of group+dedup
	receipts map[string]*modelMessage   // every receipt ever handed out
	history  []string                   // the same receipts, in order
	sent     int
}

func (m *model) inFlight(msg *modelMessage) bool {
	return msg.receipt != "" && msg.deadline.After(m.now)
}

func (m *model) available() int {
	n := 0
	for _, msgs := range m.groups {
		if len(msgs) > 0 && !m.inFlight(msgs[0]) {
			n++
		}
	}
	return n
}

func (m *model) valid(receipt string) bool {
	msg := m.receipts[receipt]
	return msg != nil && !msg.acked && msg.receipt == receipt && m.inFlight(msg)
}

func runModel(t *testing.T, ops []byte) {
	clock := &fakeClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	q := memqueue.New(memqueue.Options{Now: clock.Now})
	ctx := t.Context()
	const tenant = "acme"
	require.NoError(t, q.CreateTenantQueue(ctx, tenant))
	m := &model{
		now:      clock.Now(),
		groups:   map[string][]*modelMessage{},
		dedup:    map[[2]string]time.Time{},
		receipts: map[string]*modelMessage{},
	}

	next := func() int {
		if len(ops) == 0 {
			return 0
		}
		b := ops[0]
		ops = ops[1:]
		return int(b)
	}
	pickReceipt := func() string {
		if len(m.history) == 0 {
			return "none"
		}
		return m.history[next()%len(m.history)]
	}
	requireValidity := func(err error, receipt, op string) {
		t.Helper()
		if m.valid(receipt) {
			require.NoError(t, err, "%s %s", op, receipt)
		} else {
			require.ErrorIs(t, err, queue.ErrReceiptInvalid, "%s %s", op, receipt)
		}
	}

	for step := 0; len(ops) > 0; step++ {
		switch next() % 6 {
		case 0: // send
			msg := queue.Message{
				TaskID:  fmt.Sprintf("m%d", m.sent),
				Attempt: 1,
				Group:   fmt.Sprintf("g%d", next()%4),
				Dedup:   fmt.Sprintf("d%d", next()%8),
			}
			m.sent++
			require.NoError(t, q.Send(ctx, tenant, msg))
			key := [2]string{msg.Group, msg.Dedup}
			if first, seen := m.dedup[key]; seen && m.now.Before(first.Add(queue.DedupWindow)) {
				continue // dropped
			}
			m.dedup[key] = m.now
			m.groups[msg.Group] = append(m.groups[msg.Group], &modelMessage{Message: msg})

		case 1: // receive
			max := next()%4 + 1
			visibility := time.Duration(next()%4) * time.Second
			want := min(max, m.available())
			ds, err := q.Receive(ctx, tenant, max, 0, visibility)
			require.NoError(t, err)
			require.Len(t, ds, want, "step %d: a receive of %d with %d groups available", step, max, m.available())
			seen := map[string]bool{}
			for _, d := range ds {
				require.False(t, seen[d.Group], "two messages of group %s in one receive", d.Group)
				seen[d.Group] = true
				msgs := m.groups[d.Group]
				require.NotEmpty(t, msgs, "delivery %s of an empty group", d.TaskID)
				head := msgs[0]
				require.False(t, m.inFlight(head), "group %s delivered while %s is in flight", d.Group, head.TaskID)
				require.Equal(t, head.Message, d.Message, "not the head of group %s", d.Group)
				head.received++
				require.Equal(t, head.received, d.Received)
				require.NotContains(t, m.receipts, d.Receipt, "receipt reused")
				head.receipt, head.deadline = d.Receipt, m.now.Add(visibility)
				m.receipts[d.Receipt] = head
				m.history = append(m.history, d.Receipt)
			}

		case 2: // ack
			receipt := pickReceipt()
			err := q.Ack(ctx, tenant, receipt)
			requireValidity(err, receipt, "ack")
			if err == nil {
				msg := m.receipts[receipt]
				msg.acked = true
				m.groups[msg.Group] = m.groups[msg.Group][1:]
			}

		case 3: // extend
			receipt := pickReceipt()
			visibility := time.Duration(next()%3) * time.Second
			err := q.Extend(ctx, tenant, receipt, visibility)
			requireValidity(err, receipt, "extend")
			if err == nil {
				msg := m.receipts[receipt]
				msg.deadline = m.now.Add(visibility)
				if visibility == 0 {
					msg.receipt = ""
				}
			}

		case 4: // a moment passes
			clock.Add(time.Duration(next()%8) * 500 * time.Millisecond)
			m.now = clock.Now()

		case 5: // a long while passes: deduplication windows close
			clock.Add(2 * time.Minute)
			m.now = clock.Now()
		}
	}

	// Nothing was lost: once every delivery has run out, each group gives
	// up what the model still holds, in order.
	clock.Add(queue.MaxVisibility)
	var want, got []string
	for _, msgs := range m.groups {
		for _, msg := range msgs {
			want = append(want, msg.TaskID)
		}
	}
	for {
		ds, err := q.Receive(ctx, tenant, queue.MaxBatch, 0, time.Hour)
		require.NoError(t, err)
		if len(ds) == 0 {
			break
		}
		for _, d := range ds {
			msgs := m.groups[d.Group]
			require.NotEmpty(t, msgs)
			require.Equal(t, msgs[0].Message, d.Message)
			m.groups[d.Group] = msgs[1:]
			got = append(got, d.TaskID)
			require.NoError(t, q.Ack(ctx, tenant, d.Receipt))
		}
	}
	require.ElementsMatch(t, want, got)
	for _, receipt := range m.history {
		require.ErrorIs(t, q.Ack(ctx, tenant, receipt), queue.ErrReceiptInvalid, "every old receipt is void after the drain")
	}
}
