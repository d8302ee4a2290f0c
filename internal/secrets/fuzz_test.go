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

// FuzzSealedKeyIDs scans arbitrary text (a store record) for sealed values:
// it must not panic, and every id it reports is one a sealed value can
// carry and is reported again when the text is scanned once more.
func FuzzSealedKeyIDs(f *testing.F) {
	key, err := NewLocalKey(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		f.Fatal(err)
	}
	good, err := NewKeyring(key).SealString(context.Background(), "seed value", Binding{"tenant": "t"})
	if err != nil {
		f.Fatal(err)
	}
	f.Add([]byte(`{"token":"` + string(good) + `"}`))
	f.Add([]byte(SealedPrefix + SealedPrefix + "AQ"))
	f.Add([]byte("plain"))
	f.Fuzz(func(t *testing.T, data []byte) {
		var first []string
		SealedKeyIDs(data, func(id string) {
			if id == "" || len(id) > maxIDLen {
				t.Fatalf("an id of %d bytes", len(id))
			}
			first = append(first, id)
		})
		var again []string
		SealedKeyIDs(data, func(id string) { again = append(again, id) })
		if len(first) != len(again) {
			t.Fatalf("two scans of the same text found %d and %d ids", len(first), len(again))
		}
	})
}
