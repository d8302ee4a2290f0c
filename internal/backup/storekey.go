package backup

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/heddle-io/heddle/internal/secrets"
	"github.com/heddle-io/heddle/internal/store"
	"github.com/heddle-io/heddle/internal/store/boltstore"
)

// KeyItem records in the store the id of the master key that seals its
// secrets (the id fingerprints the key; it is not secret). The server
// writes it at start, so that a store and a key that do not belong together
// are told apart by one read instead of a failure at the first cluster
// operation.
var KeyItem = store.Key{PK: "SETTINGS", SK: "master-key"}

type keyRecord struct {
	ID string `json:"id"`
}

// ErrWrongKey: a store's secrets are sealed by a master key other than the
// one offered with it.
var ErrWrongKey = errors.New("the store's secrets are sealed by another master key")

// StoreKeyIDs says which master keys db's secrets are sealed by: the
// recorded one, or, in a store written before the record existed, those
// its sealed values name (one scan of the store).
func StoreKeyIDs(ctx context.Context, db *boltstore.Store) ([]string, error) {
	it, err := db.Get(ctx, KeyItem)
	if err == nil {
		var r keyRecord
		if err := json.Unmarshal(it.Data, &r); err == nil && r.ID != "" {
			return []string{r.ID}, nil
		}
	} else if !errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("reading the store's master key record: %w", err)
	}
	seen := map[string]bool{}
	err = db.ScanRecords(ctx, func(rec []byte) error {
		secrets.SealedKeyIDs(rec, func(id string) { seen[id] = true })
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading the store's sealed values: %w", err)
	}
	ids := make([]string, 0, len(seen))
	for id := range seen {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids, nil
}

// CheckStoreKey returns ErrWrongKey, naming both keys, when db holds
// secrets sealed by a key other than keyID. A store with no secrets yet
// fits any key.
func CheckStoreKey(ctx context.Context, db *boltstore.Store, keyID string) error {
	ids, err := StoreKeyIDs(ctx, db)
	if err != nil {
		return err
	}
	var other []string
	for _, id := range ids {
		if id != keyID {
			other = append(other, id)
		}
	}
	if len(other) > 0 {
		return fmt.Errorf("%w: the store is sealed by master key %s, the key offered with it is %s", ErrWrongKey, strings.Join(other, ", "), keyID)
	}
	return nil
}

// RecordStoreKey checks db against keyID (CheckStoreKey) and records keyID
// in it when no key is recorded yet.
func RecordStoreKey(ctx context.Context, db *boltstore.Store, keyID string) error {
	if err := CheckStoreKey(ctx, db, keyID); err != nil {
		return err
	}
	data, err := json.Marshal(keyRecord{ID: keyID})
	if err != nil {
		return err
	}
	_, err = db.Write(ctx, store.Put(store.Item{Key: KeyItem, Data: data}, store.Condition{MustNotExist: true}))
	if err != nil && !errors.Is(err, store.ErrConditionFailed) {
		return fmt.Errorf("recording the store's master key: %w", err)
	}
	return nil
}
