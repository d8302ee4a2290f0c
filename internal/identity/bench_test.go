package identity_test

import (
	"testing"
)

// BenchmarkAuthenticate is what a request signed in with an ID token costs
// heddle beyond an API key's: the issuer lookup (two store reads on bbolt),
// go-oidc's ES256 verification with the cached keys, claim validation and
// the mapping (the user exists after the first iteration). It prints
// ns/op; discovery and the JWKS are fetched once, before the timer.
func BenchmarkAuthenticate(b *testing.B) {
	bd := setup(b)
	bd.trust(b)
	token := bd.idp.Token(bd.idp.Claims())
	if _, err := bd.id.Authenticate(bd.ctx, token); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		if _, err := bd.id.Authenticate(bd.ctx, token); err != nil {
			b.Fatal(err)
		}
	}
}
