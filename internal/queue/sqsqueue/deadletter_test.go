package sqsqueue_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/queue"
	"github.com/heddle-io/heddle/internal/queue/sqsqueue"
)

func queueURL(t *testing.T, c *sqs.Client, name string) string {
	t.Helper()
	out, err := c.GetQueueUrl(t.Context(), &sqs.GetQueueUrlInput{QueueName: aws.String(name)})
	require.NoError(t, err)
	return aws.ToString(out.QueueUrl)
}

func queueAttributes(t *testing.T, c *sqs.Client, name string) map[string]string {
	t.Helper()
	out, err := c.GetQueueAttributes(t.Context(), &sqs.GetQueueAttributesInput{
		QueueUrl:       aws.String(queueURL(t, c, name)),
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameAll},
	})
	require.NoError(t, err)
	return out.Attributes
}

// deadLetters returns the bodies waiting in the tenant's dead-letter queue.
func deadLetters(t *testing.T, q *sqsqueue.Queue, c *sqs.Client, tenant string) []string {
	t.Helper()
	name, err := q.DeadLetterQueueName(tenant)
	require.NoError(t, err)
	out, err := c.ReceiveMessage(t.Context(), &sqs.ReceiveMessageInput{
		QueueUrl: aws.String(queueURL(t, c, name)), MaxNumberOfMessages: 10, WaitTimeSeconds: 1,
	})
	require.NoError(t, err)
	var bodies []string
	for _, m := range out.Messages {
		bodies = append(bodies, aws.ToString(m.Body))
	}
	return bodies
}

func TestTenantQueueAttributes(t *testing.T) {
	t.Parallel()
	q, c := setup(t, sqsqueue.Options{MaxReceiveCount: 3, Visibility: 90 * time.Second})
	require.NoError(t, q.CreateTenantQueue(t.Context(), "acme"))
	name, _ := q.QueueName("acme")
	dlqName, _ := q.DeadLetterQueueName("acme")

	dlq := queueAttributes(t, c, dlqName)
	require.Equal(t, "true", dlq["FifoQueue"])
	require.Equal(t, "1209600", dlq["MessageRetentionPeriod"])

	attrs := queueAttributes(t, c, name)
	require.Equal(t, "true", attrs["FifoQueue"])
	require.Equal(t, "messageGroup", attrs["DeduplicationScope"])
	require.Equal(t, "perMessageGroupId", attrs["FifoThroughputLimit"])
	require.Equal(t, "90", attrs["VisibilityTimeout"])
	var redrive struct {
		DeadLetterTargetArn string `json:"deadLetterTargetArn"`
		MaxReceiveCount     int    `json:"maxReceiveCount"`
	}
	require.NoError(t, json.Unmarshal([]byte(attrs["RedrivePolicy"]), &redrive))
	require.Equal(t, dlq["QueueArn"], redrive.DeadLetterTargetArn)
	require.Equal(t, 3, redrive.MaxReceiveCount)

	// The Lambda event source names the queue by ARN.
	tenant, err := q.TenantOf(attrs["QueueArn"])
	require.NoError(t, err)
	require.Equal(t, "acme", tenant)
	arn, err := q.QueueARN(t.Context(), "acme")
	require.NoError(t, err)
	require.Equal(t, attrs["QueueArn"], arn)

	// A tenant without a queue has no ARN.
	_, err = q.QueueARN(t.Context(), "nobody")
	require.ErrorIs(t, err, queue.ErrNoQueue)
	require.NoError(t, q.DeleteTenantQueue(t.Context(), "acme"))
	_, err = q.QueueARN(t.Context(), "acme")
	require.ErrorIs(t, err, queue.ErrNoQueue, "deleted since: the cached URL is dropped")
}

// TestCreateTenantQueueConverges: onboarding again with other options
// updates the queues in place and keeps their messages.
func TestCreateTenantQueueConverges(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	q, c := setup(t, sqsqueue.Options{MaxReceiveCount: 3})
	require.NoError(t, q.CreateTenantQueue(ctx, "acme"))
	m := queue.Message{TaskID: "t", Attempt: 1, Group: "g", Dedup: "t#1#0"}
	require.NoError(t, q.Send(ctx, "acme", m))

	name, _ := q.QueueName("acme")
	prefix := name[:len(name)-len("acme.fifo")]
	again, err := sqsqueue.New(c, sqsqueue.Options{Prefix: prefix, MaxReceiveCount: 7, Visibility: time.Hour})
	require.NoError(t, err)
	require.NoError(t, again.CreateTenantQueue(ctx, "acme"))

	attrs := queueAttributes(t, c, name)
	require.Equal(t, "3600", attrs["VisibilityTimeout"])
	require.Contains(t, attrs["RedrivePolicy"], `"maxReceiveCount":7`)
	ds, err := again.Receive(ctx, "acme", 1, time.Second, time.Minute)
	require.NoError(t, err)
	require.Len(t, ds, 1)
	require.Equal(t, m, ds[0].Message)
}

// TestDeadLetterQueue: a message received MaxReceiveCount times without an
// ack moves to the tenant's dead-letter queue and stops holding its group.
func TestDeadLetterQueue(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	q, c := setup(t, sqsqueue.Options{MaxReceiveCount: 2})
	require.NoError(t, q.CreateTenantQueue(ctx, "acme"))
	poison := queue.Message{TaskID: "poison", Attempt: 1, Group: "g", Dedup: "poison#1#0"}
	next := queue.Message{TaskID: "next", Attempt: 1, Group: "g", Dedup: "next#1#0"}
	require.NoError(t, q.Send(ctx, "acme", poison, next))

	for i := 1; i <= 2; i++ {
		ds, err := q.Receive(ctx, "acme", 1, time.Second, time.Minute)
		require.NoError(t, err)
		require.Len(t, ds, 1)
		require.Equal(t, poison, ds[0].Message)
		require.Equal(t, i, ds[0].Received)
		require.NoError(t, q.Extend(ctx, "acme", ds[0].Receipt, 0)) // the worker gives up on it
	}
	ds, err := q.Receive(ctx, "acme", 1, 2*time.Second, time.Minute)
	require.NoError(t, err)
	require.Len(t, ds, 1)
	require.Equal(t, next, ds[0].Message, "the group moved on")

	bodies := deadLetters(t, q, c, "acme")
	require.Len(t, bodies, 1)
	require.Contains(t, bodies[0], `"taskId":"poison"`)
}

// TestUnreadableMessage: a message heddle did not write is never returned;
// it goes to the dead-letter queue instead of holding its group.
func TestUnreadableMessage(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	q, c := setup(t, sqsqueue.Options{MaxReceiveCount: 2})
	require.NoError(t, q.CreateTenantQueue(ctx, "acme"))
	name, _ := q.QueueName("acme")
	_, err := c.SendMessage(ctx, &sqs.SendMessageInput{
		QueueUrl:               aws.String(queueURL(t, c, name)),
		MessageBody:            aws.String("not heddle's"),
		MessageGroupId:         aws.String("g"),
		MessageDeduplicationId: aws.String("stranger"),
	})
	require.NoError(t, err)
	m := queue.Message{TaskID: "t", Attempt: 1, Group: "g", Dedup: "t#1#0"}
	require.NoError(t, q.Send(ctx, "acme", m))

	ds, err := q.Receive(ctx, "acme", 1, 5*time.Second, time.Minute)
	require.NoError(t, err)
	require.Len(t, ds, 1)
	require.Equal(t, m, ds[0].Message)
	require.Equal(t, []string{"not heddle's"}, deadLetters(t, q, c, "acme"))
}

// TestQueueDeletedElsewhere: a queue deleted by another process is
// reported as missing, and then forgotten, by a Queue that had its URL.
func TestQueueDeletedElsewhere(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	q, c := setup(t, sqsqueue.Options{})
	require.NoError(t, q.CreateTenantQueue(ctx, "acme"))
	m := queue.Message{TaskID: "t", Attempt: 1, Group: "g", Dedup: "t#1#0"}
	require.NoError(t, q.Send(ctx, "acme", m)) // the URL is cached now

	name, _ := q.QueueName("acme")
	_, err := c.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(queueURL(t, c, name))})
	require.NoError(t, err)
	require.ErrorIs(t, q.Send(ctx, "acme", m), queue.ErrNoQueue)
	_, err = q.Receive(ctx, "acme", 1, 0, time.Minute)
	require.ErrorIs(t, err, queue.ErrNoQueue)

	// Onboarding again repairs it.
	require.NoError(t, q.CreateTenantQueue(ctx, "acme"))
	require.NoError(t, q.Send(ctx, "acme", queue.Message{TaskID: "t2", Attempt: 1, Group: "g", Dedup: "t2#1#0"}))
}
