package sqsqueue_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/queue/queuetest"
	"github.com/heddle-io/heddle/internal/queue/sqsqueue"
)

// Where fauxqs 1.9.2 differs from SQS, as met by these tests (the suite
// accepts both behaviours where they differ):
//   - It scopes deduplication to the queue even with
//     DeduplicationScope=messageGroup; heddle's ids name the task, so the
//     scope never matters to it.
//   - DeleteMessage with a stale or unknown receipt succeeds and does
//     nothing; SQS refuses malformed and expired receipts.
//   - A long poll ends early, empty, when a message arrives in a group that
//     is in flight; Receive polls again for the rest of its wait.
//   - An expired delivery stays extendable and deletable until the next
//     receive (or a waiting long poll) notices it expired.
//   - Deleting a queue is immediate; SQS takes up to 60 seconds and refuses
//     a queue of the same name meanwhile (QueueDeletedRecently).
//   - Queue URLs name the host sqs.<region>.localhost, which need not
//     resolve: the SDK sends every call to its endpoint.

const endpointVar = "HEDDLE_SQS_ENDPOINT"

// client returns a client for the emulator named by HEDDLE_SQS_ENDPOINT.
// Without it the test is skipped, except in CI (CI=true), where an SQS
// backend that silently went untested would be a failure.
func client(tb testing.TB) *sqs.Client {
	tb.Helper()
	endpoint := os.Getenv(endpointVar)
	if endpoint == "" {
		const how = endpointVar + ` is not set; run scripts/fauxqs.sh start and eval "$(scripts/fauxqs.sh env)"`
		if os.Getenv("CI") == "true" {
			tb.Fatal("CI=true requires the SQS backend to be tested: " + how)
		}
		tb.Skip("skipping the SQS backend: " + how)
	}
	return sqsqueue.NewEmulatorClient(endpoint)
}

// setup returns a Queue whose queue names start with a prefix of its own,
// so that tests sharing the emulator and tenant names never meet, and
// deletes every queue under that prefix afterwards.
func setup(tb testing.TB, opts sqsqueue.Options) (*sqsqueue.Queue, *sqs.Client) {
	tb.Helper()
	c := client(tb)
	suffix := make([]byte, 4)
	_, _ = rand.Read(suffix)
	opts.Prefix = "heddle-test-" + hex.EncodeToString(suffix) + "-"
	q, err := sqsqueue.New(c, opts)
	require.NoError(tb, err)
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		out, err := c.ListQueues(ctx, &sqs.ListQueuesInput{QueueNamePrefix: aws.String(opts.Prefix)})
		require.NoError(tb, err)
		for _, url := range out.QueueUrls {
			_, err := c.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(url)})
			require.NoError(tb, err)
		}
	})
	return q, c
}

func TestConformance(t *testing.T) {
	t.Parallel()
	client(t) // skip or fail once, before the subtests
	queuetest.Run(t, func(tb testing.TB) queuetest.Backend {
		q, _ := setup(tb, sqsqueue.Options{})
		return queuetest.Backend{Queue: q, Provisioner: q}
	})
}

func BenchmarkQueue(b *testing.B) {
	queuetest.Benchmark(b, func(tb testing.TB) queuetest.Backend {
		q, _ := setup(tb, sqsqueue.Options{})
		return queuetest.Backend{Queue: q, Provisioner: q}
	})
}
