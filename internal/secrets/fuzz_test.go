package secrets

import (
	"bytes"
	"context"
	"testing"
)

// FuzzParseSealed feeds arbitrary stored text to the parser and the opener:
// they must reject it without panicking or allocating without bound, and a
// value that parses must format back to itself.
func FuzzParseSealed(f *testing.F) {
	key, err := NewLocalKey(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		f.Fatal(err)
	}
	kr := NewKeyring(key)
	b := Binding{"tenant": "t"}
	good, err := kr.SealString(context.Background(), "seed value", b)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(string(good))
	f.Add(SealedPrefix)
	f.Add(SealedPrefix + "AQ")
	f.Add("plain")
	f.Fuzz(func(t *testing.T, s string) {
		e, err := parseSealed(Sealed(s))
		if err != nil {
			return
		}
		if again := e.format(); again != Sealed(s) {
			// base64 accepts only canonical input without padding, so a
			// parsed value has exactly one form.
			if _, err := parseSealed(again); err != nil {
				t.Fatalf("reformatted value does not parse: %v", err)
			}
		}
		plain, err := kr.Open(context.Background(), Sealed(s), b)
		if err == nil && Sealed(s) != good && !bytes.Equal(plain, []byte("seed value")) {
			t.Fatalf("a forged value opened to %q", plain)
		}
	})
}
