package sqsqueue_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"
	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/queue"
	"github.com/heddle-io/heddle/internal/queue/sqsqueue"
)

// scriptedClient answers what fauxqs never says: failures on SQS's side and
// the errors SQS gives for expired receipts. Methods it does not script
// panic through the nil Client it embeds.
type scriptedClient struct {
	sqsqueue.Client

	mu         sync.Mutex
	urlLookups int
	batches    [][]string // entry ids of each SendMessageBatch
	// sendFailures answers the n-th SendMessageBatch.
	sendFailures [][]types.BatchResultErrorEntry
	// callErr answers DeleteMessage and ChangeMessageVisibility.
	callErr error
}

func (c *scriptedClient) GetQueueUrl(ctx context.Context, in *sqs.GetQueueUrlInput, _ ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.urlLookups++
	return &sqs.GetQueueUrlOutput{QueueUrl: aws.String("https://sqs.example/123/" + aws.ToString(in.QueueName))}, nil
}

func (c *scriptedClient) SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, _ ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var ids []string
	for _, e := range in.Entries {
		ids = append(ids, aws.ToString(e.Id))
	}
	n := len(c.batches)
	c.batches = append(c.batches, ids)
	out := &sqs.SendMessageBatchOutput{}
	if n < len(c.sendFailures) {
		out.Failed = c.sendFailures[n]
	}
	return out, nil
}

func (c *scriptedClient) DeleteMessage(context.Context, *sqs.DeleteMessageInput, ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error) {
	return &sqs.DeleteMessageOutput{}, c.callErr
}

func (c *scriptedClient) ChangeMessageVisibility(context.Context, *sqs.ChangeMessageVisibilityInput, ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error) {
	return &sqs.ChangeMessageVisibilityOutput{}, c.callErr
}

func scripted(t *testing.T, c *scriptedClient) *sqsqueue.Queue {
	t.Helper()
	q, err := sqsqueue.New(c, sqsqueue.Options{})
	require.NoError(t, err)
	return q
}

func failure(id string, senderFault bool) types.BatchResultErrorEntry {
	return types.BatchResultErrorEntry{Id: aws.String(id), Code: aws.String("InternalError"), Message: aws.String("try again"), SenderFault: senderFault}
}

func TestSendRetriesWhatSQSFailed(t *testing.T) {
	t.Parallel()
	msgs := []queue.Message{
		{TaskID: "a", Attempt: 1, Group: "g", Dedup: "a"},
		{TaskID: "b", Attempt: 1, Group: "g", Dedup: "b"},
		{TaskID: "c", Attempt: 1, Group: "h", Dedup: "c"},
	}
	tests := []struct {
		name     string
		failures [][]types.BatchResultErrorEntry
		batches  [][]string
		wantErr  string
	}{
		{
			name:    "all sent",
			batches: [][]string{{"0", "1", "2"}},
		},
		{
			name:     "the failed entries again, in order",
			failures: [][]types.BatchResultErrorEntry{{failure("2", false), failure("0", false)}, {failure("2", false)}},
			batches:  [][]string{{"0", "1", "2"}, {"0", "2"}, {"2"}},
		},
		{
			name: "gives up after three attempts",
			failures: [][]types.BatchResultErrorEntry{
				{failure("1", false)}, {failure("1", false)}, {failure("1", false)},
			},
			batches: [][]string{{"0", "1", "2"}, {"1"}, {"1"}},
			wantErr: "still failed after 3 attempts",
		},
		{
			name:     "the sender's fault is not retried",
			failures: [][]types.BatchResultErrorEntry{{failure("0", false), failure("1", true)}},
			batches:  [][]string{{"0", "1", "2"}},
			wantErr:  "SQS refused message 1",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := &scriptedClient{sendFailures: tt.failures}
			err := scripted(t, c).Send(t.Context(), "acme", msgs...)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
			} else {
				require.NoError(t, err)
			}
			require.Equal(t, tt.batches, c.batches)
		})
	}
}

func TestQueueURLCached(t *testing.T) {
	t.Parallel()
	c := &scriptedClient{}
	q := scripted(t, c)
	for range 3 {
		require.NoError(t, q.Send(t.Context(), "acme", queue.Message{TaskID: "a", Group: "g", Dedup: "a"}))
		require.NoError(t, q.Ack(t.Context(), "acme", "r"))
	}
	require.Equal(t, 1, c.urlLookups)
}

// apiError is an SQS error as the SDK reports codes it has no type for.
type apiError struct{ code, message string }

func (e apiError) Error() string                 { return e.code + ": " + e.message }
func (e apiError) ErrorCode() string             { return e.code }
func (e apiError) ErrorMessage() string          { return e.message }
func (e apiError) ErrorFault() smithy.ErrorFault { return smithy.FaultClient }

func TestReceiptErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		err     error
		invalid bool
	}{
		{"malformed", &types.ReceiptHandleIsInvalid{Message: aws.String("The input receipt handle is invalid.")}, true},
		{"not in flight", &types.MessageNotInflight{Message: aws.String("Message does not exist or is not available for visibility timeout change.")}, true},
		{"expired", apiError{"InvalidParameterValue", "Value AQEB... for parameter ReceiptHandle is invalid. Reason: The receipt handle has expired."}, true},
		{"another invalid parameter", apiError{"InvalidParameterValue", "Value 50000 for parameter VisibilityTimeout is invalid."}, false},
		{"throttled", &types.RequestThrottled{Message: aws.String("slow down")}, false},
		{"network", errors.New("connection reset"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			q := scripted(t, &scriptedClient{callErr: tt.err})
			for op, err := range map[string]error{
				"ack":    q.Ack(t.Context(), "acme", "r"),
				"extend": q.Extend(t.Context(), "acme", "r", time.Minute),
			} {
				require.Error(t, err, op)
				require.Equal(t, tt.invalid, errors.Is(err, queue.ErrReceiptInvalid), "%s: %v", op, err)
			}
		})
	}
}
