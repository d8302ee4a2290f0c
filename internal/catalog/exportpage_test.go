package catalog

import (
	"errors"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/store"
)

// FuzzParseExportCursor: any string is either refused as a bad cursor or
// read as a revision, a kind that exists and a name, which print back to
// the same cursor.
func FuzzParseExportCursor(f *testing.F) {
	for _, seed := range []string{"", "3/0/", "12/4/web", "0/6/a/b", "-1/0/x", "1/7/x", "x/0/y", "1/0", "99999999999999999999/0/a"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, cursor string) {
		rev, kind, after, err := parseExportCursor(cursor)
		if err != nil {
			require.True(t, errors.Is(err, store.ErrBadCursor), "%v", err)
			return
		}
		if cursor == "" {
			return
		}
		require.GreaterOrEqual(t, rev, int64(0))
		require.Less(t, kind, len(domain.Kinds))
		require.GreaterOrEqual(t, kind, 0)
		again, _, _, err := parseExportCursor(strconv.FormatInt(rev, 10) + "/" + strconv.Itoa(kind) + "/" + after)
		require.NoError(t, err)
		require.Equal(t, rev, again)
	})
}
