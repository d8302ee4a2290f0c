package sqsqueue_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/queue/sqsqueue"
)

// offline returns a Queue for what needs no SQS: names and records.
func offline(t testing.TB, prefix string) *sqsqueue.Queue {
	t.Helper()
	q, err := sqsqueue.New(nil, sqsqueue.Options{Prefix: prefix})
	require.NoError(t, err)
	return q
}

func TestQueueNames(t *testing.T) {
	t.Parallel()
	// With "heddle-prod-" (12 characters), "_dlq.fifo" (9) leaves 59.
	longest := strings.Repeat("t", 59)
	tests := []struct {
		tenant, queue, deadLetter string
		wantErr                   string
	}{
		{tenant: "acme", queue: "heddle-prod-acme.fifo", deadLetter: "heddle-prod-acme_dlq.fifo"},
		{tenant: "Acme-2", queue: "heddle-prod-Acme-2.fifo", deadLetter: "heddle-prod-Acme-2_dlq.fifo"},
		{tenant: "a.b", queue: "heddle-prod-a_-b.fifo", deadLetter: "heddle-prod-a_-b_dlq.fifo"},
		{tenant: "a_b", queue: "heddle-prod-a__b.fifo", deadLetter: "heddle-prod-a__b_dlq.fifo"},
		// Not the dead-letter queue of tenant "x".
		{tenant: "x_dlq", queue: "heddle-prod-x__dlq.fifo", deadLetter: "heddle-prod-x__dlq_dlq.fifo"},
		{tenant: longest, queue: "heddle-prod-" + longest + ".fifo", deadLetter: "heddle-prod-" + longest + "_dlq.fifo"},
		{tenant: longest + "t", wantErr: "too long"},
		{tenant: strings.Repeat("_", 30), wantErr: "too long"}, // 60 characters encoded
		{tenant: "", wantErr: "tenant is required"},
		{tenant: "a b", wantErr: "may hold only"},
		{tenant: "a/b", wantErr: "may hold only"},
		{tenant: "nœud", wantErr: "may hold only"},
	}
	q := offline(t, "heddle-prod-")
	for _, tt := range tests {
		t.Run(tt.tenant, func(t *testing.T) {
			t.Parallel()
			name, err := q.QueueName(tt.tenant)
			dlq, dlqErr := q.DeadLetterQueueName(tt.tenant)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				require.ErrorContains(t, dlqErr, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.NoError(t, dlqErr)
			require.Equal(t, tt.queue, name)
			require.Equal(t, tt.deadLetter, dlq)
			require.LessOrEqual(t, len(dlq), 80)

			got, err := q.TenantOf("arn:aws:sqs:eu-west-1:123456789012:" + name)
			require.NoError(t, err)
			require.Equal(t, tt.tenant, got)
			_, err = q.TenantOf("arn:aws:sqs:eu-west-1:123456789012:" + dlq)
			require.Error(t, err, "a dead-letter queue is no tenant's queue")
		})
	}
}

func TestTenantOfRefuses(t *testing.T) {
	t.Parallel()
	q := offline(t, "heddle-prod-")
	for _, arn := range []string{
		"",
		"arn:aws:sqs:eu-west-1:123456789012:heddle-dev-acme.fifo", // another stage
		"arn:aws:sqs:eu-west-1:123456789012:heddle-prod-acme",     // not FIFO
		"arn:aws:sqs:eu-west-1:123456789012:heddle-prod-.fifo",    // no tenant
		"arn:aws:sqs:eu-west-1:123456789012:heddle-prod-a_b.fifo", // not an encoding
		"arn:aws:sqs:eu-west-1:123456789012:heddle-prod-a_.fifo",
		"arn:aws:sqs:eu-west-1:123456789012:heddle-prod-a b.fifo",
	} {
		_, err := q.TenantOf(arn)
		require.Error(t, err, arn)
	}
}

func TestPrefixChecked(t *testing.T) {
	t.Parallel()
	for prefix, ok := range map[string]bool{
		"":                       true, // DefaultPrefix
		"heddle-prod-":           true,
		"heddle.prod-":           false,
		"heddle prod":            false,
		strings.Repeat("p", 70):  true, // room for one character
		strings.Repeat("p", 71):  false,
		"heddle_prod_with_under": true,
	} {
		_, err := sqsqueue.New(nil, sqsqueue.Options{Prefix: prefix})
		if ok {
			require.NoError(t, err, prefix)
		} else {
			require.Error(t, err, prefix)
		}
	}
	q := offline(t, "")
	name, err := q.QueueName("acme")
	require.NoError(t, err)
	require.Equal(t, sqsqueue.DefaultPrefix+"acme.fifo", name)
}

// FuzzQueueNames: every tenant id either has valid, distinct queue names
// that lead back to it, or is refused.
func FuzzQueueNames(f *testing.F) {
	for _, s := range []string{"acme", "a.b", "a_b", "x_dlq", "_-", "a__-b", ".", "é", strings.Repeat("z", 60)} {
		f.Add(s)
	}
	q := offline(f, "heddle-prod-")
	f.Fuzz(func(t *testing.T, tenant string) {
		name, err := q.QueueName(tenant)
		if err != nil {
			return
		}
		dlq, err := q.DeadLetterQueueName(tenant)
		require.NoError(t, err)
		for _, n := range []string{name, dlq} {
			require.LessOrEqual(t, len(n), 80)
			base, ok := strings.CutSuffix(n, ".fifo")
			require.True(t, ok)
			for _, r := range base {
				require.True(t, r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9', "%q in %q", r, n)
			}
		}
		got, err := q.TenantOf(name)
		require.NoError(t, err)
		require.Equal(t, tenant, got)
		_, err = q.TenantOf(dlq)
		require.Error(t, err)
	})
}

// TestLongQueueNames: a tenant's long-task queue lives under LongPrefix,
// and no tenant's queue under the plain prefix is another tenant's long
// queue, or the other way round.
func TestLongQueueNames(t *testing.T) {
	t.Parallel()
	require.Equal(t, "heddle-prod-long_", sqsqueue.LongPrefix("heddle-prod-"))
	require.Equal(t, sqsqueue.DefaultPrefix+"long_", sqsqueue.LongPrefix(""))
	short, long := offline(t, "heddle-prod-"), offline(t, sqsqueue.LongPrefix("heddle-prod-"))
	name, err := long.QueueName("acme")
	require.NoError(t, err)
	require.Equal(t, "heddle-prod-long_acme.fifo", name)
	dlq, err := long.DeadLetterQueueName("acme")
	require.NoError(t, err)
	require.Equal(t, "heddle-prod-long_acme_dlq.fifo", dlq)

	// Names no tenant of the short queues: the worker Lambda refuses a
	// batch from a long queue rather than run it as some other tenant's.
	_, err = short.TenantOf("arn:aws:sqs:eu-west-1:123456789012:" + name)
	require.Error(t, err)

	// Tenant ids (letters, digits, '_', '.', '-', starting with a letter or
	// digit) that would collide with a "long-" marker do not with "long_".
	for _, tenant := range []string{"long-acme", "long", "long_acme", "long.acme", "longacme", "l"} {
		s, err := short.QueueName(tenant)
		require.NoError(t, err)
		// (sqsqueue itself accepts "-acme" or ".acme", whose long queues
		// would be the queues of "long.acme" and "long_-acme"; heddle's
		// tenant ids start with a letter or digit.)
		for _, other := range []string{"acme", "Acme", "a.b", "x_dlq", "0"} {
			l, err := long.QueueName(other)
			require.NoError(t, err)
			require.NotEqual(t, s, l, "%s's queue is %s's long queue", tenant, other)
			ld, _ := long.DeadLetterQueueName(other)
			sd, _ := short.DeadLetterQueueName(tenant)
			require.NotEqual(t, sd, ld)
			require.NotEqual(t, s, ld)
			require.NotEqual(t, sd, l)
		}
	}
}
