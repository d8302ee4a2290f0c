package storetest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/store"
)

// Run runs the conformance suite. newStore must return a new empty store for
// each call and arrange its cleanup with t.Cleanup.
func Run(t *testing.T, newStore func(t *testing.T) store.Store) {
	tests := []struct {
		name string
		run  func(t *testing.T, s store.Store)
	}{
		{"GetMissing", testGetMissing},
		{"GetMany", testGetMany},
		{"PutGetRoundTrip", testPutGetRoundTrip},
		{"VersionsBumpOnEveryWrite", testVersionsBumpOnEveryWrite},
		{"Conditions", testConditions},
		{"EmptyStatusCondition", testEmptyStatusCondition},
		{"UpdateChanges", testUpdateChanges},
		{"UpdateCreatesMissingItem", testUpdateCreatesMissingItem},
		{"Delete", testDelete},
		{"Counters", testCounters},
		{"InvalidOps", testInvalidOps},
		{"ItemSizeLimit", testItemSizeLimit},
		{"Query", testQuery},
		{"QueryPagination", testQueryPagination},
		{"QueryDefaultPageSize", testQueryDefaultPageSize},
		{"QueryResumesAfterDeletedCursorItem", testQueryResumesAfterDeletedCursorItem},
		{"QueryBadCursor", testQueryBadCursor},
		{"QueryKeysWithNUL", testQueryKeysWithNUL},
		{"QueryAfter", testQueryAfter},
		{"Index", testIndex},
		{"IndexPagination", testIndexPagination},
		{"IndexTiesPaginate", testIndexTiesPaginate},
		{"IndexBadCursor", testIndexBadCursor},
		{"TransactAllOrNothing", testTransactAllOrNothing},
		{"TransactApplies", testTransactApplies},
		{"TransactChecks", testTransactChecks},
		{"TransactInvalid", testTransactInvalid},
		{"TransactMaxItems", testTransactMaxItems},
		{"TransactMaxBytes", testTransactMaxBytes},
		{"TransactAppliedThenRetried", testTransactAppliedThenRetried},
		{"WriteAppliedThenRetried", testWriteAppliedThenRetried},
		{"ConcurrentVersionedUpdates", testConcurrentVersionedUpdates},
		{"ConcurrentCounterAdds", testConcurrentCounterAdds},
		{"ConcurrentPuts", testConcurrentPuts},
		{"ConcurrentCreate", testConcurrentCreate},
		{"ConcurrentReservations", testConcurrentReservations},
		{"ConcurrentTransfers", testConcurrentTransfers},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.run(t, newStore(t))
		})
	}
}

func key(pk, sk string) store.Key { return store.Key{PK: pk, SK: sk} }

func ptr[T any](v T) *T { return &v }

func mustWrite(t *testing.T, s store.Store, op store.Op) store.Item {
	t.Helper()
	it, err := s.Write(t.Context(), op)
	require.NoError(t, err, "%v %s", op.Kind, op.Key)
	return it
}

func mustGet(t *testing.T, s store.Store, k store.Key) store.Item {
	t.Helper()
	it, err := s.Get(t.Context(), k)
	require.NoError(t, err, "get %s", k)
	return it
}

func requireMissing(t *testing.T, s store.Store, k store.Key) {
	t.Helper()
	_, err := s.Get(t.Context(), k)
	require.ErrorIs(t, err, store.ErrNotFound, "get %s", k)
}

// requireState checks that k holds want, or nothing when want is nil.
func requireState(t *testing.T, s store.Store, k store.Key, want *store.Item) {
	t.Helper()
	if want == nil {
		requireMissing(t, s, k)
		return
	}
	require.Equal(t, *want, mustGet(t, s, k))
}

// requireConditionError checks err is a *ConditionError on k that reports
// current as the item before the write.
func requireConditionError(t *testing.T, err error, k store.Key, current *store.Item) {
	t.Helper()
	require.ErrorIs(t, err, store.ErrConditionFailed)
	var ce *store.ConditionError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, k, ce.Key)
	require.Equal(t, current, ce.Current)
}

func keysOf(items []store.Item) []store.Key {
	keys := make([]store.Key, len(items))
	for i, it := range items {
		keys[i] = it.Key
	}
	return keys
}

// pager fetches one page given a cursor.
type pager func(cursor string) (store.Page, error)

// collect follows cursors to the end, checking that no page exceeds limit and
// that only the last page has no Next.
func collect(t *testing.T, limit int, page pager) (items []store.Item, pages int) {
	t.Helper()
	cursor := ""
	for {
		p, err := page(cursor)
		require.NoError(t, err)
		pages++
		require.LessOrEqual(t, len(p.Items), limit)
		items = append(items, p.Items...)
		if p.Next == "" {
			return items, pages
		}
		require.Len(t, p.Items, limit, "a page with a Next must be full")
		require.Less(t, pages, 10000, "cursor loop")
		cursor = p.Next
	}
}

func queryAll(t *testing.T, s store.Store, pk string, q store.Query) []store.Item {
	t.Helper()
	items, _ := collect(t, effectiveLimit(q.Limit), func(c string) (store.Page, error) {
		q.Cursor = c
		return s.Query(t.Context(), pk, q)
	})
	return items
}

func indexAll(t *testing.T, s store.Store, partition string, q store.IndexQuery) []store.Item {
	t.Helper()
	items, _ := collect(t, effectiveLimit(q.Limit), func(c string) (store.Page, error) {
		q.Cursor = c
		return s.QueryIndex(t.Context(), partition, q)
	})
	return items
}

func effectiveLimit(limit int) int {
	if limit == 0 {
		return store.DefaultPageSize
	}
	return limit
}

// awaitIndex polls partition until it holds exactly want (in order), since
// an index may lag its items. On the local backends the first read matches.
func awaitIndex(t *testing.T, s store.Store, partition string, want []store.Key) {
	t.Helper()
	var got []store.Key
	for range 50 {
		got = keysOf(indexAll(t, s, partition, store.IndexQuery{}))
		if fmt.Sprint(got) == fmt.Sprint(want) {
			return
		}
		select {
		case <-t.Context().Done():
			t.Fatal(t.Context().Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
	require.Equal(t, want, got, "index partition %q never settled", partition)
}

// retryOnCondition runs attempt until it does not fail on a condition.
func retryOnCondition(ctx context.Context, attempt func() error) error {
	for {
		err := attempt()
		if !errors.Is(err, store.ErrConditionFailed) {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
}
