package store

import (
	"context"
	"errors"
)

// BatchGetter is a Store that reads many items in few round trips
// (DynamoDB's BatchGetItem, 100 keys a call). It is optional: GetMany
// reads one item at a time from a store without it, which costs an
// embedded store nothing.
type BatchGetter interface {
	// GetBatch returns the items at keys that exist, in no particular
	// order; a missing key is left out, not an error. Reads are strongly
	// consistent, as Get's are.
	GetBatch(ctx context.Context, keys []Key) ([]Item, error)
}

// GetMany reads the items at keys (missing ones left out, any order),
// through s's GetBatch when it has one.
func GetMany(ctx context.Context, s Store, keys []Key) ([]Item, error) {
	for _, k := range keys {
		if err := CheckKey(k); err != nil {
			return nil, err
		}
	}
	if b, ok := s.(BatchGetter); ok {
		return b.GetBatch(ctx, keys)
	}
	out := make([]Item, 0, len(keys))
	for _, k := range keys {
		it, err := s.Get(ctx, k)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, it)
	}
	return out, nil
}
