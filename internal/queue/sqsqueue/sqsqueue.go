package sqsqueue

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"github.com/heddle-io/heddle/internal/queue"

	"github.com/heddle-io/heddle/internal/sdkbody"
)

// Client is the part of *sqs.Client that Queue uses.
type Client interface {
	ChangeMessageVisibility(context.Context, *sqs.ChangeMessageVisibilityInput, ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error)
	CreateQueue(context.Context, *sqs.CreateQueueInput, ...func(*sqs.Options)) (*sqs.CreateQueueOutput, error)
	DeleteMessage(context.Context, *sqs.DeleteMessageInput, ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error)
	DeleteQueue(context.Context, *sqs.DeleteQueueInput, ...func(*sqs.Options)) (*sqs.DeleteQueueOutput, error)
	GetQueueAttributes(context.Context, *sqs.GetQueueAttributesInput, ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
	GetQueueUrl(context.Context, *sqs.GetQueueUrlInput, ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error)
	ReceiveMessage(context.Context, *sqs.ReceiveMessageInput, ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	SendMessageBatch(context.Context, *sqs.SendMessageBatchInput, ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error)
	SetQueueAttributes(context.Context, *sqs.SetQueueAttributesInput, ...func(*sqs.Options)) (*sqs.SetQueueAttributesOutput, error)
}

var _ Client = (*sqs.Client)(nil)

// Options configure New. The zero value is usable.
type Options struct {
	// Prefix starts every queue name; DefaultPrefix if empty. Name the
	// stage when deployments share an account: "heddle-prod-" gives
	// heddle-prod-<tenant>.fifo and heddle-prod-<tenant>_dlq.fifo.
	Prefix string
	// MaxReceiveCount is how many times a message is delivered before SQS
	// moves it to the tenant's dead-letter queue; default 5, the least AWS
	// advises for a Lambda consumer. The janitor re-sends the task of a
	// message that went there, so nothing is lost with it.
	MaxReceiveCount int
	// Visibility is the queue's own visibility timeout, which applies to
	// what the Lambda event source mapping receives (Receive always passes
	// its own). Lambda refuses a mapping whose function timeout exceeds it.
	// Default 15 minutes, Lambda's longest timeout; the worker extends it
	// with heartbeats while a task runs.
	Visibility time.Duration
}

const (
	defaultMaxReceiveCount = 5
	defaultVisibility      = 15 * time.Minute
	// deadLetterRetention is the longest SQS keeps a message: 14 days for
	// an operator to look at what ended up in a dead-letter queue.
	deadLetterRetention = 14 * 24 * time.Hour
	// sendAttempts bounds how often Send offers entries that SQS failed on
	// its side (not the sender's fault) before giving up.
	sendAttempts = 3
)

// Queue is a queue.Queue and queue.Provisioner on SQS FIFO queues: one
// queue and one dead-letter queue per tenant.
type Queue struct {
	client          Client
	names           names
	maxReceiveCount int
	visibility      time.Duration

	mu   sync.RWMutex
	urls map[string]string // tenant -> its queue's URL
}

var (
	_ queue.Queue       = (*Queue)(nil)
	_ queue.Provisioner = (*Queue)(nil)
)

// New returns a Queue on client.
func New(client Client, opts Options) (*Queue, error) {
	n, err := newNames(opts.Prefix)
	if err != nil {
		return nil, err
	}
	if opts.MaxReceiveCount == 0 {
		opts.MaxReceiveCount = defaultMaxReceiveCount
	}
	if opts.MaxReceiveCount < 1 || opts.MaxReceiveCount > 1000 {
		return nil, fmt.Errorf("sqsqueue: MaxReceiveCount %d is outside SQS's 1 to 1000", opts.MaxReceiveCount)
	}
	if opts.Visibility == 0 {
		opts.Visibility = defaultVisibility
	}
	if err := queue.ValidateVisibility(opts.Visibility); err != nil {
		return nil, err
	}
	return &Queue{
		client:          client,
		names:           n,
		maxReceiveCount: opts.MaxReceiveCount,
		visibility:      opts.Visibility,
		urls:            map[string]string{},
	}, nil
}

// NewEmulatorClient returns an SQS client for an emulator such as fauxqs at
// endpoint, with dummy credentials.
func NewEmulatorClient(endpoint string) *sqs.Client {
	return sqs.New(sqs.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(endpoint),
		Credentials:  credentials.NewStaticCredentialsProvider("heddle", "heddle", ""),
		// The SDK keeps 10 idle connections per host; more concurrent
		// pollers than that would open and close connections per request.
		HTTPClient: awshttp.NewBuildableClient().WithTransportOptions(func(tr *http.Transport) {
			tr.MaxIdleConnsPerHost = 64
		}),
	}, func(o *sqs.Options) { o.HTTPClient = sdkbody.Guard(o.HTTPClient) }) // package sdkbody
}

// QueueName is the name of the tenant's queue; it fails if the tenant id
// cannot name one.
func (q *Queue) QueueName(tenant string) (string, error) { return q.names.queue(tenant) }

// DeadLetterQueueName is the name of the tenant's dead-letter queue.
func (q *Queue) DeadLetterQueueName(tenant string) (string, error) { return q.names.deadLetter(tenant) }

// DeadLetter implements queue.DeadLetterer: the tenant's dead-letter queue
// and the redrive policy's maxReceiveCount.
func (q *Queue) DeadLetter(tenant string) (string, int, error) {
	name, err := q.names.deadLetter(tenant)
	return name, q.maxReceiveCount, err
}

// TenantOf returns the tenant whose queue has the given name or ARN, such
// as the EventSourceARN of a Lambda SQS record.
func (q *Queue) TenantOf(queueNameOrARN string) (string, error) {
	return q.names.tenant(queueNameOrARN)
}

// CreateTenantQueue implements queue.Provisioner: it creates the tenant's
// dead-letter queue, then its queue with a redrive policy to it. It is
// idempotent, and brings the attributes of existing queues to this Queue's
// options (a changed MaxReceiveCount, say); messages are kept.
//
// The queue scopes deduplication to the message group and its throughput
// limit to the group (SQS's high-throughput FIFO mode): heddle's groups are
// nodes, and each node is its own sequence.
func (q *Queue) CreateTenantQueue(ctx context.Context, tenant string) error {
	name, err := q.names.queue(tenant)
	if err != nil {
		return err
	}
	dlqName, _ := q.names.deadLetter(tenant) // valid whenever name is

	dlqURL, err := q.ensureQueue(ctx, dlqName, map[string]string{
		string(types.QueueAttributeNameFifoQueue):              "true",
		string(types.QueueAttributeNameMessageRetentionPeriod): seconds(deadLetterRetention),
	})
	if err != nil {
		return err
	}
	dlqARN, err := q.arn(ctx, dlqURL)
	if err != nil {
		return fmt.Errorf("sqsqueue: %s: %w", dlqName, err)
	}
	redrive, err := json.Marshal(struct {
		DeadLetterTargetArn string `json:"deadLetterTargetArn"`
		MaxReceiveCount     int    `json:"maxReceiveCount"`
	}{dlqARN, q.maxReceiveCount})
	if err != nil {
		return err
	}
	url, err := q.ensureQueue(ctx, name, map[string]string{
		string(types.QueueAttributeNameFifoQueue):           "true",
		string(types.QueueAttributeNameDeduplicationScope):  "messageGroup",
		string(types.QueueAttributeNameFifoThroughputLimit): "perMessageGroupId",
		string(types.QueueAttributeNameVisibilityTimeout):   seconds(q.visibility),
		string(types.QueueAttributeNameRedrivePolicy):       string(redrive),
	})
	if err != nil {
		return err
	}
	q.mu.Lock()
	q.urls[tenant] = url
	q.mu.Unlock()
	return nil
}

// ensureQueue creates a queue with attrs, or sets attrs on the queue of
// that name if it exists with others.
func (q *Queue) ensureQueue(ctx context.Context, name string, attrs map[string]string) (string, error) {
	out, err := q.client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
	if err == nil {
		return aws.ToString(out.QueueUrl), nil
	}
	var deletedRecently *types.QueueDeletedRecently
	if errors.As(err, &deletedRecently) {
		return "", fmt.Errorf("sqsqueue: %s was deleted less than 60 seconds ago and SQS does not allow its name yet; try again in a minute: %w", name, err)
	}
	var exists *types.QueueNameExists
	if !errors.As(err, &exists) {
		return "", fmt.Errorf("sqsqueue: creating %s: %w", name, err)
	}
	got, err := q.client.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(name)})
	if err != nil {
		return "", fmt.Errorf("sqsqueue: %s exists with other attributes, and finding it failed: %w", name, err)
	}
	url := aws.ToString(got.QueueUrl)
	current, err := q.client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl:       aws.String(url),
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameAll},
	})
	if err != nil {
		return "", fmt.Errorf("sqsqueue: reading the attributes of %s: %w", name, err)
	}
	// Only what differs, and never FifoQueue, which is fixed at creation:
	// a queue created as a standard queue cannot become ours.
	changed := map[string]string{}
	for k, v := range attrs {
		if current.Attributes[k] == v {
			continue
		}
		if k == string(types.QueueAttributeNameFifoQueue) {
			return "", fmt.Errorf("sqsqueue: %s exists and is not a FIFO queue", name)
		}
		changed[k] = v
	}
	if len(changed) > 0 {
		if _, err := q.client.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: aws.String(url), Attributes: changed}); err != nil {
			return "", fmt.Errorf("sqsqueue: updating the attributes of %s: %w", name, err)
		}
	}
	return url, nil
}

// DeleteTenantQueue implements queue.Provisioner: it deletes the tenant's
// queue, then its dead-letter queue. Queues that do not exist are not an
// error, so offboarding can be retried.
//
// SQS takes up to 60 seconds to delete a queue, during which calls on it
// may still succeed, and refuses to create a queue of the same name until
// then.
func (q *Queue) DeleteTenantQueue(ctx context.Context, tenant string) error {
	name, err := q.names.queue(tenant)
	if err != nil {
		return err
	}
	dlqName, _ := q.names.deadLetter(tenant)
	q.mu.Lock()
	delete(q.urls, tenant)
	q.mu.Unlock()
	for _, n := range []string{name, dlqName} {
		got, err := q.client.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(n)})
		if isNoQueue(err) {
			continue
		}
		if err != nil {
			return fmt.Errorf("sqsqueue: finding %s: %w", n, err)
		}
		if _, err := q.client.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: got.QueueUrl}); err != nil && !isNoQueue(err) {
			return fmt.Errorf("sqsqueue: deleting %s: %w", n, err)
		}
	}
	return nil
}

// QueueARN returns the ARN of the tenant's queue (what names it to Lambda's
// event source mappings), or an error matching queue.ErrNoQueue.
func (q *Queue) QueueARN(ctx context.Context, tenant string) (string, error) {
	url, err := q.url(ctx, tenant)
	if err != nil {
		return "", err
	}
	arn, err := q.arn(ctx, url)
	if err != nil {
		return "", q.callError(ctx, tenant, url, "reading the queue's ARN", err)
	}
	return arn, nil
}

// arn reads the ARN of the queue at url.
func (q *Queue) arn(ctx context.Context, url string) (string, error) {
	attrs, err := q.client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl:       aws.String(url),
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn},
	})
	if err != nil {
		return "", err
	}
	arn := attrs.Attributes[string(types.QueueAttributeNameQueueArn)]
	if arn == "" {
		return "", errors.New("the queue has no ARN")
	}
	return arn, nil
}

// url returns the tenant's queue URL, from the cache if it can.
func (q *Queue) url(ctx context.Context, tenant string) (string, error) {
	name, err := q.names.queue(tenant)
	if err != nil {
		return "", err
	}
	q.mu.RLock()
	url, ok := q.urls[tenant]
	q.mu.RUnlock()
	if ok {
		return url, nil
	}
	out, err := q.client.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(name)})
	if err != nil {
		return "", q.callError(ctx, tenant, "", "finding the queue", err)
	}
	url = aws.ToString(out.QueueUrl)
	q.mu.Lock()
	q.urls[tenant] = url
	q.mu.Unlock()
	return url, nil
}

// callError translates an SQS error on the tenant's queue at url. A queue
// that does not exist (any more) is dropped from the cache.
func (q *Queue) callError(ctx context.Context, tenant, url, doing string, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	if isNoQueue(err) {
		q.mu.Lock()
		if url == "" || q.urls[tenant] == url {
			delete(q.urls, tenant)
		}
		q.mu.Unlock()
		return fmt.Errorf("%w: %q", queue.ErrNoQueue, tenant)
	}
	return fmt.Errorf("sqsqueue: %s for tenant %q: %w", doing, tenant, err)
}

// Send implements queue.Queue with one SendMessageBatch. Entries SQS fails
// on its side are offered again, up to sendAttempts times in all; a retried
// entry then comes after later entries of its group, which consumers
// tolerate because they re-read every task from the store.
func (q *Queue) Send(ctx context.Context, tenant string, msgs ...queue.Message) error {
	if err := queue.ValidateSend(msgs); err != nil {
		return err
	}
	if _, err := q.names.queue(tenant); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if len(msgs) == 0 {
		return nil
	}
	url, err := q.url(ctx, tenant)
	if err != nil {
		return err
	}
	entries := make([]types.SendMessageBatchRequestEntry, len(msgs))
	for i, m := range msgs {
		b, err := encodeBody(m)
		if err != nil {
			return err
		}
		entries[i] = types.SendMessageBatchRequestEntry{
			Id:                     aws.String(strconv.Itoa(i)),
			MessageBody:            aws.String(b),
			MessageGroupId:         aws.String(m.Group),
			MessageDeduplicationId: aws.String(dedupID(m.Dedup)),
		}
	}
	for attempt := 1; ; attempt++ {
		out, err := q.client.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(url), Entries: entries})
		if err != nil {
			return q.callError(ctx, tenant, url, "sending", err)
		}
		if len(out.Failed) == 0 {
			return nil
		}
		retry, err := failedEntries(entries, out.Failed)
		if err != nil || attempt == sendAttempts {
			if err == nil {
				err = fmt.Errorf("%d of %d messages still failed after %d attempts: %s", len(out.Failed), len(entries), attempt, describeFailure(out.Failed[0]))
			}
			return fmt.Errorf("sqsqueue: sending for tenant %q: %w", tenant, err)
		}
		entries = retry
		select {
		case <-time.After(time.Duration(attempt) * 50 * time.Millisecond):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// failedEntries returns the entries to send again, in their original order,
// or an error if one failed by the sender's fault: retrying would not help.
func failedEntries(entries []types.SendMessageBatchRequestEntry, failed []types.BatchResultErrorEntry) ([]types.SendMessageBatchRequestEntry, error) {
	byID := make(map[string]bool, len(failed))
	for _, f := range failed {
		if f.SenderFault {
			return nil, fmt.Errorf("SQS refused message %s: %s", aws.ToString(f.Id), describeFailure(f))
		}
		byID[aws.ToString(f.Id)] = true
	}
	var retry []types.SendMessageBatchRequestEntry
	for _, e := range entries {
		if byID[aws.ToString(e.Id)] {
			retry = append(retry, e)
		}
	}
	if len(retry) != len(failed) {
		return nil, fmt.Errorf("SQS reported failures for entries it was not sent: %s", describeFailure(failed[0]))
	}
	return retry, nil
}

func describeFailure(f types.BatchResultErrorEntry) string {
	return aws.ToString(f.Code) + ": " + aws.ToString(f.Message)
}

// Receive implements queue.Queue with ReceiveMessage long polls. SQS counts
// in whole seconds, so wait and visibility are rounded up. If a poll ends
// empty before wait is over (emulators do; SQS may), Receive polls again for
// the whole seconds that remain.
//
// A message whose body is not heddle's is made visible again at once rather
// than returned, so that SQS moves it to the dead-letter queue after
// MaxReceiveCount receives instead of holding its group.
func (q *Queue) Receive(ctx context.Context, tenant string, max int, wait, visibility time.Duration) ([]queue.Delivery, error) {
	if err := queue.ValidateReceive(max, wait, visibility); err != nil {
		return nil, err
	}
	if _, err := q.names.queue(tenant); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	url, err := q.url(ctx, tenant)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(wait)
	waitSeconds := ceilSeconds(wait)
	for {
		out, err := q.client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl:            aws.String(url),
			MaxNumberOfMessages: int32(max),
			WaitTimeSeconds:     waitSeconds,
			VisibilityTimeout:   ceilSeconds(visibility),
			MessageSystemAttributeNames: []types.MessageSystemAttributeName{
				types.MessageSystemAttributeNameMessageGroupId,
				types.MessageSystemAttributeNameApproximateReceiveCount,
				types.MessageSystemAttributeNameApproximateFirstReceiveTimestamp,
			},
			// The SDK retries a receive whose answer was lost with the same
			// input; with the same attempt id, SQS returns the same messages
			// instead of leaving them invisible and their groups blocked.
			ReceiveRequestAttemptId: aws.String(attemptID()),
		})
		if err != nil {
			return nil, q.callError(ctx, tenant, url, "receiving", err)
		}
		ds := make([]queue.Delivery, 0, len(out.Messages))
		for _, m := range out.Messages {
			d, err := delivery(aws.ToString(m.Body), aws.ToString(m.ReceiptHandle), m.Attributes)
			if err != nil {
				// Best effort: if this fails the message comes back when its
				// visibility runs out, as it would anyway.
				_, _ = q.client.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{
					QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: 0,
				})
				continue
			}
			ds = append(ds, d)
		}
		if len(ds) > 0 {
			return ds, nil
		}
		remaining := time.Until(deadline)
		if remaining < time.Second {
			return nil, nil
		}
		waitSeconds = int32(remaining / time.Second)
	}
}

// Ack implements queue.Queue with DeleteMessage. SQS accepts some receipts
// that are no longer valid without deleting anything (a receipt of an
// earlier delivery); it returns queue.ErrReceiptInvalid for those it
// refuses.
func (q *Queue) Ack(ctx context.Context, tenant, receipt string) error {
	url, err := q.url(ctx, tenant)
	if err != nil {
		return err
	}
	if receipt == "" {
		return queue.ErrReceiptInvalid
	}
	_, err = q.client.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: aws.String(receipt)})
	if err != nil {
		if isReceiptInvalid(err) {
			return fmt.Errorf("%w: %w", queue.ErrReceiptInvalid, err)
		}
		return q.callError(ctx, tenant, url, "acknowledging", err)
	}
	return nil
}

// Extend implements queue.Queue with ChangeMessageVisibility, rounding the
// visibility up to whole seconds. SQS keeps a message invisible for at most
// 12 hours from its first receive in all.
func (q *Queue) Extend(ctx context.Context, tenant, receipt string, visibility time.Duration) error {
	if err := queue.ValidateVisibility(visibility); err != nil {
		return err
	}
	url, err := q.url(ctx, tenant)
	if err != nil {
		return err
	}
	if receipt == "" {
		return queue.ErrReceiptInvalid
	}
	_, err = q.client.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{
		QueueUrl:          aws.String(url),
		ReceiptHandle:     aws.String(receipt),
		VisibilityTimeout: ceilSeconds(visibility),
	})
	if err != nil {
		if isReceiptInvalid(err) {
			return fmt.Errorf("%w: %w", queue.ErrReceiptInvalid, err)
		}
		return q.callError(ctx, tenant, url, "extending visibility", err)
	}
	return nil
}

func isNoQueue(err error) bool {
	var noQueue *types.QueueDoesNotExist
	return errors.As(err, &noQueue)
}

// isReceiptInvalid recognises SQS's ways of refusing a receipt: malformed
// or of another queue (ReceiptHandleIsInvalid), not in flight any more
// (MessageNotInflight), or expired (InvalidParameterValue naming the
// receipt handle).
func isReceiptInvalid(err error) bool {
	var invalid *types.ReceiptHandleIsInvalid
	var notInflight *types.MessageNotInflight
	if errors.As(err, &invalid) || errors.As(err, &notInflight) {
		return true
	}
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		code := apiErr.ErrorCode()
		return (code == "InvalidParameterValue" || strings.HasSuffix(code, ".InvalidParameterValue")) &&
			strings.Contains(strings.ToLower(apiErr.ErrorMessage()), "receipt")
	}
	return false
}

// ceilSeconds rounds d up to whole seconds, as SQS counts.
func ceilSeconds(d time.Duration) int32 {
	return int32(min(math.Ceil(d.Seconds()), math.MaxInt32))
}

func seconds(d time.Duration) string { return strconv.Itoa(int(ceilSeconds(d))) }

func attemptID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// batchVisibilityClient is the ChangeMessageVisibilityBatch of *sqs.Client;
// ExtendBatch uses it when the Client has it.
type batchVisibilityClient interface {
	ChangeMessageVisibilityBatch(context.Context, *sqs.ChangeMessageVisibilityBatchInput, ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error)
}

// ExtendBatch implements queue.BatchExtender with one
// ChangeMessageVisibilityBatch (one billed request for up to ten
// receipts). Entries SQS refuses because their receipt is no longer valid
// (acknowledged, or delivered again) are skipped; any other refusal is an
// error.
func (q *Queue) ExtendBatch(ctx context.Context, tenant string, receipts []string, visibility time.Duration) error {
	if err := queue.ValidateVisibility(visibility); err != nil {
		return err
	}
	if len(receipts) > queue.MaxBatch {
		return fmt.Errorf("sqsqueue: %d receipts in one batch; SQS takes at most %d", len(receipts), queue.MaxBatch)
	}
	client, ok := q.client.(batchVisibilityClient)
	if !ok {
		for _, r := range receipts {
			if err := q.Extend(ctx, tenant, r, visibility); err != nil && !errors.Is(err, queue.ErrReceiptInvalid) {
				return err
			}
		}
		return nil
	}
	var entries []types.ChangeMessageVisibilityBatchRequestEntry
	for i, r := range receipts {
		if r == "" {
			continue
		}
		entries = append(entries, types.ChangeMessageVisibilityBatchRequestEntry{
			Id: aws.String("r" + strconv.Itoa(i)), ReceiptHandle: aws.String(r), VisibilityTimeout: ceilSeconds(visibility)})
	}
	if len(entries) == 0 {
		return nil
	}
	url, err := q.url(ctx, tenant)
	if err != nil {
		return err
	}
	out, err := client.ChangeMessageVisibilityBatch(ctx, &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: aws.String(url), Entries: entries})
	if err != nil {
		return q.callError(ctx, tenant, url, "extending visibility", err)
	}
	for _, f := range out.Failed {
		if receiptRefusal(aws.ToString(f.Code), aws.ToString(f.Message)) {
			continue
		}
		return fmt.Errorf("sqsqueue: extending visibility for tenant %q: entry %s: %s: %s", tenant, aws.ToString(f.Id), aws.ToString(f.Code), aws.ToString(f.Message))
	}
	return nil
}

// receiptRefusal recognises a batch entry refused for its receipt, as
// isReceiptInvalid does a whole call.
func receiptRefusal(code, message string) bool {
	switch {
	case strings.HasSuffix(code, "ReceiptHandleIsInvalid"), strings.HasSuffix(code, "MessageNotInflight"):
		return true
	case code == "InvalidParameterValue" || strings.HasSuffix(code, ".InvalidParameterValue"):
		return strings.Contains(strings.ToLower(message), "receipt")
	}
	return false
}
