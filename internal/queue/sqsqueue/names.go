package sqsqueue

import (
	"errors"
	"fmt"
	"strings"
)

// SQS queue names are 1 to 80 characters of letters, digits, '-' and '_',
// and a FIFO queue's name ends in ".fifo" (counted in the 80).
const (
	maxQueueName = 80
	fifoSuffix   = ".fifo"
	// dlqMarker ends a dead-letter queue's name before ".fifo". No encoded
	// tenant can end with it (see encodeTenant), so a tenant's dead-letter
	// queue never has another tenant's queue name.
	dlqMarker = "_dlq"
)

// DefaultPrefix starts queue names when Options.Prefix is empty. Deployments
// that share an account should name their stage: "heddle-prod-".
const DefaultPrefix = "heddle-"

// longMarker follows the prefix in the names of the tenants' long-task
// queues: a Queue with the prefix LongPrefix(p) names tenant acme's long
// queue <p>long_acme.fifo. No queue name of a tenant under p starts with it:
// every '_' in an encoded tenant starts "__" or "_-", so "long_" followed by
// an encoded tenant that starts with a letter or digit (as every heddle
// tenant id does) is no tenant's encoding. A plain "long-" would collide:
// tenant "long-acme"'s queue would be tenant "acme"'s long queue.
const longMarker = "long_"

// LongPrefix is the prefix of the long-task queues that go with the queues
// under prefix (DefaultPrefix if empty): "heddle-prod-" gives
// "heddle-prod-long_", so tenant acme's long queue is
// heddle-prod-long_acme.fifo and its dead-letter queue
// heddle-prod-long_acme_dlq.fifo.
func LongPrefix(prefix string) string {
	if prefix == "" {
		prefix = DefaultPrefix
	}
	return prefix + longMarker
}

// names derives queue names from tenant ids under a prefix.
//
// Tenant ids may hold '.', which queue names may not, so a tenant is
// encoded: '_' becomes "__" and '.' becomes "_-"; everything else is kept.
// The encoding is reversible, and every '_' in an encoded tenant starts a
// pair, which is what keeps dlqMarker out of it.
type names struct{ prefix string }

func newNames(prefix string) (names, error) {
	if prefix == "" {
		prefix = DefaultPrefix
	}
	for _, r := range prefix {
		if !queueNameChar(r) {
			return names{}, fmt.Errorf("sqsqueue: prefix %q may hold only letters, digits, '-' and '_'", prefix)
		}
	}
	if room := maxQueueName - len(prefix) - len(dlqMarker) - len(fifoSuffix); room < 1 {
		return names{}, fmt.Errorf("sqsqueue: prefix %q leaves no room for a tenant in an %d-character queue name", prefix, maxQueueName)
	}
	return names{prefix: prefix}, nil
}

// queue names the tenant's queue: <prefix><tenant>.fifo.
func (n names) queue(tenant string) (string, error) {
	enc, err := n.encode(tenant)
	if err != nil {
		return "", err
	}
	return n.prefix + enc + fifoSuffix, nil
}

// deadLetter names the tenant's dead-letter queue: <prefix><tenant>_dlq.fifo.
func (n names) deadLetter(tenant string) (string, error) {
	enc, err := n.encode(tenant)
	if err != nil {
		return "", err
	}
	return n.prefix + enc + dlqMarker + fifoSuffix, nil
}

// encode checks that tenant can name both of its queues and encodes it.
func (n names) encode(tenant string) (string, error) {
	if tenant == "" {
		return "", errors.New("queue: a tenant is required")
	}
	enc, ok := encodeTenant(tenant)
	if !ok {
		return "", fmt.Errorf("sqsqueue: tenant %q may hold only letters, digits, '-', '_' and '.'", tenant)
	}
	if l := len(n.prefix) + len(enc) + len(dlqMarker) + len(fifoSuffix); l > maxQueueName {
		return "", fmt.Errorf("sqsqueue: tenant %q is too long: its dead-letter queue's name %s%s%s%s would have %d characters, SQS allows %d",
			tenant, n.prefix, enc, dlqMarker, fifoSuffix, l, maxQueueName)
	}
	return enc, nil
}

// tenant returns the tenant whose queue (not dead-letter queue) has the
// given name or ARN (arn:aws:sqs:<region>:<account>:<name>), as in the
// eventSourceARN of a Lambda SQS record.
func (n names) tenant(nameOrARN string) (string, error) {
	name := nameOrARN
	if i := strings.LastIndexByte(nameOrARN, ':'); i >= 0 {
		name = nameOrARN[i+1:]
	}
	enc, ok := strings.CutPrefix(name, n.prefix)
	if ok {
		enc, ok = strings.CutSuffix(enc, fifoSuffix)
	}
	if !ok {
		return "", fmt.Errorf("sqsqueue: %q is not a queue named %s<tenant>%s", nameOrARN, n.prefix, fifoSuffix)
	}
	tenant, ok := decodeTenant(enc)
	if !ok || tenant == "" {
		return "", fmt.Errorf("sqsqueue: %q names no tenant's queue (a dead-letter queue, or not one of ours)", nameOrARN)
	}
	return tenant, nil
}

func queueNameChar(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_'
}

func encodeTenant(tenant string) (string, bool) {
	var b strings.Builder
	for _, r := range tenant {
		switch {
		case r == '_':
			b.WriteString("__")
		case r == '.':
			b.WriteString("_-")
		case queueNameChar(r):
			b.WriteRune(r)
		default:
			return "", false
		}
	}
	return b.String(), true
}

// decodeTenant reverses encodeTenant; it fails on anything encodeTenant
// cannot produce.
func decodeTenant(enc string) (string, bool) {
	var b strings.Builder
	for i := 0; i < len(enc); i++ {
		c := enc[i]
		switch {
		case c == '_' && i+1 < len(enc) && enc[i+1] == '_':
			b.WriteByte('_')
			i++
		case c == '_' && i+1 < len(enc) && enc[i+1] == '-':
			b.WriteByte('.')
			i++
		case c == '_':
			return "", false
		case queueNameChar(rune(c)):
			b.WriteByte(c)
		default:
			return "", false
		}
	}
	return b.String(), true
}
