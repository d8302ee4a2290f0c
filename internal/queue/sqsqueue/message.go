package sqsqueue

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/heddle-io/heddle/internal/queue"
)

// body is a message's body. It carries the caller's deduplication id
// because the MessageDeduplicationId sent to SQS may be a digest of it.
type body struct {
	TaskID  string `json:"taskId"`
	Attempt int    `json:"attempt"`
	Dedup   string `json:"dedup"`
	// Format is omitted at 0, so bodies of senders that set none are as
	// they always were.
	Format int `json:"format,omitempty"`
}

func encodeBody(m queue.Message) (string, error) {
	b, err := json.Marshal(body{TaskID: m.TaskID, Attempt: m.Attempt, Dedup: m.Dedup, Format: m.Format})
	if err != nil {
		return "", fmt.Errorf("sqsqueue: encoding message %q: %w", m.TaskID, err)
	}
	return string(b), nil
}

// decodeMessage rebuilds a Message from a body and the MessageGroupId SQS
// delivered it with. Fields it does not know are ignored, so that a newer
// sender can add some.
func decodeMessage(raw, group string) (queue.Message, error) {
	var b body
	if err := json.Unmarshal([]byte(raw), &b); err != nil {
		return queue.Message{}, fmt.Errorf("sqsqueue: message body is not heddle's: %w", err)
	}
	m := queue.Message{TaskID: b.TaskID, Attempt: b.Attempt, Group: group, Dedup: b.Dedup, Format: b.Format}
	if err := queue.ValidateMessage(m); err != nil {
		return queue.Message{}, fmt.Errorf("sqsqueue: message body is not heddle's: %w", err)
	}
	return m, nil
}

// Limits of SQS's MessageDeduplicationId: up to 128 characters of letters,
// digits and ASCII punctuation.
const (
	maxDedupID   = 128
	digestPrefix = "sha256:"
)

// dedupID maps a Message's Dedup onto a valid MessageDeduplicationId. An id
// SQS accepts is sent as it is, unless it starts with digestPrefix; any other
// is replaced by digestPrefix and its SHA-256, so distinct ids stay distinct
// and equal ids stay equal.
func dedupID(dedup string) string {
	if len(dedup) <= maxDedupID && !strings.HasPrefix(dedup, digestPrefix) && validDedupID(dedup) {
		return dedup
	}
	sum := sha256.Sum256([]byte(dedup))
	return digestPrefix + hex.EncodeToString(sum[:])
}

func validDedupID(s string) bool {
	if s == "" {
		return false
	}
	for i := range len(s) {
		if s[i] < '!' || s[i] > '~' {
			return false
		}
	}
	return true
}

// System attributes Receive asks for, and that Lambda puts in every record.
const (
	attrGroup        = "MessageGroupId"
	attrReceiveCount = "ApproximateReceiveCount"
	attrFirstReceive = "ApproximateFirstReceiveTimestamp" // Unix milliseconds
)

// delivery builds a Delivery from what SQS returned for one message.
func delivery(raw, receipt string, attrs map[string]string) (queue.Delivery, error) {
	if receipt == "" {
		return queue.Delivery{}, errors.New("sqsqueue: a message without a receipt handle")
	}
	m, err := decodeMessage(raw, attrs[attrGroup])
	if err != nil {
		return queue.Delivery{}, err
	}
	received, err := strconv.Atoi(attrs[attrReceiveCount])
	if err != nil || received < 1 {
		return queue.Delivery{}, fmt.Errorf("sqsqueue: message %q has no valid %s (%q)", m.TaskID, attrReceiveCount, attrs[attrReceiveCount])
	}
	d := queue.Delivery{Message: m, Receipt: receipt, Received: received}
	// Optional: a delivery without it (an emulator that leaves it out) is
	// only less informed, never refused.
	if ms, err := strconv.ParseInt(attrs[attrFirstReceive], 10, 64); err == nil && ms > 0 {
		d.FirstReceived = time.UnixMilli(ms)
	}
	return d, nil
}

// DeliveryFromRecord converts one record of the SQS event a worker Lambda
// receives into a Delivery. Its Receipt works with Queue.Extend and
// Queue.Ack; the tenant is Queue.TenantOf(r.EventSourceARN).
//
// A record that is not a heddle message gives an error: the worker reports
// it as a batch item failure, and SQS moves it to the dead-letter queue
// after maxReceiveCount deliveries.
func DeliveryFromRecord(r events.SQSMessage) (queue.Delivery, error) {
	d, err := delivery(r.Body, r.ReceiptHandle, r.Attributes)
	if err != nil {
		return queue.Delivery{}, fmt.Errorf("record %s: %w", r.MessageId, err)
	}
	return d, nil
}
