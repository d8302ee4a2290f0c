package secrets

import (
	"log/slog"
)

// Redacted is how every secret prints.
const Redacted = "[REDACTED]"

// Secret is a plaintext secret in memory. Every way of printing or
// serializing it (fmt's %v, %s, %q, %#v, slog, JSON, text) gives Redacted;
// Reveal is the one way to the value, so each use of a secret is visible in
// the code. The value sits behind a pointer so that even a Secret inside an
// unexported field of a printed struct (where fmt cannot call String)
// prints as an address, not the value.
type Secret struct{ p *string }

// NewSecret wraps s.
func NewSecret(s string) Secret { return Secret{p: &s} }

// Reveal returns the plaintext.
func (s Secret) Reveal() string {
	if s.p == nil {
		return ""
	}
	return *s.p
}

// IsZero reports whether the secret is empty.
func (s Secret) IsZero() bool { return s.p == nil || *s.p == "" }

func (Secret) String() string               { return Redacted }
func (Secret) GoString() string             { return Redacted }
func (Secret) LogValue() slog.Value         { return slog.StringValue(Redacted) }
func (Secret) MarshalText() ([]byte, error) { return []byte(Redacted), nil }
func (Secret) MarshalJSON() ([]byte, error) { return []byte(`"` + Redacted + `"`), nil }

// AppendTo appends the plaintext to list (unless empty): the list of values
// an output tail must have redacted.
func (s Secret) AppendTo(list []string) []string {
	if s.IsZero() {
		return list
	}
	return append(list, s.Reveal())
}
