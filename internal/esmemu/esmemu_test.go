package esmemu

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	lambdatypes "github.com/aws/aws-sdk-go-v2/service/lambda/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/lambdaemu"
	"github.com/heddle-io/heddle/internal/onboard/awsonboard"
	"github.com/heddle-io/heddle/internal/queue/sqsqueue"
)

// fakeWorker stands for the worker function: it records each event and
// answers what decide says.
type fakeWorker struct {
	timeout atomic.Int64 // a time.Duration
	delay   time.Duration
	decide  func(ev events.SQSEvent) lambdaemu.Result

	mu       sync.Mutex
	events   []events.SQSEvent
	running  atomic.Int64
	maxSeen  atomic.Int64
	received atomic.Int64
}

func newWorker(timeout, delay time.Duration) *fakeWorker {
	w := &fakeWorker{delay: delay}
	w.timeout.Store(int64(timeout))
	return w
}

func (f *fakeWorker) Function() lambdaemu.Function {
	return lambdaemu.Function{Name: "heddle-test-worker", Timeout: time.Duration(f.timeout.Load()), Region: "us-east-1", AccountID: "000000000000"}
}

func (f *fakeWorker) Invoke(_ context.Context, payload []byte) (lambdaemu.Result, error) {
	n := f.running.Add(1)
	defer f.running.Add(-1)
	for {
		m := f.maxSeen.Load()
		if n <= m || f.maxSeen.CompareAndSwap(m, n) {
			break
		}
	}
	var ev events.SQSEvent
	if err := json.Unmarshal(payload, &ev); err != nil {
		return lambdaemu.Result{FunctionError: "Unhandled"}, nil
	}
	f.mu.Lock()
	f.events = append(f.events, ev)
	f.mu.Unlock()
	f.received.Add(int64(len(ev.Records)))
	time.Sleep(f.delay)
	if f.decide == nil {
		return lambdaemu.Result{Payload: []byte(`{"batchItemFailures":[]}`)}, nil
	}
	return f.decide(ev), nil
}

type fixture struct {
	t       *testing.T
	sqs     *sqs.Client
	lambda  *lambda.Client
	queues  *sqsqueue.Queue
	onboard *awsonboard.Onboarder
	svc     *Service
	worker  *fakeWorker
}

func setup(t *testing.T, worker *fakeWorker, opts sqsqueue.Options) *fixture {
	t.Helper()
	ep := os.Getenv("HEDDLE_SQS_ENDPOINT")
	if ep == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true requires fauxqs: HEDDLE_SQS_ENDPOINT is unset")
		}
		t.Skip(`HEDDLE_SQS_ENDPOINT is unset: run scripts/fauxqs.sh start and eval "$(scripts/fauxqs.sh env)"`)
	}
	client := sqsqueue.NewEmulatorClient(ep)
	suffix := make([]byte, 4)
	_, _ = rand.Read(suffix)
	opts.Prefix = "heddle-esm-" + hex.EncodeToString(suffix) + "-"
	q, err := sqsqueue.New(client, opts)
	require.NoError(t, err)
	svc, err := New(Config{Functions: []Function{worker}, SQS: client})
	require.NoError(t, err)
	srv := httptest.NewServer(svc.Handler())
	t.Cleanup(func() {
		srv.Close()
		svc.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		out, err := client.ListQueues(ctx, &sqs.ListQueuesInput{QueueNamePrefix: aws.String(opts.Prefix)})
		if err == nil {
			for _, url := range out.QueueUrls {
				_, _ = client.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(url)})
			}
		}
	})
	lc := lambda.New(lambda.Options{Region: "us-east-1", BaseEndpoint: aws.String(srv.URL),
		Credentials: credentials.NewStaticCredentialsProvider("heddle", "heddle", "")})
	ob, err := awsonboard.New(awsonboard.Config{Queues: q, Lambda: lc, FunctionName: worker.Function().ARN()})
	require.NoError(t, err)
	return &fixture{t: t, sqs: client, lambda: lc, queues: q, onboard: ob, svc: svc, worker: worker}
}

// send puts n messages on the tenant's queue, each in a group of its own.
func (f *fixture) send(tenant string, n int) []string {
	f.t.Helper()
	name, err := f.queues.QueueName(tenant)
	require.NoError(f.t, err)
	url, err := f.sqs.GetQueueUrl(context.Background(), &sqs.GetQueueUrlInput{QueueName: aws.String(name)})
	require.NoError(f.t, err)
	var ids []string
	for i := range n {
		out, err := f.sqs.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: url.QueueUrl,
			MessageBody: aws.String(fmt.Sprintf("task-%d", i)), MessageGroupId: aws.String(fmt.Sprintf("g%d", i)),
			MessageDeduplicationId: aws.String(fmt.Sprintf("d%d-%d", i, time.Now().UnixNano()))})
		require.NoError(f.t, err)
		ids = append(ids, aws.ToString(out.MessageId))
	}
	return ids
}

func (f *fixture) depth(queueName string) int {
	f.t.Helper()
	url, err := f.sqs.GetQueueUrl(context.Background(), &sqs.GetQueueUrlInput{QueueName: aws.String(queueName)})
	require.NoError(f.t, err)
	out, err := f.sqs.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{QueueUrl: url.QueueUrl,
		AttributeNames: []types.QueueAttributeName{"ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"}})
	require.NoError(f.t, err)
	var n int
	for _, v := range out.Attributes {
		var k int
		_, _ = fmt.Sscan(v, &k)
		n += k
	}
	return n
}

func TestOnboardingMakesAMappingThatDelivers(t *testing.T) {
	t.Parallel()
	var failOnce sync.Map
	w := newWorker(2*time.Second, 0)
	// The first delivery of task-1 fails (listed in batchItemFailures).
	w.decide = func(ev events.SQSEvent) lambdaemu.Result {
		var resp events.SQSEventResponse
		for _, r := range ev.Records {
			if _, seen := failOnce.LoadOrStore(r.Body, true); !seen && r.Body == "task-1" {
				resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: r.MessageId})
			}
		}
		b, _ := json.Marshal(resp)
		return lambdaemu.Result{Payload: b}
	}
	f := setup(t, w, sqsqueue.Options{Visibility: 3 * time.Second})
	ctx := context.Background()
	require.NoError(t, f.onboard.Onboard(ctx, domain.Tenant{ID: "acme", Workers: 3}))
	ms := f.svc.Mappings()
	require.Len(t, ms, 1)
	require.Equal(t, int32(10), ms[0].BatchSize)
	require.Equal(t, int32(3), *ms[0].ScalingConfig.MaximumConcurrency)
	require.Equal(t, []string{"ReportBatchItemFailures"}, ms[0].FunctionResponseTypes)
	require.Equal(t, "Enabled", ms[0].State)

	// Onboarding again finds the mapping and changes nothing; a resize updates it.
	require.NoError(t, f.onboard.Onboard(ctx, domain.Tenant{ID: "acme", Workers: 3}))
	require.NoError(t, f.onboard.Resize(ctx, domain.Tenant{ID: "acme", Workers: 5}))
	ms = f.svc.Mappings()
	require.Len(t, ms, 1)
	require.Equal(t, int32(5), *ms[0].ScalingConfig.MaximumConcurrency)

	ids := f.send("acme", 4)
	name, _ := f.queues.QueueName("acme")
	require.Eventually(t, func() bool { return f.depth(name) == 0 }, 30*time.Second, 100*time.Millisecond,
		"every message is deleted once handled, the failed one after it came back")
	require.Equal(t, int64(5), w.received.Load(), "four deliveries and task-1's second one")

	w.mu.Lock()
	r := w.events[0].Records[0]
	w.mu.Unlock()
	require.Contains(t, ids, r.MessageId)
	require.Equal(t, "aws:sqs", r.EventSource)
	require.Equal(t, ms[0].EventSourceArn, r.EventSourceARN)
	require.Equal(t, "us-east-1", r.AWSRegion)
	require.NotEmpty(t, r.ReceiptHandle)
	require.NotEmpty(t, r.Md5OfBody)
	require.NotEmpty(t, r.Attributes["MessageGroupId"])
	require.NotEmpty(t, r.Attributes["ApproximateReceiveCount"])

	// Offboarding deletes the mapping and the queues.
	require.NoError(t, f.onboard.Offboard(ctx, "acme"))
	require.Empty(t, f.svc.Mappings())
}

func TestPoisonMessageEndsInTheDeadLetterQueue(t *testing.T) {
	t.Parallel()
	w := newWorker(time.Second, 0)
	w.decide = func(ev events.SQSEvent) lambdaemu.Result {
		return lambdaemu.Result{FunctionError: "Unhandled", ErrorType: "Runtime.ExitError", Payload: []byte(`{}`)}
	}
	f := setup(t, w, sqsqueue.Options{Visibility: 2 * time.Second, MaxReceiveCount: 2})
	require.NoError(t, f.onboard.Onboard(context.Background(), domain.Tenant{ID: "acme", Workers: 2}))
	f.send("acme", 1)
	name, _ := f.queues.QueueName("acme")
	dlq := name[:len(name)-len(".fifo")] + "_dlq.fifo"
	require.Eventually(t, func() bool { return f.depth(dlq) == 1 }, 60*time.Second, 200*time.Millisecond,
		"after maxReceiveCount failed invocations SQS moves it to the dead-letter queue")
	require.Equal(t, 0, f.depth(name))
	require.GreaterOrEqual(t, w.received.Load(), int64(2))
}

func TestMaximumConcurrencyCapsInvocations(t *testing.T) {
	t.Parallel()
	w := newWorker(5*time.Second, 300*time.Millisecond)
	f := setup(t, w, sqsqueue.Options{Visibility: 10 * time.Second})
	require.NoError(t, f.onboard.Onboard(context.Background(), domain.Tenant{ID: "acme", Workers: 2}))
	f.send("acme", 12)
	name, _ := f.queues.QueueName("acme")
	require.Eventually(t, func() bool { return f.depth(name) == 0 }, 60*time.Second, 100*time.Millisecond)
	require.LessOrEqual(t, w.maxSeen.Load(), int64(2))
	require.Equal(t, int64(12), w.received.Load())
}

func TestRefusedAsLambdaRefuses(t *testing.T) {
	t.Parallel()
	w := newWorker(20*time.Second, 0)
	f := setup(t, w, sqsqueue.Options{Visibility: 10 * time.Second})
	ctx := context.Background()
	require.NoError(t, f.queues.CreateTenantQueue(ctx, "acme"))
	arn, err := f.queues.QueueARN(ctx, "acme")
	require.NoError(t, err)
	create := func(mod func(*lambda.CreateEventSourceMappingInput)) error {
		in := &lambda.CreateEventSourceMappingInput{EventSourceArn: aws.String(arn), FunctionName: aws.String("heddle-test-worker"), BatchSize: aws.Int32(10)}
		mod(in)
		_, err := f.lambda.CreateEventSourceMapping(ctx, in)
		return err
	}
	// The function's 20 s timeout exceeds the queue's 10 s visibility.
	require.ErrorContains(t, create(func(*lambda.CreateEventSourceMappingInput) {}), "visibility timeout")
	w.timeout.Store(int64(5 * time.Second))
	require.ErrorContains(t, create(func(in *lambda.CreateEventSourceMappingInput) { in.BatchSize = aws.Int32(11) }), "BatchSize")
	require.ErrorContains(t, create(func(in *lambda.CreateEventSourceMappingInput) { in.MaximumBatchingWindowInSeconds = aws.Int32(1) }), "FIFO")
	require.ErrorContains(t, create(func(in *lambda.CreateEventSourceMappingInput) {
		in.ScalingConfig = &lambdatypes.ScalingConfig{MaximumConcurrency: aws.Int32(1)}
	}), "MaximumConcurrency")
	require.ErrorContains(t, create(func(in *lambda.CreateEventSourceMappingInput) { in.FunctionName = aws.String("nope") }), "ResourceNotFoundException")
	require.ErrorContains(t, create(func(in *lambda.CreateEventSourceMappingInput) {
		in.EventSourceArn = aws.String("arn:aws:sqs:us-east-1:000000000000:none.fifo")
	}), "cannot be read")
	require.NoError(t, create(func(*lambda.CreateEventSourceMappingInput) {}))
	var conflict *lambdatypes.ResourceConflictException
	require.ErrorAs(t, create(func(*lambda.CreateEventSourceMappingInput) {}), &conflict)
	_, err = f.lambda.GetEventSourceMapping(ctx, &lambda.GetEventSourceMappingInput{UUID: aws.String("missing")})
	var notFound *lambdatypes.ResourceNotFoundException
	require.ErrorAs(t, err, &notFound)
}
