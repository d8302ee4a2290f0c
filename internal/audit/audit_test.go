package audit

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/store/boltstore"
)

func TestPruneDropsOnlyWhatIsOlderThanTheCutoff(t *testing.T) {
	t.Parallel()
	db, err := boltstore.Open(filepath.Join(t.TempDir(), "heddle.db"), boltstore.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	l := New(db)
	ctx := context.Background()
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 5 {
		for _, tenant := range []string{"acme", "globex"} {
			require.NoError(t, l.Append(ctx, Record{At: t0.Add(time.Duration(i) * 24 * time.Hour), Tenant: tenant, RequestID: fmt.Sprint("r", i)}))
		}
	}
	n, err := l.Prune(ctx, "acme", t0.Add(3*24*time.Hour))
	require.NoError(t, err)
	require.Equal(t, 3, n)
	left, _, err := l.List(ctx, "acme", 10, "")
	require.NoError(t, err)
	require.Len(t, left, 2)
	require.Equal(t, "r4", left[0].RequestID, "newest first")
	other, _, err := l.List(ctx, "globex", 10, "")
	require.NoError(t, err)
	require.Len(t, other, 5, "another tenant's records are its own")
	n, err = l.Prune(ctx, "acme", t0.Add(3*24*time.Hour))
	require.NoError(t, err)
	require.Zero(t, n, "pruning again finds nothing")
}
