package metrics

import (
	"context"
	"errors"

	"github.com/heddle-io/heddle/internal/store"
)

// Store counts the calls made to a store and the conflicts among them.
type Store struct {
	store.Store
	obs Observer
}

// CountStore wraps s so that every call reaches obs.
func CountStore(s store.Store, obs Observer) *Store { return &Store{Store: s, obs: OrNop(obs)} }

func (s *Store) Get(ctx context.Context, k store.Key) (store.Item, error) {
	s.obs.Store("get", false)
	return s.Store.Get(ctx, k)
}

func (s *Store) Write(ctx context.Context, op store.Op) (store.Item, error) {
	it, err := s.Store.Write(ctx, op)
	s.obs.Store("write", errors.Is(err, store.ErrConditionFailed))
	return it, err
}

func (s *Store) Transact(ctx context.Context, ops []store.Op) error {
	err := s.Store.Transact(ctx, ops)
	s.obs.Store("transact", errors.Is(err, store.ErrConditionFailed))
	return err
}

func (s *Store) Query(ctx context.Context, pk string, q store.Query) (store.Page, error) {
	s.obs.Store("query", false)
	return s.Store.Query(ctx, pk, q)
}

func (s *Store) QueryIndex(ctx context.Context, partition string, q store.IndexQuery) (store.Page, error) {
	s.obs.Store("query_index", false)
	return s.Store.QueryIndex(ctx, partition, q)
}

// GetBatch keeps the wrapped store's batch reads (store.GetMany finds a
// BatchGetter only on the outermost store, so without this method every
// GetMany through the counted store would read one key at a time). It
// counts one batch_get per call of a store that batches, else one get per
// key, as the calls it makes.
func (s *Store) GetBatch(ctx context.Context, keys []store.Key) ([]store.Item, error) {
	if _, ok := s.Store.(store.BatchGetter); ok {
		s.obs.Store("batch_get", false)
	} else {
		for range keys {
			s.obs.Store("get", false)
		}
	}
	return store.GetMany(ctx, s.Store, keys)
}

var (
	_ store.Store       = (*Store)(nil)
	_ store.BatchGetter = (*Store)(nil)
)
