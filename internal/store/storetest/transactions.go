package storetest

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/store"
)

func testTransactAllOrNothing(t *testing.T, s store.Store) {
	a, b, c, d := key("tx", "a"), key("tx", "b"), key("tx", "c"), key("tx", "d")
	itemA := mustWrite(t, s, store.Put(store.Item{Key: a, Counters: map[string]int64{"n": 1}}, store.Condition{}))
	itemB := mustWrite(t, s, store.Put(store.Item{Key: b, Status: "RUNNING", Index: &store.IndexKey{Partition: "P", Sort: "b"}}, store.Condition{}))

	ops := []store.Op{
		store.Update(a, store.Condition{Version: 1}, store.Changes{Add: map[string]int64{"n": 1}}),                            // would apply
		store.Check(b, store.Condition{StatusIn: []string{"DONE"}}),                                                           // fails
		store.Put(store.Item{Key: c, Index: &store.IndexKey{Partition: "P", Sort: "c"}}, store.Condition{MustNotExist: true}), // would apply
		store.Delete(d, store.Condition{MustExist: true}),                                                                     // fails: d is absent
		store.Update(key("tx", "e"), store.Condition{}, store.Changes{}),                                                      // would apply
	}
	err := s.Transact(t.Context(), ops)
	require.ErrorIs(t, err, store.ErrConditionFailed)
	var te *store.TransactionError
	require.ErrorAs(t, err, &te)
	require.Len(t, te.Reasons, len(ops), "one reason per op, in order")
	for i, want := range []struct {
		fails   bool
		key     store.Key
		current *store.Item
	}{{false, a, nil}, {true, b, &itemB}, {false, c, nil}, {true, d, nil}, {false, key("tx", "e"), nil}} {
		if !want.fails {
			require.NoError(t, te.Reasons[i], "op %d would have applied", i)
			continue
		}
		requireConditionError(t, te.Reasons[i], want.key, want.current)
	}
	requireState(t, s, a, &itemA)
	requireState(t, s, b, &itemB)
	requireMissing(t, s, c)
	requireMissing(t, s, key("tx", "e"))
	awaitIndex(t, s, "P", []store.Key{b})
}

func testTransactApplies(t *testing.T, s store.Store) {
	a, b, c, d := key("tx", "a"), key("tx", "b"), key("tx", "c"), key("tx", "d")
	mustWrite(t, s, store.Put(store.Item{Key: a, Counters: map[string]int64{"n": 1}}, store.Condition{}))
	mustWrite(t, s, store.Put(store.Item{Key: b, Status: "RUNNING", Index: &store.IndexKey{Partition: "P", Sort: "b"}}, store.Condition{}))
	mustWrite(t, s, store.Update(b, store.Condition{}, store.Changes{}))
	mustWrite(t, s, store.Put(store.Item{Key: d, Data: []byte("gone soon")}, store.Condition{}))

	require.NoError(t, s.Transact(t.Context(), []store.Op{
		store.Update(a, store.Condition{Version: 1}, store.Changes{Add: map[string]int64{"n": 1}, Status: ptr("DONE")}),
		// A put with no condition over an existing item still bumps its version.
		store.Put(store.Item{Key: b, Status: "DONE"}, store.Condition{}),
		store.Put(store.Item{Key: c, Index: &store.IndexKey{Partition: "P", Sort: "c"}}, store.Condition{MustNotExist: true}),
		store.Delete(d, store.Condition{MustExist: true}),
		store.Check(key("tx", "nothing"), store.Condition{MustNotExist: true}),
	}))
	requireState(t, s, a, &store.Item{Key: a, Version: 2, Status: "DONE", Counters: map[string]int64{"n": 2}})
	requireState(t, s, b, &store.Item{Key: b, Version: 3, Status: "DONE"})
	requireState(t, s, c, &store.Item{Key: c, Version: 1, Index: &store.IndexKey{Partition: "P", Sort: "c"}})
	requireMissing(t, s, d)
	requireMissing(t, s, key("tx", "nothing"))
	awaitIndex(t, s, "P", []store.Key{c})
}

func testTransactChecks(t *testing.T, s store.Store) {
	k, other := key("chk", "k"), key("chk", "other")
	mustWrite(t, s, store.Put(store.Item{Key: k, Status: "ACTIVE", Counters: map[string]int64{"free": 3}}, store.Condition{}))
	cases := []struct {
		name  string
		check store.Condition
		holds bool
	}{
		{"always", store.Condition{}, true},
		{"exists", store.Condition{MustExist: true}, true},
		{"version", store.Condition{Version: 1}, true},
		{"stale version", store.Condition{Version: 2}, false},
		{"status", store.Condition{StatusIn: []string{"ACTIVE"}}, true},
		{"wrong status", store.Condition{StatusIn: []string{"DELETING"}}, false},
		{"counter floor", store.Condition{CountersAtLeast: map[string]int64{"free": 3}}, true},
		{"counter floor missed", store.Condition{CountersAtLeast: map[string]int64{"free": 4}}, false},
		{"must not exist", store.Condition{MustNotExist: true}, false},
	}
	for i, tc := range cases {
		before, _ := s.Get(t.Context(), other)
		err := s.Transact(t.Context(), []store.Op{
			store.Check(k, tc.check),
			store.Update(other, store.Condition{}, store.Changes{Add: map[string]int64{"n": 1}}),
		})
		if tc.holds {
			require.NoError(t, err, tc.name)
			require.Equal(t, before.Counter("n")+1, mustGet(t, s, other).Counter("n"), tc.name)
			continue
		}
		var te *store.TransactionError
		require.ErrorAs(t, err, &te, tc.name)
		current := mustGet(t, s, k)
		requireConditionError(t, te.Reasons[0], k, &current)
		require.NoError(t, te.Reasons[1], tc.name)
		require.Equal(t, before.Counter("n"), mustGet(t, s, other).Counter("n"), "%s (case %d)", tc.name, i)
	}
	// A transaction of checks alone writes nothing and succeeds when they hold.
	require.NoError(t, s.Transact(t.Context(), []store.Op{store.Check(k, store.Condition{}), store.Check(other, store.Condition{MustExist: true})}))
	require.NoError(t, s.Transact(t.Context(), []store.Op{store.Check(key("chk", "absent"), store.Condition{})}))
	require.Equal(t, int64(1), mustGet(t, s, k).Version)
}

func testTransactInvalid(t *testing.T, s store.Store) {
	k := key("inv", "k")
	tooMany := make([]store.Op, store.MaxTransactItems+1)
	for i := range tooMany {
		tooMany[i] = store.Put(store.Item{Key: key("inv", fmt.Sprint(i))}, store.Condition{})
	}
	cases := []struct {
		name string
		ops  []store.Op
	}{
		{"empty", nil},
		{"over the limit", tooMany},
		{"same key twice", []store.Op{
			store.Put(store.Item{Key: k}, store.Condition{}),
			store.Update(key("inv", "other"), store.Condition{}, store.Changes{}),
			store.Check(k, store.Condition{}),
		}},
		{"invalid op", []store.Op{store.Put(store.Item{Key: k}, store.Condition{}), store.Update(key("inv", "x"), store.Condition{}, store.Changes{Add: map[string]int64{"bad name": 1}})}},
		{"item too big", []store.Op{store.Put(store.Item{Key: k}, store.Condition{}), store.Put(store.Item{Key: key("inv", "x"), Data: make([]byte, 410<<10)}, store.Condition{})}},
		{"over 4 MB in all", bigItems(k, 11, 380<<10)},
	}
	for _, tc := range cases {
		err := s.Transact(t.Context(), tc.ops)
		require.ErrorIs(t, err, store.ErrInvalidOp, tc.name)
		require.False(t, errors.Is(err, store.ErrConditionFailed), tc.name)
	}
	requireMissing(t, s, k)
	requireMissing(t, s, key("inv", "0"))
}

// bigItems returns n puts of items with size bytes of data each, the first
// on k.
func bigItems(k store.Key, n, size int) []store.Op {
	ops := make([]store.Op, n)
	for i := range ops {
		ik := key("inv", fmt.Sprintf("big%d", i))
		if i == 0 {
			ik = k
		}
		ops[i] = store.Put(store.Item{Key: ik, Data: make([]byte, size)}, store.Condition{})
	}
	return ops
}

func testTransactMaxBytes(t *testing.T, s store.Store) {
	// Ten items of 380 KiB, 3.7 MiB in all: within DynamoDB's 4 MB.
	ops := bigItems(key("bytes", "k"), 10, 380<<10)
	for i := range ops {
		ops[i].Key.PK, ops[i].Item.Key.PK = "bytes", "bytes"
	}
	require.LessOrEqual(t, store.TransactSize(ops), store.MaxTransactBytes)
	require.NoError(t, s.Transact(t.Context(), ops))
	require.Len(t, queryAll(t, s, "bytes", store.Query{}), 10)
}

func testTransactMaxItems(t *testing.T, s store.Store) {
	ops := make([]store.Op, store.MaxTransactItems)
	for i := range ops {
		k := key(fmt.Sprintf("max#%d", i%7), fmt.Sprintf("%03d", i))
		switch i % 3 {
		case 0:
			ops[i] = store.Put(store.Item{Key: k, Data: []byte(fmt.Sprint(i))}, store.Condition{MustNotExist: true})
		case 1:
			ops[i] = store.Update(k, store.Condition{}, store.Changes{Add: map[string]int64{"n": int64(i)}})
		default:
			ops[i] = store.Check(k, store.Condition{MustNotExist: true})
		}
	}
	require.NoError(t, s.Transact(t.Context(), ops))
	written := 0
	for p := range 7 {
		written += len(queryAll(t, s, fmt.Sprintf("max#%d", p), store.Query{}))
	}
	require.Equal(t, 67, written, "34 puts and 33 updates")

	// The same transaction again fails on every put, each one reported.
	err := s.Transact(t.Context(), ops)
	var te *store.TransactionError
	require.ErrorAs(t, err, &te)
	require.Len(t, te.Reasons, len(ops))
	for i, r := range te.Reasons {
		if i%3 != 0 {
			require.NoError(t, r, "op %d", i)
		} else {
			require.ErrorIs(t, r, store.ErrConditionFailed, "op %d", i)
		}
	}
}
