package secrets

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSealedKeyIDsFindsEveryKeyInText: the key ids of sealed values inside
// JSON bodies, whatever surrounds them; runs that do not parse are not
// heddle's and are skipped.
func TestSealedKeyIDsFindsEveryKeyInText(t *testing.T) {
	t.Parallel()
	kr, key := setup(t)
	other, err := LoadOrCreateKeyFile(filepath.Join(t.TempDir(), "master.key"))
	require.NoError(t, err)
	ctx := context.Background()
	a, err := kr.SealString(ctx, "one", Binding{"tenant": "acme"})
	require.NoError(t, err)
	b, err := NewKeyring(other).SealString(ctx, "two", Binding{"tenant": "acme"})
	require.NoError(t, err)
	text := fmt.Appendf(nil, `{"token":%q,"nested":{"keys":[%q,"heddle-sealed:","heddle-sealed:!!not","%sAAAA"]}}%s`, a, b, SealedPrefix, a)

	seen := map[string]int{}
	SealedKeyIDs(text, func(id string) { seen[id]++ })
	require.Equal(t, map[string]int{key.ID(): 2, other.ID(): 1}, seen)

	seen = map[string]int{}
	SealedKeyIDs([]byte(`{"plain":"no secrets here"}`), func(id string) { seen[id]++ })
	require.Empty(t, seen)
}

func TestReadKeyFileNeverCreatesOne(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "master.key")
	_, err := ReadKeyFile(path)
	require.Error(t, err)
	require.NoFileExists(t, path)
	made, err := LoadOrCreateKeyFile(path)
	require.NoError(t, err)
	read, err := ReadKeyFile(path)
	require.NoError(t, err)
	require.Equal(t, made.ID(), read.ID())
}
