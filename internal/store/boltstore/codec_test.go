package boltstore

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/store"
)

func TestRecordRoundTrip(t *testing.T) {
	t.Parallel()
	cases := []store.Item{
		{Version: 1},
		{Version: 7, Status: "RUNNING", Data: []byte(`{"a":1}`)},
		{Version: 1 << 40, Counters: map[string]int64{"a": -1, "b": 0, "c": 1 << 62}},
		{Version: 2, Index: &store.IndexKey{Partition: "P\x00", Sort: ""}, Data: []byte{0}},
	}
	for _, it := range cases {
		got, err := decodeRecord(encodeRecord(it))
		require.NoError(t, err)
		require.Equal(t, it, got)
	}
}

func TestDecodeRecordRejectsCorruption(t *testing.T) {
	t.Parallel()
	good := encodeRecord(store.Item{Version: 3, Status: "S", Counters: map[string]int64{"n": 1}, Index: &store.IndexKey{Partition: "p", Sort: "s"}})
	cases := map[string][]byte{
		"empty":             nil,
		"unknown format":    append([]byte{9}, good[1:]...),
		"truncated":         good[:5],
		"bad index flag":    append(bytes.Clone(good[:len(good)-5]), 7),
		"huge count":        {recordFormat, 1, 0, 0xff, 0xff, 0xff, 0xff, 0x0f},
		"duplicate counter": {recordFormat, 1, 0, 2, 1, 'n', 2, 1, 'n', 2, 0},
	}
	for name, b := range cases {
		_, err := decodeRecord(b)
		require.ErrorIs(t, err, errCorrupt, name)
	}
}

func FuzzDecodeRecord(f *testing.F) {
	f.Add(encodeRecord(store.Item{Version: 3, Status: "S", Counters: map[string]int64{"n": 1, "m": -5}, Index: &store.IndexKey{Partition: "p", Sort: "s"}, Data: []byte("body")}))
	f.Add([]byte{recordFormat, 1, 0, 0, 0})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		it, err := decodeRecord(b)
		if err != nil {
			return
		}
		again, err := decodeRecord(encodeRecord(it))
		require.NoError(t, err)
		require.Equal(t, it, again)
	})
}

func TestKeyEncodingKeepsOrderAndRoundTrips(t *testing.T) {
	t.Parallel()
	// Tuples in ascending order, byte-wise component by component.
	tuples := [][]string{
		{"", "z"}, {"a", ""}, {"a", "\x00"}, {"a", "\x00\x00"}, {"a", "\x00\x01"}, {"a", "\x01"}, {"a", "b"},
		{"a\x00", ""}, {"a\x00", "b"}, {"a\x00\xff", "a"}, {"a\x01", "a"}, {"ab", ""}, {"\xff", "\xff"},
	}
	for i, tup := range tuples {
		k := joinKey(tup...)
		parts, err := splitKey(k)
		require.NoError(t, err)
		require.Equal(t, tup, parts)
		require.True(t, bytes.HasPrefix(k, partitionPrefix(tup[0])))
		if i > 0 {
			require.Negative(t, bytes.Compare(joinKey(tuples[i-1]...), k), "%q < %q", tuples[i-1], tup)
		}
	}
}

func TestPrefixEnd(t *testing.T) {
	t.Parallel()
	require.Equal(t, []byte("ac"), prefixEnd([]byte("ab")))
	require.Equal(t, []byte("b"), prefixEnd([]byte("a\xff\xff")))
	require.Nil(t, prefixEnd([]byte("\xff\xff")))
	require.Nil(t, prefixEnd(nil))
}

func FuzzKeyEncoding(f *testing.F) {
	f.Add("a", "b", "c", "d")
	f.Add("\x00", "\x00\x01", "\xff", "")
	f.Fuzz(func(t *testing.T, a, b, c, d string) {
		parts, err := splitKey(joinKey(a, b))
		require.NoError(t, err)
		require.Equal(t, []string{a, b}, parts)
		// Byte order of joined keys is tuple order.
		want := compareTuples([]string{a, b}, []string{c, d})
		require.Equal(t, want, bytes.Compare(joinKey(a, b), joinKey(c, d)), "%q vs %q", []string{a, b}, []string{c, d})
		// A component prefix is a key prefix, and only then.
		require.Equal(t, len(b) >= len(d) && b[:len(d)] == d,
			bytes.HasPrefix(joinKey(a, b), appendComponent(partitionPrefix(a), d)))
	})
}

func FuzzSplitKey(f *testing.F) {
	f.Add([]byte("a\x00\x01b"))
	f.Add([]byte("\x00\xff\x00"))
	f.Fuzz(func(t *testing.T, k []byte) {
		parts, err := splitKey(k)
		if err != nil {
			return
		}
		require.Equal(t, k, joinKey(parts...))
	})
}

func compareTuples(x, y []string) int {
	for i := range x {
		if x[i] != y[i] {
			if x[i] < y[i] {
				return -1
			}
			return 1
		}
	}
	return 0
}

func FuzzDecodeCursor(f *testing.F) {
	f.Add(cursor{Kind: queryCursor, Partition: "p", Sort: "s"}.encode())
	f.Add(cursor{Kind: indexCursor, Partition: "p", Sort: "s", PK: "a", SK: "b"}.encode())
	f.Add("!!")
	f.Fuzz(func(t *testing.T, s string) {
		c, err := decodeCursor(s)
		if err != nil {
			require.ErrorIs(t, err, store.ErrBadCursor)
			return
		}
		again, err := decodeCursor(c.encode())
		require.NoError(t, err)
		require.Equal(t, c, again)
		if _, err := queryCursorFor(s, c.Partition, store.Query{Prefix: c.Prefix, Descending: c.Descending}); err != nil {
			require.ErrorIs(t, err, store.ErrBadCursor)
		}
		if _, err := indexCursorFor(s, c.Partition); err != nil {
			require.ErrorIs(t, err, store.ErrBadCursor)
		}
	})
}
