package storetest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/store"
)

func testGetMissing(t *testing.T, s store.Store) {
	_, err := s.Get(t.Context(), key("nobody", "nothing"))
	require.ErrorIs(t, err, store.ErrNotFound)

	_, err = s.Get(t.Context(), key("", "x"))
	require.ErrorIs(t, err, store.ErrInvalidOp)
}

func testPutGetRoundTrip(t *testing.T, s store.Store) {
	k := key("CLUSTER#c1", "META")
	in := store.Item{
		Key:      k,
		Version:  99, // ignored: the store sets versions
		Status:   "ACTIVE",
		Counters: map[string]int64{"nodes": 40, "pending": 0, "debt": -3},
		Index:    &store.IndexKey{Partition: "LEASE", Sort: "000001700000000"},
		Data:     []byte(`{"name":"c1"}`),
	}
	written := mustWrite(t, s, store.Put(in, store.Condition{MustNotExist: true}))
	want := in
	want.Version = 1
	require.Equal(t, want, written)
	require.Equal(t, want, mustGet(t, s, k))

	// A put replaces the whole item: what the new one lacks is gone.
	bare := store.Item{Key: k, Data: []byte(`{}`)}
	written = mustWrite(t, s, store.Put(bare, store.Condition{}))
	want = bare
	want.Version = 2
	require.Equal(t, want, written)
	require.Equal(t, want, mustGet(t, s, k))

	// An empty body reads back as nil.
	written = mustWrite(t, s, store.Put(store.Item{Key: k, Data: []byte{}}, store.Condition{}))
	require.Nil(t, written.Data)
	require.Nil(t, mustGet(t, s, k).Data)
}

func testVersionsBumpOnEveryWrite(t *testing.T, s store.Store) {
	k := key("v", "item")
	steps := []struct {
		name string
		op   store.Op
		want int64
	}{
		{"put creates at 1", store.Put(store.Item{Key: k}, store.Condition{}), 1},
		{"empty update", store.Update(k, store.Condition{}, store.Changes{}), 2},
		{"counter add", store.Update(k, store.Condition{}, store.Changes{Add: map[string]int64{"n": 1}}), 3},
		{"counter set", store.Update(k, store.Condition{}, store.Changes{Set: map[string]int64{"n": 7}}), 4},
		{"status", store.Update(k, store.Condition{Version: 4}, store.Changes{Status: ptr("X")}), 5},
		{"put replaces", store.Put(store.Item{Key: k, Data: []byte("d")}, store.Condition{Version: 5}), 6},
	}
	for _, step := range steps {
		it := mustWrite(t, s, step.op)
		require.Equal(t, step.want, it.Version, step.name)
		require.Equal(t, step.want, mustGet(t, s, k).Version, step.name)
	}
	deleted := mustWrite(t, s, store.Delete(k, store.Condition{Version: 6}))
	require.Equal(t, store.Item{}, deleted)
	it := mustWrite(t, s, store.Put(store.Item{Key: k}, store.Condition{MustNotExist: true}))
	require.Equal(t, int64(1), it.Version, "a deleted item starts again at 1")
}

// testConditions applies every kind of condition, to an absent item and to
// a present one, through each kind of write, and checks the outcome against
// an expectation written out by hand.
func testConditions(t *testing.T, s store.Store) {
	present := func(k store.Key) store.Item {
		return store.Item{Key: k, Version: 2, Status: "RUNNING", Counters: map[string]int64{"slots": 5}, Data: []byte("before")}
	}
	cases := []struct {
		name                string
		cond                store.Condition
		onAbsent, onPresent bool
	}{
		{"none", store.Condition{}, true, true},
		{"must exist", store.Condition{MustExist: true}, false, true},
		{"must not exist", store.Condition{MustNotExist: true}, true, false},
		{"version matches", store.Condition{Version: 2}, false, true},
		{"version stale", store.Condition{Version: 1}, false, false},
		{"status in set", store.Condition{StatusIn: []string{"READY", "RUNNING"}}, false, true},
		{"status not in set", store.Condition{StatusIn: []string{"DONE"}}, false, false},
		{"empty status wanted", store.Condition{StatusIn: []string{""}}, false, false},
		{"counter at floor", store.Condition{CountersAtLeast: map[string]int64{"slots": 5}}, false, true},
		{"counter below floor", store.Condition{CountersAtLeast: map[string]int64{"slots": 6}}, false, false},
		{"missing counter counts as zero", store.Condition{CountersAtLeast: map[string]int64{"other": 0}}, false, true},
		{"missing counter below floor", store.Condition{CountersAtLeast: map[string]int64{"other": 1}}, false, false},
		{"negative floor", store.Condition{CountersAtLeast: map[string]int64{"other": -1}}, false, true},
		{"all parts hold", store.Condition{MustExist: true, Version: 2, StatusIn: []string{"RUNNING"}, CountersAtLeast: map[string]int64{"slots": 1, "other": 0}}, false, true},
		{"one part fails", store.Condition{Version: 2, StatusIn: []string{"RUNNING"}, CountersAtLeast: map[string]int64{"slots": 9}}, false, false},
	}
	kinds := []store.OpKind{store.OpPut, store.OpUpdate, store.OpDelete}
	for ci, tc := range cases {
		for _, exists := range []bool{false, true} {
			for _, kind := range kinds {
				k := key(fmt.Sprintf("cond#%d", ci), fmt.Sprintf("%v#%v", kind, exists))
				var before *store.Item
				if exists {
					p := present(k)
					mustWrite(t, s, store.Put(store.Item{Key: k, Status: p.Status, Counters: p.Counters, Data: p.Data}, store.Condition{}))
					mustWrite(t, s, store.Update(k, store.Condition{}, store.Changes{}))
					before = &p
					requireState(t, s, k, before)
				}
				var op store.Op
				var after *store.Item
				switch kind {
				case store.OpPut:
					op = store.Put(store.Item{Key: k, Status: "NEW", Data: []byte("after")}, tc.cond)
					after = &store.Item{Key: k, Version: 1, Status: "NEW", Data: []byte("after")}
					if before != nil {
						after.Version = before.Version + 1
					}
				case store.OpUpdate:
					op = store.Update(k, tc.cond, store.Changes{Add: map[string]int64{"slots": 1}, Data: []byte("after")})
					after = &store.Item{Key: k, Version: 1, Counters: map[string]int64{"slots": 1}, Data: []byte("after")}
					if before != nil {
						after = &store.Item{Key: k, Version: 3, Status: "RUNNING", Counters: map[string]int64{"slots": 6}, Data: []byte("after")}
					}
				case store.OpDelete:
					op = store.Delete(k, tc.cond)
				}
				want := tc.onAbsent
				if exists {
					want = tc.onPresent
				}
				written, err := s.Write(t.Context(), op)
				what := fmt.Sprintf("%s: %v on %s item", tc.name, kind, map[bool]string{false: "an absent", true: "a present"}[exists])
				if !want {
					require.Error(t, err, what)
					requireConditionError(t, err, k, before)
					requireState(t, s, k, before)
					continue
				}
				require.NoError(t, err, what)
				if kind == store.OpDelete {
					require.Equal(t, store.Item{}, written, what)
				} else {
					require.Equal(t, *after, written, what)
				}
				requireState(t, s, k, after)
			}
		}
	}
}

func testEmptyStatusCondition(t *testing.T, s store.Store) {
	k := key("status", "none")
	mustWrite(t, s, store.Put(store.Item{Key: k}, store.Condition{}))

	_, err := s.Write(t.Context(), store.Update(k, store.Condition{StatusIn: []string{"READY"}}, store.Changes{}))
	requireConditionError(t, err, k, &store.Item{Key: k, Version: 1})

	it := mustWrite(t, s, store.Update(k, store.Condition{StatusIn: []string{"", "READY"}}, store.Changes{Status: ptr("READY")}))
	require.Equal(t, "READY", it.Status)

	// Setting the empty status clears it, and it then matches "" again.
	it = mustWrite(t, s, store.Update(k, store.Condition{StatusIn: []string{"READY"}}, store.Changes{Status: ptr("")}))
	require.Equal(t, store.Item{Key: k, Version: 3}, it)
	mustWrite(t, s, store.Update(k, store.Condition{StatusIn: []string{""}}, store.Changes{}))
}

func testUpdateChanges(t *testing.T, s store.Store) {
	k := key("upd", "item")
	mustWrite(t, s, store.Put(store.Item{
		Key: k, Status: "A", Counters: map[string]int64{"x": 1, "y": 2},
		Index: &store.IndexKey{Partition: "P", Sort: "1"}, Data: []byte("body"),
	}, store.Condition{}))

	steps := []struct {
		name string
		ch   store.Changes
		want store.Item
	}{
		{
			"nothing changes but the version", store.Changes{},
			store.Item{Key: k, Version: 2, Status: "A", Counters: map[string]int64{"x": 1, "y": 2}, Index: &store.IndexKey{Partition: "P", Sort: "1"}, Data: []byte("body")},
		},
		{
			"body and status", store.Changes{Data: []byte("new"), Status: ptr("B")},
			store.Item{Key: k, Version: 3, Status: "B", Counters: map[string]int64{"x": 1, "y": 2}, Index: &store.IndexKey{Partition: "P", Sort: "1"}, Data: []byte("new")},
		},
		{
			"add to existing, missing and with negative deltas; set", store.Changes{Add: map[string]int64{"x": 10, "z": -4}, Set: map[string]int64{"y": 0, "w": 9}},
			store.Item{Key: k, Version: 4, Status: "B", Counters: map[string]int64{"x": 11, "y": 0, "z": -4, "w": 9}, Index: &store.IndexKey{Partition: "P", Sort: "1"}, Data: []byte("new")},
		},
		{
			"move the index entry", store.Changes{Index: &store.IndexKey{Partition: "Q", Sort: "2"}},
			store.Item{Key: k, Version: 5, Status: "B", Counters: map[string]int64{"x": 11, "y": 0, "z": -4, "w": 9}, Index: &store.IndexKey{Partition: "Q", Sort: "2"}, Data: []byte("new")},
		},
		{
			"clear the index entry and the body", store.Changes{ClearIndex: true, Data: []byte{}},
			store.Item{Key: k, Version: 6, Status: "B", Counters: map[string]int64{"x": 11, "y": 0, "z": -4, "w": 9}},
		},
	}
	for _, step := range steps {
		it := mustWrite(t, s, store.Update(k, store.Condition{Version: step.want.Version - 1}, step.ch))
		require.Equal(t, step.want, it, step.name)
		require.Equal(t, step.want, mustGet(t, s, k), step.name)
	}
	awaitIndex(t, s, "P", nil)
	awaitIndex(t, s, "Q", nil)
}

func testUpdateCreatesMissingItem(t *testing.T, s store.Store) {
	k := key("upd", "new")
	_, err := s.Write(t.Context(), store.Update(k, store.Condition{MustExist: true}, store.Changes{Data: []byte("x")}))
	requireConditionError(t, err, k, nil)
	requireMissing(t, s, k)

	it := mustWrite(t, s, store.Update(k, store.Condition{MustNotExist: true}, store.Changes{
		Status: ptr("READY"), Add: map[string]int64{"n": 2}, Index: &store.IndexKey{Partition: "P", Sort: "s"},
	}))
	want := store.Item{Key: k, Version: 1, Status: "READY", Counters: map[string]int64{"n": 2}, Index: &store.IndexKey{Partition: "P", Sort: "s"}}
	require.Equal(t, want, it)
	require.Equal(t, want, mustGet(t, s, k))
	awaitIndex(t, s, "P", []store.Key{k})
}

func testDelete(t *testing.T, s store.Store) {
	k := key("del", "item")
	it := mustWrite(t, s, store.Delete(k, store.Condition{}))
	require.Equal(t, store.Item{}, it, "deleting a missing item succeeds")

	_, err := s.Write(t.Context(), store.Delete(k, store.Condition{MustExist: true}))
	requireConditionError(t, err, k, nil)

	mustWrite(t, s, store.Put(store.Item{Key: k, Index: &store.IndexKey{Partition: "P", Sort: "1"}}, store.Condition{}))
	awaitIndex(t, s, "P", []store.Key{k})
	it = mustWrite(t, s, store.Delete(k, store.Condition{MustExist: true}))
	require.Equal(t, store.Item{}, it)
	requireMissing(t, s, k)
	awaitIndex(t, s, "P", nil)
}

func testCounters(t *testing.T, s store.Store) {
	k := key("quota", "tenant")
	mustWrite(t, s, store.Update(k, store.Condition{}, store.Changes{Set: map[string]int64{"clusters": 0, "free": 2}}))

	// Take a slot only while one is free: the floor condition makes the
	// counter a quota that never goes below zero.
	take := store.Update(k, store.Condition{CountersAtLeast: map[string]int64{"free": 1}}, store.Changes{Add: map[string]int64{"free": -1, "clusters": 1}})
	mustWrite(t, s, take)
	it := mustWrite(t, s, take)
	require.Equal(t, int64(0), it.Counter("free"))
	require.Equal(t, int64(2), it.Counter("clusters"))
	require.Equal(t, int64(0), it.Counter("absent"))

	before := mustGet(t, s, k)
	_, err := s.Write(t.Context(), take)
	requireConditionError(t, err, k, &before)
	requireState(t, s, k, &before)
}

func testInvalidOps(t *testing.T, s store.Store) {
	k := key("inv", "item")
	long := func(n int) string { return string(make([]byte, n)) + "x" }
	cases := []struct {
		name string
		op   store.Op
	}{
		{"empty partition key", store.Put(store.Item{Key: key("", "x")}, store.Condition{})},
		{"empty sort key", store.Update(key("x", ""), store.Condition{}, store.Changes{})},
		{"partition key over 2048 bytes", store.Put(store.Item{Key: key(long(2048), "x")}, store.Condition{})},
		{"sort key over 1024 bytes", store.Delete(key("x", long(1024)), store.Condition{})},
		{"unknown kind", store.Op{Kind: 42, Key: k}},
		{"check outside a transaction", store.Check(k, store.Condition{})},
		{"put key differs from item key", store.Op{Kind: store.OpPut, Key: k, Item: store.Item{Key: key("inv", "other")}}},
		{"must exist and must not", store.Delete(k, store.Condition{MustExist: true, MustNotExist: true})},
		{"bad counter name in put", store.Put(store.Item{Key: k, Counters: map[string]int64{"has space": 1}}, store.Condition{})},
		{"empty counter name in add", store.Update(k, store.Condition{}, store.Changes{Add: map[string]int64{"": 1}})},
		{"counter name starting with '_'", store.Update(k, store.Condition{}, store.Changes{Set: map[string]int64{"_x": 1}})},
		{"counter name over 64 bytes", store.Update(k, store.Condition{}, store.Changes{Set: map[string]int64{strings.Repeat("a", 65): 1}})},
		{"bad counter name in condition", store.Delete(k, store.Condition{CountersAtLeast: map[string]int64{"a#b": 1}})},
		{"counter both added and set", store.Update(k, store.Condition{}, store.Changes{Add: map[string]int64{"n": 1}, Set: map[string]int64{"n": 1}})},
		{"index both set and cleared", store.Update(k, store.Condition{}, store.Changes{Index: &store.IndexKey{Partition: "P", Sort: "1"}, ClearIndex: true})},
		{"index without partition", store.Put(store.Item{Key: k, Index: &store.IndexKey{Sort: "1"}}, store.Condition{})},
		{"index without sort key", store.Update(k, store.Condition{}, store.Changes{Index: &store.IndexKey{Partition: "P"}})},
		{"over 100 statuses", store.Update(k, store.Condition{StatusIn: make([]string, 101)}, store.Changes{})},
	}
	for _, tc := range cases {
		_, err := s.Write(t.Context(), tc.op)
		require.ErrorIs(t, err, store.ErrInvalidOp, tc.name)
	}
	requireMissing(t, s, k)

	for _, name := range []string{"a", "Z9", "nodes.max", "slots_free", "x-y", "0"} {
		mustWrite(t, s, store.Update(k, store.Condition{}, store.Changes{Add: map[string]int64{name: 1}}))
	}
}

func testItemSizeLimit(t *testing.T, s store.Store) {
	k := key("big", "item")
	mustWrite(t, s, store.Put(store.Item{Key: k, Data: make([]byte, 300<<10)}, store.Condition{}))

	_, err := s.Write(t.Context(), store.Put(store.Item{Key: k, Data: make([]byte, 410<<10)}, store.Condition{}))
	require.ErrorIs(t, err, store.ErrInvalidOp)
	_, err = s.Write(t.Context(), store.Update(k, store.Condition{}, store.Changes{Data: make([]byte, 410<<10)}))
	require.ErrorIs(t, err, store.ErrInvalidOp)
	require.Equal(t, int64(1), mustGet(t, s, k).Version, "a refused write changes nothing")
}
