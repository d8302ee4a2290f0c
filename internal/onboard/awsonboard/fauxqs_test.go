package awsonboard_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/onboard/awsonboard"
	"github.com/heddle-io/heddle/internal/queue/sqsqueue"
)

const endpointVar = "HEDDLE_SQS_ENDPOINT"

// sqsClient returns a client for the emulator named by HEDDLE_SQS_ENDPOINT.
// Without it the test is skipped, except in CI (CI=true), where an SQS
// backend that silently went untested would be a failure.
func sqsClient(t *testing.T) *sqs.Client {
	t.Helper()
	endpoint := os.Getenv(endpointVar)
	if endpoint == "" {
		const how = endpointVar + ` is not set; run scripts/fauxqs.sh start and eval "$(scripts/fauxqs.sh env)"`
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true requires onboarding to be tested against SQS: " + how)
		}
		t.Skip("skipping onboarding against SQS: " + how)
	}
	return sqsqueue.NewEmulatorClient(endpoint)
}

// fauxqsQueues returns sqsqueue on the emulator under a prefix of the
// test's own, and the long-task queues under its sqsqueue.LongPrefix, and
// deletes every queue under the prefix afterwards.
func fauxqsQueues(t *testing.T, c *sqs.Client) (short, long *sqsqueue.Queue) {
	t.Helper()
	suffix := make([]byte, 4)
	_, _ = rand.Read(suffix)
	prefix := "heddle-onboard-" + hex.EncodeToString(suffix) + "-"
	q, err := sqsqueue.New(c, sqsqueue.Options{Prefix: prefix})
	require.NoError(t, err)
	long, err = sqsqueue.New(c, sqsqueue.Options{Prefix: sqsqueue.LongPrefix(prefix)})
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		out, err := c.ListQueues(ctx, &sqs.ListQueuesInput{QueueNamePrefix: aws.String(prefix)})
		require.NoError(t, err)
		for _, url := range out.QueueUrls {
			_, err := c.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(url)})
			require.NoError(t, err)
		}
	})
	return q, long
}

func attributes(t *testing.T, c *sqs.Client, name string) (map[string]string, bool) {
	t.Helper()
	got, err := c.GetQueueUrl(t.Context(), &sqs.GetQueueUrlInput{QueueName: aws.String(name)})
	var noQueue *sqstypes.QueueDoesNotExist
	if errors.As(err, &noQueue) {
		return nil, false
	}
	require.NoError(t, err)
	out, err := c.GetQueueAttributes(t.Context(), &sqs.GetQueueAttributesInput{
		QueueUrl: got.QueueUrl, AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameAll},
	})
	require.NoError(t, err)
	return out.Attributes, true
}

// TestOnboardOnFauxqs runs a tenant's life against fauxqs (SQS) and the
// recorded Lambda: the mapping names the queue fauxqs made by its ARN (the
// long-task queue, made too, gets none), and offboarding removes the
// mapping and all four queues, twice without harm.
func TestOnboardOnFauxqs(t *testing.T) {
	t.Parallel()
	c := sqsClient(t)
	q, long := fauxqsQueues(t, c)
	name, _ := q.QueueName("acme")
	dlqName, _ := q.DeadLetterQueueName("acme")
	longName, _ := long.QueueName("acme")
	longDLQName, _ := long.DeadLetterQueueName("acme")
	ctx := t.Context()

	f, lc := newFakeLambda(t, "",
		// Onboard: nothing there yet.
		list("list-event-source-mappings-empty.json"), create(),
		// Onboard again: the mapping is there with 2.
		list("list-event-source-mappings.json"),
		// Resize to 6.
		list("list-event-source-mappings.json"), update(uuid),
		// Offboard: delete the mapping, then the queues.
		list("list-event-source-mappings.json"), remove(uuid),
		// Offboard again: no queue, so the worker's mappings are listed.
		list("list-event-source-mappings-empty.json"))
	o, err := awsonboard.New(awsonboard.Config{Queues: q, LongQueues: long, Lambda: lc, FunctionName: worker})
	require.NoError(t, err)

	require.NoError(t, o.Onboard(ctx, acme(1)))
	attrs, ok := attributes(t, c, name)
	require.True(t, ok)
	require.Equal(t, "true", attrs["FifoQueue"])
	dlq, ok := attributes(t, c, dlqName)
	require.True(t, ok)
	var redrive struct {
		DeadLetterTargetArn string `json:"deadLetterTargetArn"`
	}
	require.NoError(t, json.Unmarshal([]byte(attrs["RedrivePolicy"]), &redrive))
	require.Equal(t, dlq["QueueArn"], redrive.DeadLetterTargetArn)
	longAttrs, ok := attributes(t, c, longName)
	require.True(t, ok)
	require.Equal(t, "true", longAttrs["FifoQueue"])
	longDLQ, ok := attributes(t, c, longDLQName)
	require.True(t, ok)
	require.NoError(t, json.Unmarshal([]byte(longAttrs["RedrivePolicy"]), &redrive))
	require.Equal(t, longDLQ["QueueArn"], redrive.DeadLetterTargetArn)

	got := f.requests()
	requireListed(t, got[0], attrs["QueueArn"])
	require.Equal(t, attrs["QueueArn"], got[1].body["EventSourceArn"])
	requireSettings(t, got[1].body, 2)

	require.NoError(t, o.Onboard(ctx, acme(2)), "onboarding is idempotent")
	require.NoError(t, o.Resize(ctx, acme(6)))
	requireSettings(t, f.requests()[4].body, 6)

	require.NoError(t, o.Offboard(ctx, "acme"))
	_, ok = attributes(t, c, name)
	require.False(t, ok)
	_, ok = attributes(t, c, dlqName)
	require.False(t, ok)
	for _, n := range []string{longName, longDLQName} {
		_, ok = attributes(t, c, n)
		require.False(t, ok, n)
	}
	require.NoError(t, o.Offboard(ctx, "acme"), "offboarding is idempotent")
}
