package tenantmove

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/heddle-io/heddle/internal/domain"
)

// FuzzImport feeds arbitrary request bodies to an import into an empty
// tenant: it never panics, and what it refuses it refuses whole (a
// domain.Problems, nothing written).
func FuzzImport(f *testing.F) {
	f.Add([]byte(`{"format":1,"tenant":"acme","records":[{"pk":"USERS","sk":"bob","data":"eyJ0ZW5hbnRJZCI6ImFjbWUiLCJuYW1lIjoiYm9iIiwicm9sZSI6InVzZXIifQ=="}]}`))
	f.Add([]byte(`{"format":1,"tenant":"acme","records":[{"pk":"CLUSTERSPECS","sk":"c1","data":"eyJrZXkiOnsicHJpdmF0ZUtleSI6ImhlZGRsZS1leHBvcnQ6c2VjcmV0In19","secrets":[{"path":"/key/privateKey","value":"x"}]}]}`))
	f.Add([]byte(`{"format":1,"tenant":"acme","records":[{"pk":"KEYS#bob","sk":"k1","data":"e30="}]}`))
	f.Add([]byte(`{"format":2,"tenant":"other","records":[{"pk":"RATE","sk":"","index":{"Partition":"RUNNING#1","Sort":"x"}}]}`))
	sd := boltSide(f)
	sd.tenant(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		var req ImportRequest
		if json.Unmarshal(body, &req) != nil {
			return
		}
		req.Check = true // the store is shared between inputs: look, never write
		_, err := sd.mover.Import(t.Context(), "acme", domain.RoleAdmin, req)
		var ps domain.Problems
		if err != nil && !errors.As(err, &ps) && !errors.Is(err, ErrConflict) {
			t.Fatalf("an import refused with something else than problems or a conflict: %v", err)
		}
	})
}

// FuzzCursor: a cursor that is not the walk's own is refused, never
// followed into a partition an export does not hold.
func FuzzCursor(f *testing.F) {
	f.Add(encodeCursor([]frame{{Root: true, InItem: true, Child: 2}, {PK: "CAT#providers", After: "aws", InItem: true}}))
	f.Add("W3sicCI6IlJBVEUifV0")
	f.Fuzz(func(t *testing.T, c string) {
		stack, err := decodeCursor(c)
		if err != nil {
			return
		}
		for _, fr := range stack[1:] {
			if !carried(fr.PK) {
				t.Fatalf("cursor %q walks into %q", c, fr.PK)
			}
		}
	})
}

// FuzzIdentity: reading a key file or a recipient never panics.
func FuzzIdentity(f *testing.F) {
	id, _ := NewIdentity()
	text, _ := id.MarshalText()
	f.Add(string(text))
	f.Add(id.Recipient().String())
	f.Fuzz(func(t *testing.T, s string) {
		_, _ = ParseIdentity([]byte(s))
		_, _ = ParseRecipient(s)
		_, _ = id.Open(s)
	})
}
