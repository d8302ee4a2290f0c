package domain

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// ValidName is namePattern written out for speed; they must agree.
func TestValidNameAgreesWithItsPattern(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"", "a", "A9", "_a", "a_", "-", ".x", "x.y-z_0", strings.Repeat("a", 63), strings.Repeat("a", 64),
		"a b", "a/b", "é", "a\x00", "a\n", "9" + strings.Repeat("-", 62)} {
		require.Equal(t, namePattern.MatchString(s), ValidName(s), "%q", s)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := "aZ09_.-/ \xff"
	for range 20000 {
		b := make([]byte, rng.IntN(70))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		require.Equal(t, namePattern.MatchString(string(b)), ValidName(string(b)), "%q", b)
	}
}

func FuzzValidName(f *testing.F) {
	f.Add("web-1")
	f.Add("_x")
	f.Fuzz(func(t *testing.T, s string) {
		if namePattern.MatchString(s) != ValidName(s) {
			t.Fatalf("ValidName(%q) = %v, the pattern says otherwise", s, ValidName(s))
		}
	})
}
