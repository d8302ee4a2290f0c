package engine

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/heddle-io/heddle/internal/domain"
)

// Bounds on what an attempt record keeps, counted as the bytes its JSON
// encoding takes (a control byte or '<' takes six, not one). A task keeps up
// to maxAttemptHistory attempts in one item, and a DynamoDB item holds at
// most 400 KB: the latest attempt keeps full tails, older ones short ones,
// so the item stays well under the limit (about 100 KB of attempts at most)
// and every attempt can be recorded.
const (
	maxTailBytes     = 32 << 10 // stdout and stderr of the latest attempt, each
	maxOldTailBytes  = 1 << 10  // of an older attempt, each
	maxErrorBytes    = 4 << 10  // the latest attempt's error
	maxOldErrorBytes = 1 << 10  // an older attempt's error
)

// truncated marks where a bounded text was cut.
const truncated = "…"

// sanitize makes executor output safe to store and show: valid UTF-8
// (invalid bytes become U+FFFD), and control characters other than newline,
// carriage return and tab replaced by U+FFFD (a terminal escape, a NUL).
func sanitize(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	return strings.Map(func(r rune) rune {
		if r == '\n' || r == '\r' || r == '\t' || !unicode.IsControl(r) {
			return r
		}
		return '\uFFFD'
	}, s)
}

// encodedLen is how many bytes encoding/json writes for r (which escapes
// HTML characters and the line separators as \uXXXX).
func encodedLen(r rune) int {
	switch {
	case r == '"' || r == '\\' || r == '\n' || r == '\r' || r == '\t':
		return 2
	case r < 0x20 || r == '<' || r == '>' || r == '&' || r == '\u2028' || r == '\u2029':
		return 6
	case r == utf8.RuneError:
		return 3
	}
	return utf8.RuneLen(r)
}

// boundTail sanitizes s and keeps its end: the longest suffix whose JSON
// encoding takes at most limit bytes, marked when cut.
func boundTail(s string, limit int) string {
	s = sanitize(s)
	n, i := 0, len(s)
	for i > 0 {
		r, size := utf8.DecodeLastRuneInString(s[:i])
		if n+encodedLen(r) > limit-len(truncated) {
			return truncated + s[i:]
		}
		n += encodedLen(r)
		i -= size
	}
	return s
}

// boundHead sanitizes s and keeps its start (an error says first what
// went wrong), marked when cut.
func boundHead(s string, limit int) string {
	s = sanitize(s)
	n, i := 0, 0
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		if n+encodedLen(r) > limit-len(truncated) {
			return s[:i] + truncated
		}
		n += encodedLen(r)
		i += size
	}
	return s
}

// compactAttempts keeps the task's last maxAttemptHistory attempts and
// shortens the tails and errors of all but the latest.
func compactAttempts(t *domain.Task) {
	if len(t.Attempts) > maxAttemptHistory {
		t.Attempts = t.Attempts[len(t.Attempts)-maxAttemptHistory:]
	}
	for i := 0; i < len(t.Attempts)-1; i++ {
		a := &t.Attempts[i]
		a.Stdout = boundTail(a.Stdout, maxOldTailBytes)
		a.Stderr = boundTail(a.Stderr, maxOldTailBytes)
		a.Error = boundHead(a.Error, maxOldErrorBytes)
	}
}
