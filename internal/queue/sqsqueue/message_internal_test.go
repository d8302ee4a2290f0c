package sqsqueue

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/queue"
)

func TestDedupID(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("d", 129)
	tests := []struct {
		dedup string
		kept  bool
	}{
		{"j-3#install:hdfs@n-12#2#0", true},
		{strings.Repeat("d", 128), true},
		{`!"#$%&'()*+,-./:;<=>?@[\]^_{|}~` + "`", true},
		{long, false},
		{"with space", false},
		{"with ✓", false},
		{"tab\t", false},
		{digestPrefix + "0123", false}, // could collide with a digest
	}
	for _, tt := range tests {
		got := dedupID(tt.dedup)
		if tt.kept {
			require.Equal(t, tt.dedup, got)
			continue
		}
		require.True(t, strings.HasPrefix(got, digestPrefix), got)
		require.True(t, validDedupID(got))
		require.LessOrEqual(t, len(got), maxDedupID)
	}
	require.NotEqual(t, dedupID(long), dedupID(long+"x"))
}

// FuzzDedupID: every id maps onto one SQS accepts, equal ids onto equal
// ones, and distinct ids onto distinct ones.
func FuzzDedupID(f *testing.F) {
	f.Add("task#1#0", "task#1#1")
	f.Add("with space", "with\u00a0space")
	f.Add(digestPrefix+"ab", "ab")
	f.Add(strings.Repeat("x", 130), strings.Repeat("x", 131))
	f.Fuzz(func(t *testing.T, a, b string) {
		da, db := dedupID(a), dedupID(b)
		for _, d := range []string{da, db} {
			require.True(t, validDedupID(d), "%q", d)
			require.LessOrEqual(t, len(d), maxDedupID)
		}
		require.Equal(t, a == b, da == db, "%q -> %q, %q -> %q", a, da, b, db)
		require.Equal(t, da, dedupID(a), "deterministic")
	})
}

// FuzzDecodeMessage: a body either decodes into a valid message that
// encodes back to the same fields, or is refused; nothing panics.
func FuzzDecodeMessage(f *testing.F) {
	f.Add(`{"taskId":"t","attempt":1,"dedup":"d"}`, "g")
	f.Add(`{"taskId":"t","attempt":-1,"dedup":"d","extra":[1,2]}`, "c#n")
	f.Add(`{"taskId":"","attempt":1,"dedup":"d"}`, "g")
	f.Add(`{"taskId":"t\u0000","attempt":1e3,"dedup":"d"}`, "g")
	f.Add(`[]`, "")
	f.Fuzz(func(t *testing.T, raw, group string) {
		m, err := decodeMessage(raw, group)
		if err != nil {
			return
		}
		require.NoError(t, queue.ValidateMessage(m))
		require.Equal(t, group, m.Group)
		enc, err := encodeBody(m)
		require.NoError(t, err)
		again, err := decodeMessage(enc, group)
		require.NoError(t, err)
		require.Equal(t, m, again)
	})
}

// TestFormatTravelsInTheBody: a message's format version survives the
// trip, and a body from a sender that set none (or from before the field)
// decodes as format 0, which receivers read as the oldest format.
func TestFormatTravelsInTheBody(t *testing.T) {
	t.Parallel()
	raw, err := encodeBody(queue.Message{TaskID: "c1/j1/t1", Attempt: 2, Dedup: "d", Format: 7})
	require.NoError(t, err)
	m, err := decodeMessage(raw, "c1#n1")
	require.NoError(t, err)
	require.Equal(t, 7, m.Format)

	raw, err = encodeBody(queue.Message{TaskID: "c1/j1/t1", Attempt: 1, Dedup: "d"})
	require.NoError(t, err)
	require.NotContains(t, raw, "format", "a body without a format is as bodies always were")
	m, err = decodeMessage(`{"taskId":"c1/j1/t1","attempt":1,"dedup":"d"}`, "c1#n1")
	require.NoError(t, err)
	require.Equal(t, 0, m.Format)
}
