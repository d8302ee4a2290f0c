package engine

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestJustBeforeSortsRightBeforeTheID: the key a range read of a page's
// task items starts after is less than the id and greater than every
// other id that sorts before it.
func TestJustBeforeSortsRightBeforeTheID(t *testing.T) {
	t.Parallel()
	ids := []string{"n1/create", "n1/kv/install", "n1/kv/start", "n10/create", "n1/", "join:all:3", "rollback:n1/delete", "a", "n1/kv/instal", "n1/kv/installz"}
	for _, id := range ids {
		before, ok := justBefore(id)
		require.True(t, ok, id)
		require.Less(t, before, id)
		for _, other := range ids {
			if other < id {
				require.Greater(t, before, other, "%q sorts between %q and %q", other, before, id)
			}
		}
	}
	for _, id := range []string{"", "n1/é", "n1/\x7f", "n1/ "} {
		_, ok := justBefore(id)
		require.False(t, ok, "%q: read one by one instead", id)
	}
}
