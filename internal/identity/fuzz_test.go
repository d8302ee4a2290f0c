package identity_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/access"
	"github.com/heddle-io/heddle/internal/identity"
)

// FuzzAuthenticate: whatever a caller sends as a bearer, the answer is a
// principal or a refusal (ErrUnauthorized, or ErrUnavailable for an issuer
// that cannot be reached), never a panic, and a refusal creates no user.
func FuzzAuthenticate(f *testing.F) {
	b := setup(f)
	b.trust(f)
	f.Add(b.idp.Token(b.idp.Claims()))
	f.Add(b.idp.ForeignToken(b.idp.Claims()))
	f.Add("a.b.c")
	f.Add("eyJhbGciOiJub25lIn0.eyJpc3MiOiJ4In0.")
	f.Add("eyJhbGciOiJFUzI1NiJ9.eyJpc3MiOlsieCJdfQ.c2ln")
	f.Fuzz(func(t *testing.T, token string) {
		_, err := b.id.Authenticate(b.ctx, token)
		if err != nil {
			require.True(t, errors.Is(err, access.ErrUnauthorized) || errors.Is(err, identity.ErrUnavailable), "%v", err)
		}
	})
}

// FuzzAuthorizerClaims: claims as API Gateway flattens them, whatever they
// hold, are accepted or refused without a panic.
func FuzzAuthorizerClaims(f *testing.F) {
	b := setup(f)
	b.trust(f)
	f.Add(b.idp.URL, "heddle-cli", "4102444800", "[dev heddle-admins]", "x@example.com")
	f.Add("", "", "", "", "")
	f.Add(b.idp.URL, "[heddle-cli other]", "1e309", "[", "@")
	f.Fuzz(func(t *testing.T, iss, aud, exp, groups, email string) {
		_, err := b.id.AuthenticateClaims(b.ctx, map[string]string{"iss": iss, "aud": aud, "exp": exp, "groups": groups, "email": email})
		if err != nil {
			require.ErrorIs(t, err, access.ErrUnauthorized)
		}
	})
}
