package idempotency

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseKey(t *testing.T) {
	t.Parallel()
	good := map[string][]string{
		"":                                     nil,
		"8e03978e-40d5-43e8-bc93-6894a57f9324": {"8e03978e-40d5-43e8-bc93-6894a57f9324"},
		"abc":                                  {`"abc"`},
		`a"b\c`:                                {`"a\"b\\c"`},
		"padded":                               {"  padded\t"},
		strings.Repeat("k", MaxKeyLength):      {strings.Repeat("k", MaxKeyLength)},
	}
	for want, values := range good {
		got, err := ParseKey(values)
		require.NoError(t, err, "%q", values)
		require.Equal(t, want, got)
	}
	for name, values := range map[string][]string{
		"twice":         {"a", "b"},
		"empty":         {""},
		"empty quoted":  {`""`},
		"space":         {"a b"},
		"too long":      {strings.Repeat("k", MaxKeyLength+1)},
		"unterminated":  {`"abc`},
		"lone quote":    {`"`},
		"bad escape":    {`"a\nb"`},
		"bare quote":    {`"a"b"`},
		"control":       {"a\x00b"},
		"not ASCII":     {"clé"},
		"escape at end": {`"abc\"`},
	} {
		_, err := ParseKey(values)
		require.ErrorIs(t, err, ErrBadKey, name)
	}
}

func TestFingerprintSeparatesTheParts(t *testing.T) {
	t.Parallel()
	base := Fingerprint("POST", "/v1/clusters", []byte(`{"a":1}`))
	require.Equal(t, base, Fingerprint("POST", "/v1/clusters", []byte(`{"a":1}`)))
	require.NotEqual(t, base, Fingerprint("DELETE", "/v1/clusters", []byte(`{"a":1}`)))
	require.NotEqual(t, base, Fingerprint("POST", "/v1/clusters?dryRun=true", []byte(`{"a":1}`)))
	require.NotEqual(t, base, Fingerprint("POST", "/v1/clusters", []byte(`{"a":2}`)))
	require.NotEqual(t, Fingerprint("POST", "/a", []byte("b")), Fingerprint("POST", "/ab", nil))
}

// FuzzParseKey: any header value is either refused with ErrBadKey or
// gives a key of 1 to MaxKeyLength visible ASCII characters; a key sent
// back quoted parses to itself.
func FuzzParseKey(f *testing.F) {
	for _, seed := range []string{"abc", `"abc"`, `"a\"b"`, "", `"`, `"\`, "a b", strings.Repeat("x", 300), "\x7f", "é"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, v string) {
		key, err := ParseKey([]string{v})
		if err != nil {
			require.ErrorIs(t, err, ErrBadKey)
			return
		}
		require.NotEmpty(t, key)
		require.LessOrEqual(t, len(key), MaxKeyLength)
		for i := 0; i < len(key); i++ {
			require.True(t, key[i] > 0x20 && key[i] < 0x7f, "%q", key)
		}
		quoted := `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(key) + `"`
		again, err := ParseKey([]string{quoted})
		require.NoError(t, err)
		require.Equal(t, key, again)
	})
}

func TestItemKeysDoNotCollide(t *testing.T) {
	t.Parallel()
	require.NotEqual(t, ItemKey("acme", "a#b", "c"), ItemKey("acme", "a", "b#c"))
	require.NotEqual(t, ItemKey("acme", "ann", "k"), ItemKey("globex", "ann", "k"))
	require.NotEqual(t, ItemKey("acme", "ann", "k"), ItemKey("acme", "bob", "k"))
}
