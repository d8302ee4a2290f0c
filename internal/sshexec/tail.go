package sshexec

import (
	"strconv"
	"strings"
)

// TailLimit is how much of each of stdout and stderr a run keeps: the last
// 32 KiB, where a failing script says why.
const TailLimit = 32 << 10

// Redacted replaces every secret in a tail.
const Redacted = "[REDACTED]"

// Tail is the end of an output stream, secrets replaced.
type Tail struct {
	Text string
	// Size is how many bytes the stream had in all; when it exceeds what
	// Text holds, Truncated is set and Text starts mid-stream.
	Size      int64
	Truncated bool
}

// String is the tail as a person should see it: with a note in front when
// the start of the stream was cut.
func (t Tail) String() string {
	if !t.Truncated {
		return t.Text
	}
	return "[... " + strconv.FormatInt(t.Size-TailLimit, 10) + " earlier bytes not kept]\n" + t.Text
}

// tailBuffer is an io.Writer keeping the last limit bytes written, plus the
// context bytes before them in which a secret that straddles the cut could
// start, so that the secret is still found whole when the tail is redacted.
type tailBuffer struct {
	limit   int
	context int // longest secret - 1
	buf     []byte
	size    int64
}

func newTailBuffer(limit int, secrets []string) *tailBuffer {
	longest := 0
	for _, s := range secrets {
		longest = max(longest, len(s))
	}
	return &tailBuffer{limit: limit, context: max(longest-1, 0)}
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.size += int64(len(p))
	keep := t.limit + t.context
	if len(p) >= keep {
		t.buf = append(t.buf[:0], p[len(p)-keep:]...)
		return len(p), nil
	}
	if len(t.buf)+len(p) > 2*keep {
		// Compact rarely: drop what can no longer matter, so each write is
		// amortized O(len(p)) and memory stays within 2*keep.
		drop := len(t.buf) + len(p) - keep
		t.buf = append(t.buf[:0], t.buf[drop:]...)
	}
	t.buf = append(t.buf, p...)
	return len(p), nil
}

// tail returns the last limit bytes with every secret redacted.
func (t *tailBuffer) tail(secrets []string) Tail {
	return redactTail(t.buf, t.size, t.limit, secrets)
}

// redactTail builds the Tail of a stream of size bytes whose last len(buf)
// bytes are buf: the last limit bytes are shown; the bytes before them are
// context, searched for secrets but never shown. Every byte covered by an
// occurrence of a secret is hidden, and each run of hidden bytes becomes one
// Redacted marker, so overlapping secrets cannot leak a fragment between
// them. A secret cut by the start of buf (its beginning no longer kept) is
// handled by hiding any prefix of the shown text that is a proper suffix of a
// secret, when bytes were dropped.
func redactTail(buf []byte, size int64, limit int, secrets []string) Tail {
	show := max(len(buf)-limit, 0) // index in buf where the shown tail starts
	hidden := make([]bool, len(buf))
	any := false
	text := string(buf)
	for _, s := range secrets {
		if s == "" {
			continue
		}
		for from := 0; ; {
			i := strings.Index(text[from:], s)
			if i < 0 {
				break
			}
			i += from
			for k := i; k < i+len(s); k++ {
				hidden[k] = true
			}
			any = true
			from = i + 1
		}
		if size > int64(len(buf)) {
			// Bytes before buf were dropped: a secret may have begun there.
			for k := len(s) - 1; k > 0; k-- {
				if strings.HasPrefix(text, s[len(s)-k:]) {
					for j := 0; j < k && j < len(hidden); j++ {
						hidden[j] = true
					}
					any = true
					break
				}
			}
		}
	}
	out := Tail{Size: size, Truncated: size > int64(limit)}
	if !any {
		out.Text = text[show:]
		return out
	}
	var b strings.Builder
	b.Grow(len(buf) - show)
	for i := show; i < len(buf); {
		if !hidden[i] {
			j := i
			for j < len(buf) && !hidden[j] {
				j++
			}
			b.WriteString(text[i:j])
			i = j
			continue
		}
		b.WriteString(Redacted)
		for i < len(buf) && hidden[i] {
			i++
		}
	}
	out.Text = b.String()
	return out
}
