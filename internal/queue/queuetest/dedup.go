package queuetest

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/queue"
)

func testDeduplication(t *testing.T, b backend) {
	tenant := b.tenant(t, "acme")
	withDedup := func(taskID, dedup string) queue.Message {
		return queue.Message{TaskID: taskID, Attempt: 1, Group: "g", Dedup: dedup}
	}
	b.send(t, tenant, withDedup("first", "task-1#1#0"))
	b.send(t, tenant, withDedup("resent", "task-1#1#0"))                     // dropped
	b.send(t, tenant, withDedup("janitor", "task-1#1#1"))                    // a new send id: kept
	b.send(t, tenant, withDedup("a", "x"), withDedup("b", "x"))              // duplicate within a batch
	b.send(t, tenant, withDedup("c", "y"), withDedup("first", "task-1#1#0")) // one new, one old

	require.Equal(t, []string{"first", "janitor", "a", "c"}, b.drain(t, tenant, 4))
	b.requireEmpty(t, tenant)
}

func testDeduplicationOutlivesAck(t *testing.T, b backend) {
	tenant := b.tenant(t, "acme")
	b.send(t, tenant, msg("g", 1))
	b.ack(t, tenant, b.receiveOne(t, tenant, longVisibility))
	// The window runs from the first send, not until the message is gone.
	b.send(t, tenant, msg("g", 1))
	b.requireEmpty(t, tenant)
}

// testUnusualDeduplicationIDs: SQS takes at most 128 characters, letters,
// digits and punctuation; other ids must still tell sends apart and still
// catch duplicates.
func testUnusualDeduplicationIDs(t *testing.T, b backend) {
	tenant := b.tenant(t, "acme")
	long := strings.Repeat("p", 200)
	sends := []struct{ taskID, dedup string }{
		{"long-1", long + "#1"},
		{"long-2", long + "#2"}, // same first 128 characters
		{"long-1-again", long + "#1"},
		{"space", "with space"},
		{"unicode", "with ✓"},
		{"unicode-other", "with ✗"},
		{"unicode-again", "with ✓"},
	}
	for _, s := range sends {
		b.send(t, tenant, queue.Message{TaskID: s.taskID, Attempt: 1, Group: "g", Dedup: s.dedup})
	}
	require.Equal(t, []string{"long-1", "long-2", "space", "unicode", "unicode-other"}, b.drain(t, tenant, 5))
	b.requireEmpty(t, tenant)
}

// testDeduplicationWindowCloses: a duplicate is dropped for five minutes
// from the first send, and a duplicate inside the window does not extend it.
func testDeduplicationWindowCloses(t *testing.T, b backend) {
	if b.Advance == nil {
		t.Skip("the backend's clock cannot be moved; a 5-minute window is too long to wait for")
	}
	tenant := b.tenant(t, "acme")
	send := func(taskID string) {
		b.send(t, tenant, queue.Message{TaskID: taskID, Attempt: 1, Group: "g", Dedup: "task-1#1#0"})
	}
	send("first")
	b.Advance(4 * time.Minute)
	send("inside the window")
	b.Advance(queue.DedupWindow - 4*time.Minute - time.Second)
	send("just before it closes")
	b.Advance(2 * time.Second)
	send("after it closed")
	b.Advance(queue.DedupWindow - time.Second)
	send("inside the second window")

	require.Equal(t, []string{"first", "after it closed"}, b.drain(t, tenant, 2))
	b.requireEmpty(t, tenant)
}
