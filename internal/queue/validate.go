package queue

import (
	"errors"
	"fmt"
	"time"
	"unicode/utf8"
)

// These checks hold every backend to SQS's limits, so that what the engine
// sends to the embedded queue would also be accepted in AWS, and so that
// both backends refuse the same calls before doing any of them.

// ValidateTenant checks that a tenant is named. Backends add their own
// limits (sqsqueue: what fits a queue name).
func ValidateTenant(tenant string) error {
	if tenant == "" {
		return errors.New("queue: a tenant is required")
	}
	return nil
}

// ValidateSend checks a whole Send batch.
func ValidateSend(msgs []Message) error {
	if len(msgs) > MaxBatch {
		return fmt.Errorf("queue: %d messages in one send; at most %d", len(msgs), MaxBatch)
	}
	for i, m := range msgs {
		if err := ValidateMessage(m); err != nil {
			return fmt.Errorf("message %d: %w", i, err)
		}
	}
	return nil
}

// ValidateMessage checks one message. Any non-empty Dedup is accepted:
// backends whose own ids are narrower (SQS: 128 characters of ASCII
// punctuation) map it onto one.
func ValidateMessage(m Message) error {
	switch {
	case m.TaskID == "":
		return errors.New("queue: a message needs a task id")
	case !utf8.ValidString(m.TaskID):
		// It would not survive a JSON message body unchanged.
		return fmt.Errorf("queue: task id %q is not valid UTF-8", m.TaskID)
	case m.Dedup == "":
		return errors.New("queue: a message needs a deduplication id")
	}
	return ValidateGroup(m.Group)
}

// ValidateGroup applies SQS's rule for MessageGroupId: 1 to 128 characters,
// letters, digits and ASCII punctuation.
func ValidateGroup(g string) error {
	if g == "" || len(g) > MaxGroupLength {
		return fmt.Errorf("queue: group %q must be 1 to %d characters", g, MaxGroupLength)
	}
	for i := range len(g) {
		if g[i] < '!' || g[i] > '~' {
			return fmt.Errorf("queue: group %q may hold only letters, digits and ASCII punctuation", g)
		}
	}
	return nil
}

// ValidateReceive checks a Receive's arguments.
func ValidateReceive(max int, wait, visibility time.Duration) error {
	if max < 1 || max > MaxBatch {
		return fmt.Errorf("queue: cannot receive %d messages at once; 1 to %d", max, MaxBatch)
	}
	if wait < 0 || wait > MaxWait {
		return fmt.Errorf("queue: wait %v is outside 0 to %v", wait, MaxWait)
	}
	return ValidateVisibility(visibility)
}

// ValidateVisibility checks a visibility timeout for Receive or Extend.
func ValidateVisibility(v time.Duration) error {
	if v < 0 || v > MaxVisibility {
		return fmt.Errorf("queue: visibility %v is outside 0 to %v", v, MaxVisibility)
	}
	return nil
}
