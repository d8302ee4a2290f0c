package storetest

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/store"
)

// testGetMany: store.GetMany returns exactly the items that exist, whole,
// past one BatchGetItem's 100 keys, through the Counting wrapper too; a
// bad key changes nothing and is refused.
func testGetMany(t *testing.T, s store.Store) {
	ctx := t.Context()
	var keys []store.Key
	for i := range 130 {
		k := key("NODES#c1", fmt.Sprintf("c1-%d", 1000+i))
		keys = append(keys, k)
		if i%3 == 0 {
			continue // every third one missing
		}
		_, err := s.Write(ctx, store.Put(store.Item{Key: k, Status: "ACTIVE", Counters: map[string]int64{"n": int64(i)}, Data: []byte(fmt.Sprintf(`{"id":%q}`, k.SK))}, store.Condition{}))
		require.NoError(t, err)
	}
	for _, from := range []store.Store{s, store.NewCounting(s)} {
		items, err := store.GetMany(ctx, from, keys)
		require.NoError(t, err)
		require.Len(t, items, 86)
		var got []string
		for _, it := range items {
			want, err := s.Get(ctx, it.Key)
			require.NoError(t, err)
			require.Equal(t, want, it, "an item read in a batch is the item Get reads")
			got = append(got, it.SK)
		}
		slices.Sort(got)
		require.Equal(t, len(got), len(slices.Compact(got)), "no item twice")
	}
	none, err := store.GetMany(ctx, s, nil)
	require.NoError(t, err)
	require.Empty(t, none)
	_, err = store.GetMany(ctx, s, []store.Key{keys[1], key("", "x")})
	require.ErrorIs(t, err, store.ErrInvalidOp)
}
