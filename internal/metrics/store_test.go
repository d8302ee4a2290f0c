package metrics

import (
	"context"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/store"
	"github.com/heddle-io/heddle/internal/store/boltstore"
)

// storeCalls records the Store calls an observer sees.
type storeCalls struct {
	Nop
	mu    sync.Mutex
	calls []string
}

func (o *storeCalls) Store(call string, _ bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.calls = append(o.calls, call)
}

// batching is a store that batches its reads, and counts its batches.
type batching struct {
	store.Store
	batches int
}

func (b *batching) GetBatch(ctx context.Context, keys []store.Key) ([]store.Item, error) {
	b.batches++
	var out []store.Item
	for _, k := range keys {
		if it, err := b.Get(ctx, k); err == nil {
			out = append(out, it)
		}
	}
	return out, nil
}

// TestCountStoreKeepsBatchReads: store.GetMany through the counted store
// reaches the wrapped store's GetBatch in one call (counted as one
// batch_get), and reads key by key (one get each) from a store without it.
func TestCountStoreKeepsBatchReads(t *testing.T) {
	t.Parallel()
	db, err := boltstore.Open(filepath.Join(t.TempDir(), "db"), boltstore.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	keys := []store.Key{{PK: "P", SK: "a"}, {PK: "P", SK: "b"}, {PK: "P", SK: "missing"}}
	for _, k := range keys[:2] {
		_, err := db.Write(t.Context(), store.Put(store.Item{Key: k, Data: []byte(`{}`)}, store.Condition{}))
		require.NoError(t, err)
	}

	inner := &batching{Store: db}
	obs := &storeCalls{}
	items, err := store.GetMany(t.Context(), CountStore(inner, obs), keys)
	require.NoError(t, err)
	require.Len(t, items, 2)
	require.Equal(t, 1, inner.batches)
	require.Equal(t, []string{"batch_get"}, obs.calls)

	obs = &storeCalls{}
	items, err = store.GetMany(t.Context(), CountStore(db, obs), keys)
	require.NoError(t, err)
	require.Len(t, items, 2)
	require.Equal(t, []string{"get", "get", "get"}, obs.calls)
}
