package secrets

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"
)

func setup(t testing.TB) (*Keyring, *LocalKey) {
	t.Helper()
	key, err := LoadOrCreateKeyFile(filepath.Join(t.TempDir(), "keys", "master.key"))
	require.NoError(t, err)
	return NewKeyring(key), key
}

func TestSealOpenRoundTrip(t *testing.T) {
	t.Parallel()
	kr, _ := setup(t)
	ctx := context.Background()
	b := Binding{"tenant": "acme", "purpose": "test"}
	for _, plain := range [][]byte{nil, []byte("x"), bytes.Repeat([]byte("secret "), 10000)} {
		s, err := kr.Seal(ctx, plain, b)
		require.NoError(t, err)
		require.True(t, IsSealed(string(s)))
		require.NotContains(t, string(s), "secret")
		got, err := kr.Open(ctx, s, b)
		require.NoError(t, err)
		require.Equal(t, len(plain), len(got))
		require.True(t, bytes.Equal(plain, got))
	}
}

func TestSealingTwiceGivesDifferentValues(t *testing.T) {
	t.Parallel()
	kr, _ := setup(t)
	b := Binding{"tenant": "acme"}
	s1, err := kr.SealString(context.Background(), "same", b)
	require.NoError(t, err)
	s2, err := kr.SealString(context.Background(), "same", b)
	require.NoError(t, err)
	require.NotEqual(t, s1, s2, "each value has its own data key and nonce")
}

func TestOpenRefuses(t *testing.T) {
	t.Parallel()
	kr, _ := setup(t)
	other, _ := setup(t)
	ctx := context.Background()
	b := Binding{"tenant": "acme", "cluster": "c1", "purpose": "p"}
	s, err := kr.SealString(ctx, "the value", b)
	require.NoError(t, err)
	env, err := parseSealed(s)
	require.NoError(t, err)
	flip := func(part []byte) Sealed {
		part[len(part)/2] ^= 1
		out := env.format()
		part[len(part)/2] ^= 1
		return out
	}
	tests := []struct {
		name    string
		kr      *Keyring
		sealed  Sealed
		binding Binding
		want    error
	}{
		{"another tenant", kr, s, Binding{"tenant": "evil", "cluster": "c1", "purpose": "p"}, ErrOpen},
		{"another purpose", kr, s, Binding{"tenant": "acme", "cluster": "c1", "purpose": "q"}, ErrOpen},
		{"an extra binding entry", kr, s, Binding{"tenant": "acme", "cluster": "c1", "purpose": "p", "x": ""}, ErrOpen},
		{"another master key", other, s, b, ErrOpen},
		{"tampered ciphertext", kr, flip(env.ciphertext), b, ErrOpen},
		{"tampered nonce", kr, flip(env.nonce), b, ErrOpen},
		{"tampered wrapped key", kr, flip(env.wrapped), b, ErrOpen},
		{"not sealed", kr, Sealed("plain text"), b, ErrMalformed},
		{"bad base64", kr, Sealed(SealedPrefix + "!!"), b, ErrMalformed},
		{"truncated", kr, s[:len(s)-10], b, ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := tt.kr.Open(ctx, tt.sealed, tt.binding)
			require.ErrorIs(t, err, tt.want)
		})
	}
}

func TestCachedDataKeyStillChecksTheBinding(t *testing.T) {
	t.Parallel()
	kr, _ := setup(t)
	ctx := context.Background()
	b := Binding{"tenant": "acme"}
	s, err := kr.SealString(ctx, "v", b)
	require.NoError(t, err)
	_, err = kr.Open(ctx, s, b) // caches the data key
	require.NoError(t, err)
	_, err = kr.Open(ctx, s, Binding{"tenant": "other"})
	require.ErrorIs(t, err, ErrOpen)
}

func TestRotationOpensValuesOfTheOldKey(t *testing.T) {
	t.Parallel()
	oldRing, oldKey := setup(t)
	_, newKey := setup(t)
	ctx := context.Background()
	b := Binding{"tenant": "acme"}
	s, err := oldRing.SealString(ctx, "before rotation", b)
	require.NoError(t, err)
	rotated := NewKeyring(newKey, oldKey)
	got, err := rotated.OpenString(ctx, s, b)
	require.NoError(t, err)
	require.Equal(t, "before rotation", got.Reveal())
	s2, err := rotated.SealString(ctx, "after", b)
	require.NoError(t, err)
	id, err := s2.MasterKeyID()
	require.NoError(t, err)
	require.Equal(t, newKey.ID(), id)
	_, err = oldRing.Open(ctx, s2, b)
	require.ErrorIs(t, err, ErrOpen)
	require.ErrorContains(t, err, newKey.ID())
}

func TestKeyFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "master.key")

	k1, err := LoadOrCreateKeyFile(path)
	require.NoError(t, err)
	info, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), info.Mode().Perm())
	k2, err := LoadOrCreateKeyFile(path)
	require.NoError(t, err)
	require.Equal(t, k1.ID(), k2.ID(), "the same file is the same key")
	require.NotContains(t, fmt.Sprintf("%v %#v %s", k1, k1, k1), string(k1.key))

	require.NoError(t, os.Chmod(path, 0o644))
	_, err = LoadOrCreateKeyFile(path)
	require.ErrorContains(t, err, "chmod 600")

	bad := filepath.Join(dir, "bad.key")
	require.NoError(t, os.WriteFile(bad, []byte("not a key\n"), 0o600))
	_, err = LoadOrCreateKeyFile(bad)
	require.ErrorContains(t, err, "not a heddle master key file")

	short := filepath.Join(dir, "short.key")
	require.NoError(t, os.WriteFile(short, []byte(keyFileHeader+"AAAA\n"), 0o600))
	_, err = LoadOrCreateKeyFile(short)
	require.ErrorContains(t, err, "32")
}

func TestKeyFileCreatedOnceUnderRace(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "master.key")
	ids := make([]string, 8)
	var wg sync.WaitGroup
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k, err := LoadOrCreateKeyFile(path)
			if err == nil {
				ids[i] = k.ID()
			}
		}()
	}
	wg.Wait()
	for _, id := range ids {
		require.Equal(t, ids[0], id)
		require.NotEmpty(t, id)
	}
}

func TestSecretNeverPrints(t *testing.T) {
	t.Parallel()
	const value = "hunter2-very-secret"
	s := NewSecret(value)
	key := mustSSHKey(t)
	type holder struct {
		Exported Secret
		hidden   Secret
		Key      *SSHKey
		key      *SSHKey
	}
	h := holder{Exported: s, hidden: s, Key: key, key: key}
	pem := string(key.PEM())
	outputs := []string{
		fmt.Sprint(s), fmt.Sprintf("%v %+v %s %q %#v %x", s, s, s, s, s, s),
		fmt.Sprintf("%v", h), fmt.Sprintf("%+v", h), fmt.Sprintf("%#v", h),
		fmt.Sprintf("%v %s %#v", key, key, key),
	}
	js, err := json.Marshal(h)
	require.NoError(t, err)
	outputs = append(outputs, string(js))
	var logged bytes.Buffer
	slog.New(slog.NewJSONHandler(&logged, nil)).Info("msg", "secret", s, "key", key, "holder", h)
	slog.New(slog.NewTextHandler(&logged, nil)).Info("msg", "secret", s, "key", key)
	outputs = append(outputs, logged.String())
	for _, out := range outputs {
		require.NotContains(t, out, value)
		require.NotContains(t, out, "hunter2")
		require.NotContains(t, out, strings.TrimSpace(pem[40:80]))
	}
	require.Contains(t, string(js), Redacted)
	require.Equal(t, value, s.Reveal())
}

func mustSSHKey(t testing.TB) *SSHKey {
	t.Helper()
	kr, _ := setup(t)
	ck, err := NewClusterKey(context.Background(), kr, "acme", "c1")
	require.NoError(t, err)
	k, err := ck.Open(context.Background(), kr, "acme", "c1")
	require.NoError(t, err)
	return k
}

func TestClusterKey(t *testing.T) {
	t.Parallel()
	kr, _ := setup(t)
	ctx := context.Background()
	ck, err := NewClusterKey(ctx, kr, "acme", "c1")
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(ck.AuthorizedKey, "ssh-ed25519 "))
	require.True(t, IsSealed(string(ck.PrivateKey)))

	stored, err := json.Marshal(ck)
	require.NoError(t, err)
	require.NotContains(t, string(stored), "PRIVATE KEY")
	var back ClusterKey
	require.NoError(t, json.Unmarshal(stored, &back))

	key, err := back.Open(ctx, kr, "acme", "c1")
	require.NoError(t, err)
	pub, _, _, _, err := ssh.ParseAuthorizedKey([]byte(ck.AuthorizedKey))
	require.NoError(t, err)
	require.Equal(t, pub.Marshal(), key.Signer().PublicKey().Marshal())
	require.Equal(t, strings.Fields(ck.AuthorizedKey)[1], strings.Fields(key.AuthorizedKey())[1])

	_, err = back.Open(ctx, kr, "acme", "c2")
	require.ErrorIs(t, err, ErrOpen, "a key moved to another cluster does not open")
	_, err = ClusterKey{}.Open(ctx, kr, "acme", "c1")
	require.ErrorContains(t, err, "has no SSH key")
}

func TestBindingEncodingIsInjective(t *testing.T) {
	t.Parallel()
	pairs := [][2]Binding{
		{{"a": "bc"}, {"ab": "c"}},
		{{"a": "", "b": ""}, {"a": "\x01b"}},
		{{}, {"": ""}},
		{{"k": "v1"}, {"k": "v2"}},
	}
	for _, p := range pairs {
		require.NotEqual(t, p[0].encode(), p[1].encode(), "%v vs %v", p[0], p[1])
	}
	require.Equal(t, Binding{"a": "1", "b": "2"}.encode(), Binding{"b": "2", "a": "1"}.encode())
}
