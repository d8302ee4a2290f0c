package idempotency

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// Header is the request header that carries the key, and ReplayedHeader the
// answer header that says an answer is a replay of an earlier attempt's.
const (
	Header         = "Idempotency-Key"
	ReplayedHeader = "Idempotent-Replayed"
)

// MaxKeyLength is the longest key accepted, in bytes.
const MaxKeyLength = 255

// KeyRule is the sentence that states the syntax, for error answers and docs.
const KeyRule = "an Idempotency-Key is 1 to 255 visible ASCII characters (letters, digits and punctuation, no spaces), " +
	"sent once, bare (8e03978e-40d5-43e8-bc93-6894a57f9324) or as a quoted string (\"8e03978e-...\"); a random UUID is a good key"

// ErrBadKey reports a header that is not a usable key.
var ErrBadKey = errors.New("idempotency: bad key")

// ParseKey reads the header's values (as http.Header holds them). It
// returns "" and no error when the header is absent. A value may be bare or
// a Structured Fields string (RFC 8941, as the IETF draft
// "The Idempotency-Key HTTP Header Field" writes it): `"abc"`, with \" and
// \\ as the only escapes.
func ParseKey(values []string) (string, error) {
	switch len(values) {
	case 0:
		return "", nil
	case 1:
	default:
		return "", fmt.Errorf("%w: the header is sent %d times; send it once", ErrBadKey, len(values))
	}
	v := strings.Trim(values[0], " \t")
	if strings.HasPrefix(v, `"`) {
		var err error
		if v, err = unquote(v); err != nil {
			return "", err
		}
	}
	if v == "" {
		return "", fmt.Errorf("%w: the key is empty", ErrBadKey)
	}
	if len(v) > MaxKeyLength {
		return "", fmt.Errorf("%w: the key is %d characters long; at most %d are kept", ErrBadKey, len(v), MaxKeyLength)
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < 0x21 || c > 0x7e {
			return "", fmt.Errorf("%w: character %d (%q) is not visible ASCII", ErrBadKey, i+1, rune(c))
		}
	}
	return v, nil
}

// unquote reads a Structured Fields string.
func unquote(v string) (string, error) {
	if len(v) < 2 || !strings.HasSuffix(v, `"`) {
		return "", fmt.Errorf("%w: a quoted key must end with a quote", ErrBadKey)
	}
	inner := v[1 : len(v)-1]
	var b strings.Builder
	for i := 0; i < len(inner); i++ {
		c := inner[i]
		switch c {
		case '\\':
			if i+1 == len(inner) || inner[i+1] != '"' && inner[i+1] != '\\' {
				return "", fmt.Errorf("%w: in a quoted key only \\\" and \\\\ are escapes", ErrBadKey)
			}
			i++
			c = inner[i]
		case '"':
			return "", fmt.Errorf("%w: a quote inside a quoted key must be escaped as \\\"", ErrBadKey)
		}
		b.WriteByte(c)
	}
	return b.String(), nil
}

// Fingerprint identifies a request: its method, its path with the query,
// and its body. Two attempts of one request have the same.
func Fingerprint(method, target string, body []byte) string {
	bh := sha256.Sum256(body)
	h := sha256.New()
	h.Write([]byte(method))
	h.Write([]byte{0})
	h.Write([]byte(target))
	h.Write([]byte{0})
	h.Write(bh[:])
	return hex.EncodeToString(h.Sum(nil))
}
