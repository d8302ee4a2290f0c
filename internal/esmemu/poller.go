package esmemu

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// poller is one of a mapping's pollers: receive a batch, invoke, delete
// what succeeded.
type poller struct {
	s        *Service
	conf     Configuration
	queueURL string
	function Function
	fifo     bool
}

// pause is how long a poller waits after a failed receive or invocation
// before it tries again (Lambda backs off too).
const pause = time.Second

func (p *poller) run(ctx context.Context) {
	for ctx.Err() == nil {
		msgs, err := p.receive(ctx)
		if err != nil {
			if ctx.Err() == nil {
				p.s.log.Warn("esmemu: receiving", "source", p.conf.EventSourceArn, "error", err)
				sleep(ctx, pause)
			}
			continue
		}
		if len(msgs) == 0 {
			continue
		}
		if !p.deliver(msgs) {
			sleep(ctx, pause)
		}
	}
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// receive returns up to BatchSize messages; with a batching window it
// keeps receiving until the batch is full or the window is over.
func (p *poller) receive(ctx context.Context) ([]sqstypes.Message, error) {
	var out []sqstypes.Message
	deadline := time.Now().Add(time.Duration(p.conf.MaximumBatchingWindowInSeconds) * time.Second)
	for {
		want := min(int(p.conf.BatchSize)-len(out), 10)
		wait := int32(receiveWait)
		if len(out) > 0 {
			left := time.Until(deadline)
			if left <= 0 {
				return out, nil
			}
			wait = int32(min(receiveWait, max(1, left/time.Second)))
		}
		got, err := p.s.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(p.queueURL), MaxNumberOfMessages: int32(want), WaitTimeSeconds: wait,
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll},
			MessageAttributeNames:       []string{"All"},
		})
		if err != nil {
			if len(out) > 0 {
				return out, nil
			}
			return nil, err
		}
		out = append(out, got.Messages...)
		if len(out) >= int(p.conf.BatchSize) || p.conf.MaximumBatchingWindowInSeconds == 0 || (len(out) > 0 && !time.Now().Before(deadline)) {
			return out, nil
		}
	}
}

// deliver invokes the function with msgs and deletes those it settled; it
// reports whether the invocation succeeded.
func (p *poller) deliver(msgs []sqstypes.Message) bool {
	ev := events.SQSEvent{Records: make([]events.SQSMessage, len(msgs))}
	region := strings.Split(p.conf.EventSourceArn, ":")[3]
	for i, m := range msgs {
		ev.Records[i] = record(m, p.conf.EventSourceArn, region)
	}
	payload, err := json.Marshal(ev)
	if err != nil {
		p.s.log.Error("esmemu: encoding an event", "error", err)
		return false
	}
	// The invocation runs to its end even when the mapping is deleted
	// meanwhile, as on Lambda; its deletes then still happen.
	res, err := p.function.Invoke(context.Background(), payload)
	if err != nil {
		p.s.log.Warn("esmemu: invoking", "function", p.conf.FunctionArn, "error", err)
		return false
	}
	if res.FunctionError != "" {
		p.s.log.Warn("esmemu: the invocation failed; the batch stays in the queue", "function", p.conf.FunctionArn,
			"errorType", res.ErrorType, "answer", string(res.Payload), "records", len(msgs))
		return false
	}
	keep, ok := p.failures(res.Payload, msgs)
	if !ok {
		return false
	}
	var del []sqstypes.DeleteMessageBatchRequestEntry
	for i, m := range msgs {
		if !keep[aws.ToString(m.MessageId)] {
			del = append(del, sqstypes.DeleteMessageBatchRequestEntry{Id: aws.String("m" + strconv.Itoa(i)), ReceiptHandle: m.ReceiptHandle})
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for chunk := range slices.Chunk(del, 10) { // SQS deletes at most 10 at once
		out, err := p.s.sqs.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(p.queueURL), Entries: chunk})
		if err == nil && len(out.Failed) > 0 {
			err = errors.New(aws.ToString(out.Failed[0].Message))
		}
		if err != nil {
			p.s.log.Warn("esmemu: deleting settled records", "source", p.conf.EventSourceArn, "error", err)
		}
	}
	return true
}

// failures reads batchItemFailures under ReportBatchItemFailures; ok is
// false when the answer cannot be read (Lambda then keeps the batch).
func (p *poller) failures(payload []byte, msgs []sqstypes.Message) (map[string]bool, bool) {
	if !slices.Contains(p.conf.FunctionResponseTypes, "ReportBatchItemFailures") {
		return nil, true
	}
	keep := map[string]bool{}
	var resp events.SQSEventResponse
	if string(payload) == "null" || len(payload) == 0 {
		return keep, true
	}
	if err := json.Unmarshal(payload, &resp); err != nil {
		p.s.log.Warn("esmemu: the answer is not an SQSEventResponse; the batch stays", "answer", string(payload))
		return nil, false
	}
	for _, f := range resp.BatchItemFailures {
		if !slices.ContainsFunc(msgs, func(m sqstypes.Message) bool { return aws.ToString(m.MessageId) == f.ItemIdentifier }) {
			// Lambda treats an unknown or empty identifier as a failure of the whole batch.
			p.s.log.Warn("esmemu: batchItemFailures names a record not in the batch; the batch stays", "itemIdentifier", f.ItemIdentifier)
			return nil, false
		}
		keep[f.ItemIdentifier] = true
	}
	return keep, true
}

// record is the event record Lambda makes of m.
func record(m sqstypes.Message, arn, region string) events.SQSMessage {
	attrs := map[string]string{}
	for k, v := range m.Attributes {
		attrs[k] = v
	}
	mattrs := map[string]events.SQSMessageAttribute{}
	for k, v := range m.MessageAttributes {
		mattrs[k] = events.SQSMessageAttribute{StringValue: v.StringValue, BinaryValue: v.BinaryValue,
			StringListValues: v.StringListValues, BinaryListValues: v.BinaryListValues, DataType: aws.ToString(v.DataType)}
	}
	md5OfBody := aws.ToString(m.MD5OfBody)
	if md5OfBody == "" {
		sum := md5.Sum([]byte(aws.ToString(m.Body)))
		md5OfBody = hex.EncodeToString(sum[:])
	}
	r := events.SQSMessage{MessageId: aws.ToString(m.MessageId), ReceiptHandle: aws.ToString(m.ReceiptHandle),
		Body: aws.ToString(m.Body), Md5OfBody: md5OfBody, Attributes: attrs, MessageAttributes: mattrs,
		EventSource: "aws:sqs", EventSourceARN: arn, AWSRegion: region}
	r.Md5OfMessageAttributes = aws.ToString(m.MD5OfMessageAttributes)
	return r
}
