package sshexec

import (
	"bytes"
	"math/rand/v2"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func tailOf(limit int, secrets []string, chunks ...string) Tail {
	b := newTailBuffer(limit, secrets)
	for _, c := range chunks {
		_, _ = b.Write([]byte(c))
	}
	return b.tail(secrets)
}

func TestTail(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		limit   int
		secrets []string
		chunks  []string
		want    string
		trunc   bool
	}{
		{"short", 10, nil, []string{"abc", "def"}, "abcdef", false},
		{"exact", 6, nil, []string{"abc", "def"}, "abcdef", false},
		{"keeps the last bytes", 4, nil, []string{"abc", "def"}, "cdef", true},
		{"one big write", 4, nil, []string{"0123456789"}, "6789", true},
		{"secret", 100, []string{"pw"}, []string{"a pw b pw"}, "a [REDACTED] b [REDACTED]", false},
		{"secret across writes", 100, []string{"password"}, []string{"x pass", "wo", "rd y"}, "x [REDACTED] y", false},
		{"secret cut by the tail start", 6, []string{"password"}, []string{"xx password!"}, "[REDACTED]!", true},
		{"secret cut, in small writes", 6, []string{"password"}, []string{"xx pa", "ssw", "ord", "!"}, "[REDACTED]!", true},
		{"overlapping secrets", 100, []string{"abcd", "cdef"}, []string{"_abcdef_"}, "_[REDACTED]_", false},
		{"repeated secret overlapping itself", 100, []string{"aa"}, []string{"baaab"}, "b[REDACTED]b", false},
		{"empty secret ignored", 100, []string{""}, []string{"abc"}, "abc", false},
		{"secret longer than the limit", 3, []string{"0123456789"}, []string{"..0123456789"}, "[REDACTED]", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := tailOf(tt.limit, tt.secrets, tt.chunks...)
			require.Equal(t, tt.want, got.Text)
			require.Equal(t, tt.trunc, got.Truncated)
			require.EqualValues(t, len(strings.Join(tt.chunks, "")), got.Size)
		})
	}
}

// redactReference is the obvious, slow definition: hide every byte of every
// occurrence of a secret in the whole stream, then keep the bytes of the
// last limit that are not hidden, one marker per hidden run.
func redactReference(stream string, limit int, secrets []string) string {
	hidden := make([]bool, len(stream))
	for _, s := range secrets {
		if s == "" {
			continue
		}
		for i := 0; i+len(s) <= len(stream); i++ {
			if stream[i:i+len(s)] == s {
				for k := i; k < i+len(s); k++ {
					hidden[k] = true
				}
			}
		}
	}
	var b strings.Builder
	for i := max(len(stream)-limit, 0); i < len(stream); i++ {
		if !hidden[i] {
			b.WriteByte(stream[i])
		} else if i == max(len(stream)-limit, 0) || !hidden[i-1] {
			b.WriteString(Redacted)
		}
	}
	return b.String()
}

// The tail of a stream does not depend on how it was cut into writes, and it
// equals the reference.
func TestPropertyTailIndependentOfChunking(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(7, 8))
	for round := range 3000 {
		var stream strings.Builder
		for range r.IntN(200) {
			stream.WriteByte("abs3"[r.IntN(4)])
		}
		secrets := []string{"s3", "abab", "3ss"}[:r.IntN(4)]
		limit := 1 + r.IntN(40)
		s := stream.String()
		var chunks []string
		for rest := s; rest != ""; {
			n := min(1+r.IntN(20), len(rest))
			chunks, rest = append(chunks, rest[:n]), rest[n:]
		}
		got := tailOf(limit, secrets, chunks...)
		require.Equal(t, redactReference(s, limit, secrets), got.Text, "round %d: %q limit %d secrets %q", round, s, limit, secrets)
	}
}

func FuzzRedactTail(f *testing.F) {
	f.Add("xx password!", "password", 6, 3)
	f.Add("aaaa", "aa", 3, 1)
	f.Fuzz(func(t *testing.T, stream, secret string, limit, chunk int) {
		if limit <= 0 || limit > 1<<16 || chunk <= 0 {
			return
		}
		var chunks []string
		for rest := stream; rest != ""; {
			n := min(chunk, len(rest))
			chunks, rest = append(chunks, rest[:n]), rest[n:]
		}
		got := tailOf(limit, []string{secret}, chunks...)
		require.Equal(t, redactReference(stream, limit, []string{secret}), got.Text)
		if secret != "" && !strings.Contains(Redacted, secret) {
			require.NotContains(t, got.Text, secret)
		}
	})
}

func TestQuoteRoundTripsThroughSh(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"", "plain", "it's", "'", "''", `"$HOME" $(id) ` + "`x`", "a\nb", "\\", "-n", "é ✓"} {
		out, err := exec.Command("/bin/sh", "-c", "printf %s "+quote(s)).Output()
		require.NoError(t, err)
		require.Equal(t, s, string(out))
	}
}

func FuzzQuote(f *testing.F) {
	f.Add("it's")
	f.Fuzz(func(t *testing.T, s string) {
		if strings.IndexByte(s, 0) >= 0 {
			return
		}
		out, err := exec.Command("/bin/sh", "-c", "printf %s "+quote(s)).Output()
		require.NoError(t, err)
		require.Equal(t, s, string(out))
	})
}

func TestExports(t *testing.T) {
	t.Parallel()
	got, err := exports(map[string]string{"B": "it's", "A": "", "_x1": "$y"})
	require.NoError(t, err)
	require.Equal(t, "export A=''\nexport B='it'\\''s'\nexport _x1='$y'\n", got)
	for _, bad := range []string{"", "1A", "A-B", "A B", "é"} {
		_, err := exports(map[string]string{bad: "v"})
		require.Error(t, err, bad)
	}
}

func TestParsePoll(t *testing.T) {
	t.Parallel()
	tests := []struct {
		out  string
		want Status
		err  bool
	}{
		{"state=running\n", Status{State: Running}, false},
		{"state=lost\nreason=rebooted\n", Status{State: Lost, Reason: LostRebooted}, false},
		{"state=lost\nreason=missing\n", Status{State: Lost, Reason: LostMissing}, false},
		{"state=exited\ncode=3\nstdout=  3\nstderr=2\n--\nabcde", Status{State: Exited, ExitCode: 3,
			Stdout: Tail{Text: "abc", Size: 3}, Stderr: Tail{Text: "de", Size: 2}}, false},
		{"state=exited\ncode=0\nstdout=10\nstderr=0\n--\nwxyz", Status{State: Exited,
			Stdout: Tail{Text: "wxyz", Size: 10}}, false},
		{"", Status{}, true},
		{"state=lost\nreason=odd\n", Status{}, true},
		{"state=exited\ncode=x\n", Status{}, true},
		{"state=exited\ncode=0\nstdout=5\nstderr=0\n--\nab", Status{}, true},
	}
	for _, tt := range tests {
		got, err := parsePoll(bytes.NewBufferString(tt.out), 4, nil)
		if tt.err {
			require.Error(t, err, tt.out)
			continue
		}
		require.NoError(t, err, tt.out)
		// Tails under the fetch size are whole; TailLimit decides truncation.
		require.Equal(t, tt.want, got, tt.out)
	}
}

func FuzzParsePoll(f *testing.F) {
	f.Add("state=exited\ncode=3\nstdout=3\nstderr=2\n--\nabcde")
	f.Add("state=running\n")
	f.Fuzz(func(t *testing.T, out string) {
		st, err := parsePoll(strings.NewReader(out), 64, []string{"abc"})
		if err != nil {
			return
		}
		require.Contains(t, []State{Running, Exited, Lost}, st.State)
		require.NotContains(t, st.Stdout.Text, "abc")
	})
}

// BenchmarkTailBuffer writes 1 MiB of output in 4 KiB chunks, as a chatty
// install script would, and redacts two secrets from the tail.
func BenchmarkTailBuffer(b *testing.B) {
	chunk := bytes.Repeat([]byte("installing package foo-1.2.3 with token abcdef0123456789\n"), 4096/57)
	secrets := []string{"abcdef0123456789", "another-secret"}
	b.SetBytes(int64(len(chunk) * 256))
	b.ReportAllocs()
	for b.Loop() {
		t := newTailBuffer(TailLimit, secrets)
		for range 256 {
			_, _ = t.Write(chunk)
		}
		_ = t.tail(secrets)
	}
}
