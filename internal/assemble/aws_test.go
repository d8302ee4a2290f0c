package assemble

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/engine"
	"github.com/heddle-io/heddle/internal/queue"
	"github.com/heddle-io/heddle/internal/queue/sqsqueue"
)

// TestAWSFromEnvMakesTheLongQueues: the long-task queues live under the
// queue prefix with "long_" (no AWS call is made).
func TestAWSFromEnvMakesTheLongQueues(t *testing.T) {
	t.Setenv("HEDDLE_TABLE", "heddle-test")
	t.Setenv("HEDDLE_QUEUE_PREFIX", "heddle-test-")
	t.Setenv("HEDDLE_KMS_KEY_ID", "arn:aws:kms:us-east-1:123456789012:key/k")
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
	a, err := AWSFromEnv(t.Context(), true)
	require.NoError(t, err)
	name, err := a.Queue.QueueName("acme")
	require.NoError(t, err)
	require.Equal(t, "heddle-test-acme.fifo", name)
	name, err = a.LongQueue.QueueName("acme")
	require.NoError(t, err)
	require.Equal(t, "heddle-test-long_acme.fifo", name)
}

// fakeSQS answers the calls a queue's Send and Receive make and records
// which queue each went to.
type fakeSQS struct {
	sqsqueue.Client
	mu    sync.Mutex
	calls []string
}

func (f *fakeSQS) record(call string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, call)
}

func (f *fakeSQS) GetQueueUrl(_ context.Context, in *sqs.GetQueueUrlInput, _ ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error) {
	return &sqs.GetQueueUrlOutput{QueueUrl: in.QueueName}, nil
}

func (f *fakeSQS) SendMessageBatch(_ context.Context, in *sqs.SendMessageBatchInput, _ ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	f.record("send " + aws.ToString(in.QueueUrl))
	return &sqs.SendMessageBatchOutput{}, nil
}

func (f *fakeSQS) ReceiveMessage(_ context.Context, in *sqs.ReceiveMessageInput, _ ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	f.record("receive " + aws.ToString(in.QueueUrl))
	return &sqs.ReceiveMessageOutput{}, nil
}

func TestEngineQueueRoutes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		receives Receives
		want     []string
	}{
		{"lambdas", ReceivesShort, []string{"send heddle-test-acme.fifo", "send heddle-test-long_acme.fifo", "receive heddle-test-acme.fifo"}},
		{"fargate", ReceivesLong, []string{"send heddle-test-acme.fifo", "send heddle-test-long_acme.fifo", "receive heddle-test-long_acme.fifo"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := &fakeSQS{}
			short, err := sqsqueue.New(f, sqsqueue.Options{Prefix: "heddle-test-"})
			require.NoError(t, err)
			long, err := sqsqueue.New(f, sqsqueue.Options{Prefix: sqsqueue.LongPrefix("heddle-test-")})
			require.NoError(t, err)
			q := (&AWS{Queue: short, LongQueue: long}).EngineQueue(tc.receives)
			m := func(id string, isLong bool) queue.Message {
				return queue.Message{TaskID: id, Attempt: 1, Group: "c#n", Dedup: id + "#1#0", Long: isLong}
			}
			require.NoError(t, q.Send(t.Context(), "acme", m("a", false), m("b", true)))
			_, err = q.Receive(t.Context(), "acme", 1, 0, time.Minute)
			require.NoError(t, err)
			require.Equal(t, tc.want, f.calls)
		})
	}
}

func TestBuildAWSNeedsTheQueues(t *testing.T) {
	t.Parallel()
	_, err := BuildAWS(&AWS{}, engine.Config{}, ReceivesShort, false, nil)
	require.ErrorContains(t, err, "HEDDLE_QUEUE_PREFIX")
}

func TestQueueVisibility(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"", 0, true}, // sqsqueue's default
		{"60", 6 * time.Minute, true},
		{"900", 90 * time.Minute, true},
		{"0", 0, false},
		{"901", 0, false},
		{"1m", 0, false},
	} {
		got, err := QueueVisibility(c.in)
		if !c.ok {
			require.Error(t, err, c.in)
			require.Contains(t, err.Error(), "HEDDLE_WORKER_TIMEOUT")
			continue
		}
		require.NoError(t, err, c.in)
		require.Equal(t, c.want, got, c.in)
	}
}
