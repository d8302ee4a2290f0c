package api

import (
	"testing"
)

// FuzzCursorOpen feeds arbitrary cursors to the opener: it never panics,
// and it accepts a cursor only if it is exactly one this signer sealed for
// the same tenant and scope.
func FuzzCursorOpen(f *testing.F) {
	signer := cursorSigner{key: []byte("0123456789abcdef0123456789abcdef")}
	f.Add(signer.seal("acme", "/v1/users?", "page-2"))
	f.Add("")
	f.Add("%%")
	f.Add("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA")
	f.Fuzz(func(t *testing.T, cursor string) {
		inner, err := signer.open("acme", "/v1/users?", cursor)
		if err != nil {
			return
		}
		if signer.seal("acme", "/v1/users?", inner) != cursor {
			t.Fatalf("accepted %q, which is not the seal of %q", cursor, inner)
		}
		if _, err := signer.open("globex", "/v1/users?", cursor); err == nil {
			t.Fatalf("a cursor of acme opened for globex: %q", cursor)
		}
	})
}
