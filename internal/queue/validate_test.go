package queue_test

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/queue"
)

func TestValidateMessage(t *testing.T) {
	t.Parallel()
	good := queue.Message{TaskID: "t", Attempt: 1, Group: "c#n", Dedup: "t#1#0"}
	tests := []struct {
		name    string
		change  func(m *queue.Message)
		wantErr string
	}{
		{"valid", func(*queue.Message) {}, ""},
		{"any dedup", func(m *queue.Message) { m.Dedup = strings.Repeat("✓ ", 100) }, ""},
		{"longest group", func(m *queue.Message) { m.Group = strings.Repeat("g", queue.MaxGroupLength) }, ""},
		{"no task", func(m *queue.Message) { m.TaskID = "" }, "task id"},
		{"task not UTF-8", func(m *queue.Message) { m.TaskID = "t\xff" }, "UTF-8"},
		{"no dedup", func(m *queue.Message) { m.Dedup = "" }, "deduplication id"},
		{"no group", func(m *queue.Message) { m.Group = "" }, "1 to 128"},
		{"group too long", func(m *queue.Message) { m.Group = strings.Repeat("g", queue.MaxGroupLength+1) }, "1 to 128"},
		{"group with space", func(m *queue.Message) { m.Group = "c n" }, "ASCII punctuation"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := good
			tt.change(&m)
			err := queue.ValidateMessage(m)
			if tt.wantErr == "" {
				require.NoError(t, err)
			} else {
				require.ErrorContains(t, err, tt.wantErr)
			}
		})
	}
}

func TestValidateSendAndReceive(t *testing.T) {
	t.Parallel()
	msgs := make([]queue.Message, queue.MaxBatch+1)
	for i := range msgs {
		msgs[i] = queue.Message{TaskID: "t", Group: "g", Dedup: "d"}
	}
	require.NoError(t, queue.ValidateSend(nil))
	require.NoError(t, queue.ValidateSend(msgs[:queue.MaxBatch]))
	require.ErrorContains(t, queue.ValidateSend(msgs), "at most 10")
	msgs[3].Group = ""
	require.ErrorContains(t, queue.ValidateSend(msgs[:5]), "message 3")

	require.NoError(t, queue.ValidateReceive(1, 0, 0))
	require.NoError(t, queue.ValidateReceive(queue.MaxBatch, queue.MaxWait, queue.MaxVisibility))
	require.Error(t, queue.ValidateReceive(0, 0, 0))
	require.Error(t, queue.ValidateReceive(1, queue.MaxWait+time.Nanosecond, 0))
	require.Error(t, queue.ValidateReceive(1, -time.Nanosecond, 0))
	require.Error(t, queue.ValidateReceive(1, 0, queue.MaxVisibility+time.Nanosecond))
	require.Error(t, queue.ValidateVisibility(-time.Nanosecond))
	require.Error(t, queue.ValidateTenant(""))
}

// sqsGroupPattern is SQS's documented MessageGroupId rule, written
// independently of ValidateGroup.
var sqsGroupPattern = regexp.MustCompile("^[a-zA-Z0-9!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~]{1,128}$")

func FuzzValidateGroup(f *testing.F) {
	for _, s := range []string{"c#n", "", " ", "nœud", strings.Repeat("g", 129), "\x7f", "~!"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, g string) {
		require.Equal(t, sqsGroupPattern.MatchString(g), queue.ValidateGroup(g) == nil, "%q", g)
	})
}
