package faults_test

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/faults"
	"github.com/heddle-io/heddle/internal/queue/sqsqueue"
)

// TestRedeliverOnFauxqs: a message received through a Redeliver fault is
// received again by another poller while the first still holds it, from a
// FIFO queue on fauxqs: an early, duplicate delivery.
func TestRedeliverOnFauxqs(t *testing.T) {
	t.Parallel()
	endpoint := os.Getenv("HEDDLE_SQS_ENDPOINT")
	if endpoint == "" {
		const how = `HEDDLE_SQS_ENDPOINT is unset: run scripts/fauxqs.sh start and eval "$(scripts/fauxqs.sh env)"`
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true requires the fauxqs tests: " + how)
		}
		t.Skip(how)
	}
	in, err := faults.New(faults.Config{})
	require.NoError(t, err)
	plain := sqsqueue.NewEmulatorClient(endpoint)
	faulty := sqs.New(plain.Options(), func(o *sqs.Options) { o.HTTPClient = in.Client(o.HTTPClient) })

	suffix := make([]byte, 4)
	_, _ = rand.Read(suffix)
	created, err := plain.CreateQueue(t.Context(), &sqs.CreateQueueInput{QueueName: aws.String("faults-" + hex.EncodeToString(suffix) + ".fifo"),
		Attributes: map[string]string{"FifoQueue": "true", "ContentBasedDeduplication": "true", "VisibilityTimeout": "300"}})
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = plain.DeleteQueue(t.Context(), &sqs.DeleteQueueInput{QueueUrl: created.QueueUrl}) })
	_, err = plain.SendMessage(t.Context(), &sqs.SendMessageInput{QueueUrl: created.QueueUrl, MessageBody: aws.String("task-1"), MessageGroupId: aws.String("g")})
	require.NoError(t, err)

	receive := func(c *sqs.Client) *sqs.ReceiveMessageOutput {
		out, err := c.ReceiveMessage(t.Context(), &sqs.ReceiveMessageInput{QueueUrl: created.QueueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
		require.NoError(t, err)
		return out
	}
	in.Arm("ReceiveMessage", faults.Redeliver)
	first := receive(faulty)
	require.Len(t, first.Messages, 1)
	// Without the fault the message would stay in flight for 300 s.
	second := receive(plain)
	require.Len(t, second.Messages, 1, "received again while the first poller holds it")
	require.Equal(t, "task-1", aws.ToString(second.Messages[0].Body))
	require.Equal(t, map[faults.Kind]int64{faults.Redeliver: 1}, in.Counts())

	// And without a fault it stays in flight.
	require.Empty(t, receive(plain).Messages)
}
