package storetest

import (
	"encoding/base64"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/store"
)

// putAll writes items with no condition, in transactions of up to
// MaxTransactItems.
func putAll(t *testing.T, s store.Store, items []store.Item) {
	t.Helper()
	for len(items) > 0 {
		n := min(len(items), store.MaxTransactItems)
		ops := make([]store.Op, n)
		for i, it := range items[:n] {
			ops[i] = store.Put(it, store.Condition{})
		}
		require.NoError(t, s.Transact(t.Context(), ops))
		items = items[n:]
	}
}

func sortKeys(pk string, sks ...string) []store.Key {
	keys := make([]store.Key, len(sks))
	for i, sk := range sks {
		keys[i] = key(pk, sk)
	}
	return keys
}

// seedQuery fills partition "q" and its neighbours.
func seedQuery(t *testing.T, s store.Store) {
	var items []store.Item
	for _, sk := range []string{"a#1", "a#2", "a#3", "a#4", "a#5", "b#1", "b#2", "b#3", "c"} {
		items = append(items, store.Item{Key: key("q", sk), Status: "S", Data: []byte(sk)})
	}
	for _, pk := range []string{"q2", "r", "p", "qq"} {
		items = append(items, store.Item{Key: key(pk, "a#1")})
	}
	putAll(t, s, items)
}

func testQuery(t *testing.T, s store.Store) {
	seedQuery(t, s)
	cases := []struct {
		name string
		q    store.Query
		want []string
	}{
		{"whole partition in order", store.Query{}, []string{"a#1", "a#2", "a#3", "a#4", "a#5", "b#1", "b#2", "b#3", "c"}},
		{"prefix", store.Query{Prefix: "a#"}, []string{"a#1", "a#2", "a#3", "a#4", "a#5"}},
		{"prefix descending", store.Query{Prefix: "b#", Descending: true}, []string{"b#3", "b#2", "b#1"}},
		{"descending", store.Query{Descending: true}, []string{"c", "b#3", "b#2", "b#1", "a#5", "a#4", "a#3", "a#2", "a#1"}},
		{"prefix is a whole key", store.Query{Prefix: "c"}, []string{"c"}},
		{"prefix matching nothing", store.Query{Prefix: "d"}, nil},
		{"prefix past everything, descending", store.Query{Prefix: "z", Descending: true}, nil},
	}
	for _, tc := range cases {
		p, err := s.Query(t.Context(), "q", tc.q)
		require.NoError(t, err, tc.name)
		require.Empty(t, p.Next, tc.name)
		require.Equal(t, sortKeys("q", tc.want...), keysOf(p.Items), tc.name)
		for _, it := range p.Items {
			require.Equal(t, store.Item{Key: it.Key, Version: 1, Status: "S", Data: []byte(it.SK)}, it, "items come back whole")
		}
	}

	p, err := s.Query(t.Context(), "empty", store.Query{})
	require.NoError(t, err)
	require.Empty(t, p.Items)
	require.Empty(t, p.Next)

	_, err = s.Query(t.Context(), "", store.Query{})
	require.ErrorIs(t, err, store.ErrInvalidOp)
	_, err = s.Query(t.Context(), "q", store.Query{Limit: -1})
	require.ErrorIs(t, err, store.ErrInvalidOp)
}

func testQueryPagination(t *testing.T, s store.Store) {
	seedQuery(t, s)
	cases := []struct {
		name  string
		q     store.Query
		want  []string
		pages int
	}{
		{"pages of 2", store.Query{Limit: 2}, []string{"a#1", "a#2", "a#3", "a#4", "a#5", "b#1", "b#2", "b#3", "c"}, 5},
		{"prefix, pages of 2", store.Query{Prefix: "a#", Limit: 2}, []string{"a#1", "a#2", "a#3", "a#4", "a#5"}, 3},
		{"exact multiple: no empty last page", store.Query{Prefix: "b#", Limit: 3}, []string{"b#1", "b#2", "b#3"}, 1},
		{"exact multiple of several pages", store.Query{Limit: 3}, []string{"a#1", "a#2", "a#3", "a#4", "a#5", "b#1", "b#2", "b#3", "c"}, 3},
		{"descending pages of 4", store.Query{Limit: 4, Descending: true}, []string{"c", "b#3", "b#2", "b#1", "a#5", "a#4", "a#3", "a#2", "a#1"}, 3},
		{"prefix descending pages of 1", store.Query{Prefix: "a#", Limit: 1, Descending: true}, []string{"a#5", "a#4", "a#3", "a#2", "a#1"}, 5},
	}
	for _, tc := range cases {
		q := tc.q
		items, pages := collect(t, q.Limit, func(c string) (store.Page, error) {
			q.Cursor = c
			return s.Query(t.Context(), "q", q)
		})
		require.Equal(t, sortKeys("q", tc.want...), keysOf(items), tc.name)
		require.Equal(t, tc.pages, pages, tc.name)
	}
}

func testQueryDefaultPageSize(t *testing.T, s store.Store) {
	items := make([]store.Item, store.DefaultPageSize+1)
	for i := range items {
		items[i] = store.Item{Key: key("many", fmt.Sprintf("%04d", i))}
	}
	putAll(t, s, items)
	p, err := s.Query(t.Context(), "many", store.Query{})
	require.NoError(t, err)
	require.Len(t, p.Items, store.DefaultPageSize)
	require.NotEmpty(t, p.Next)
	p, err = s.Query(t.Context(), "many", store.Query{Cursor: p.Next})
	require.NoError(t, err)
	require.Equal(t, []store.Key{key("many", fmt.Sprintf("%04d", store.DefaultPageSize))}, keysOf(p.Items))
	require.Empty(t, p.Next)
}

func testQueryResumesAfterDeletedCursorItem(t *testing.T, s store.Store) {
	seedQuery(t, s)
	for _, desc := range []bool{false, true} {
		q := store.Query{Prefix: "b#", Limit: 1, Descending: desc}
		first, err := s.Query(t.Context(), "q", q)
		require.NoError(t, err)
		require.Len(t, first.Items, 1)
		mustWrite(t, s, store.Delete(first.Items[0].Key, store.Condition{}))
		q.Cursor = first.Next
		rest := queryAll(t, s, "q", q)
		want := sortKeys("q", "b#2", "b#3")
		if desc {
			want = sortKeys("q", "b#2", "b#1")
		}
		require.Equal(t, want, keysOf(rest), "descending=%v", desc)
		mustWrite(t, s, store.Put(first.Items[0], store.Condition{}))
	}
}

func testQueryBadCursor(t *testing.T, s store.Store) {
	seedQuery(t, s)
	mustWrite(t, s, store.Put(store.Item{Key: key("r", "a#2")}, store.Condition{}))
	mustWrite(t, s, store.Put(store.Item{Key: key("ix", "1"), Index: &store.IndexKey{Partition: "P", Sort: "1"}}, store.Condition{}))
	mustWrite(t, s, store.Put(store.Item{Key: key("ix", "2"), Index: &store.IndexKey{Partition: "P", Sort: "2"}}, store.Condition{}))
	awaitIndex(t, s, "P", sortKeys("ix", "1", "2"))

	next := func(pk string, q store.Query) string {
		t.Helper()
		p, err := s.Query(t.Context(), pk, q)
		require.NoError(t, err)
		require.NotEmpty(t, p.Next)
		return p.Next
	}
	fromQ := next("q", store.Query{Limit: 1})
	fromPrefix := next("q", store.Query{Prefix: "a#", Limit: 1})
	fromDesc := next("q", store.Query{Limit: 1, Descending: true})
	fromR := next("r", store.Query{Limit: 1})
	ip, err := s.QueryIndex(t.Context(), "P", store.IndexQuery{Limit: 1})
	require.NoError(t, err)
	require.NotEmpty(t, ip.Next)

	cases := []struct {
		name   string
		pk     string
		q      store.Query
		cursor string
	}{
		{"not base64", "q", store.Query{}, "!!!not a cursor!!!"},
		{"base64 of garbage", "q", store.Query{}, base64.RawURLEncoding.EncodeToString([]byte("garbage"))},
		{"base64 of an empty object", "q", store.Query{}, base64.RawURLEncoding.EncodeToString([]byte("{}"))},
		{"truncated", "q", store.Query{}, fromQ[:len(fromQ)/2]},
		{"another partition's", "q", store.Query{}, fromR},
		{"used on another partition", "r", store.Query{}, fromQ},
		{"another prefix's", "q", store.Query{Prefix: "b#"}, fromPrefix},
		{"prefix dropped", "q", store.Query{}, fromPrefix},
		{"other direction's", "q", store.Query{}, fromDesc},
		{"ascending used descending", "q", store.Query{Descending: true}, fromQ},
		{"an index cursor", "q", store.Query{}, ip.Next},
	}
	for _, tc := range cases {
		tc.q.Cursor = tc.cursor
		_, err := s.Query(t.Context(), tc.pk, tc.q)
		require.ErrorIs(t, err, store.ErrBadCursor, tc.name)
	}
}

// testQueryKeysWithNUL checks that keys holding NUL and keys that are prefixes
// of one another stay in their own partitions.
func testQueryKeysWithNUL(t *testing.T, s store.Store) {
	pks := []string{"n", "n\x00", "n\x00\x01", "n\x01", "nn"}
	var items []store.Item
	for _, pk := range pks {
		for _, sk := range []string{"a", "a\x00", "a\x00b", "ab"} {
			items = append(items, store.Item{Key: key(pk, sk), Data: []byte(pk + "|" + sk)})
		}
	}
	putAll(t, s, items)
	for _, pk := range pks {
		require.Equal(t, sortKeys(pk, "a", "a\x00", "a\x00b", "ab"), keysOf(queryAll(t, s, pk, store.Query{Limit: 3})), "%q", pk)
		require.Equal(t, sortKeys(pk, "a\x00", "a\x00b"), keysOf(queryAll(t, s, pk, store.Query{Prefix: "a\x00"})), "%q", pk)
		require.Equal(t, sortKeys(pk, "ab", "a\x00b", "a\x00", "a"), keysOf(queryAll(t, s, pk, store.Query{Descending: true, Limit: 1})), "%q", pk)
		require.Equal(t, []byte(pk+"|a\x00"), mustGet(t, s, key(pk, "a\x00")).Data)
	}
}

// seedIndex writes six due items, one elsewhere in the index and one outside
// it, and returns the due keys in index order.
func seedIndex(t *testing.T, s store.Store, base time.Time) []store.Key {
	var items []store.Item
	var due []store.Key
	for i := range 6 {
		k := key(fmt.Sprintf("TASK#%d", 5-i), "META") // index order differs from key order
		due = append(due, k)
		items = append(items, store.Item{
			Key: k, Status: "RUNNING", Data: []byte(fmt.Sprint(i)),
			Index: &store.IndexKey{Partition: "RUNNING#0", Sort: store.SortableTime(base.Add(time.Duration(i) * time.Minute))},
		})
	}
	items = append(items,
		store.Item{Key: key("TASK#x", "META"), Index: &store.IndexKey{Partition: "RUNNING#1", Sort: store.SortableTime(base)}},
		store.Item{Key: key("TASK#y", "META")},
	)
	putAll(t, s, items)
	awaitIndex(t, s, "RUNNING#0", due)
	return due
}

func testIndex(t *testing.T, s store.Store) {
	base := time.UnixMilli(1_700_000_000_000)
	due := seedIndex(t, s, base)

	p, err := s.QueryIndex(t.Context(), "RUNNING#0", store.IndexQuery{})
	require.NoError(t, err)
	require.Empty(t, p.Next)
	require.Len(t, p.Items, 6)
	require.Equal(t, store.Item{
		Key: due[2], Version: 1, Status: "RUNNING", Data: []byte("2"),
		Index: &store.IndexKey{Partition: "RUNNING#0", Sort: store.SortableTime(base.Add(2 * time.Minute))},
	}, p.Items[2], "index items come back whole")

	before := store.SortableTime(base.Add(3 * time.Minute))
	require.Equal(t, due[:3], keysOf(indexAll(t, s, "RUNNING#0", store.IndexQuery{SortBefore: before})), "SortBefore is strict")
	require.Empty(t, indexAll(t, s, "RUNNING#0", store.IndexQuery{SortBefore: store.SortableTime(base)}))
	require.Equal(t, []store.Key{key("TASK#x", "META")}, keysOf(indexAll(t, s, "RUNNING#1", store.IndexQuery{})))
	require.Empty(t, indexAll(t, s, "RUNNING", store.IndexQuery{}), "partitions match whole")

	mustWrite(t, s, store.Update(due[0], store.Condition{}, store.Changes{ClearIndex: true}))
	mustWrite(t, s, store.Update(due[1], store.Condition{}, store.Changes{Index: &store.IndexKey{Partition: "RUNNING#1", Sort: "9"}}))
	mustWrite(t, s, store.Put(store.Item{Key: due[2]}, store.Condition{}))
	mustWrite(t, s, store.Delete(due[3], store.Condition{}))
	mustWrite(t, s, store.Update(due[4], store.Condition{}, store.Changes{Index: &store.IndexKey{Partition: "RUNNING#0", Sort: store.SortableTime(base.Add(time.Hour))}}))
	awaitIndex(t, s, "RUNNING#0", []store.Key{due[5], due[4]})
	awaitIndex(t, s, "RUNNING#1", []store.Key{key("TASK#x", "META"), due[1]})

	_, err = s.QueryIndex(t.Context(), "", store.IndexQuery{})
	require.ErrorIs(t, err, store.ErrInvalidOp)
	_, err = s.QueryIndex(t.Context(), "RUNNING#0", store.IndexQuery{Limit: -1})
	require.ErrorIs(t, err, store.ErrInvalidOp)
}

func testIndexPagination(t *testing.T, s store.Store) {
	base := time.UnixMilli(1_700_000_000_000)
	due := seedIndex(t, s, base)
	for _, limit := range []int{1, 2, 3, 4, 6, 7} {
		items, pages := collect(t, limit, func(c string) (store.Page, error) {
			return s.QueryIndex(t.Context(), "RUNNING#0", store.IndexQuery{Limit: limit, Cursor: c})
		})
		require.Equal(t, due, keysOf(items), "limit %d", limit)
		require.Equal(t, (len(due)+limit-1)/limit, pages, "limit %d", limit)
	}
	before := store.SortableTime(base.Add(5 * time.Minute))
	items, pages := collect(t, 2, func(c string) (store.Page, error) {
		return s.QueryIndex(t.Context(), "RUNNING#0", store.IndexQuery{Limit: 2, Cursor: c, SortBefore: before})
	})
	require.Equal(t, due[:5], keysOf(items))
	require.Equal(t, 3, pages)
}

// testIndexTiesPaginate checks that items sharing an index sort key are each
// returned once across pages.
func testIndexTiesPaginate(t *testing.T, s store.Store) {
	var items []store.Item
	want := map[store.Key]bool{}
	for i := range 7 {
		k := key(fmt.Sprintf("tie#%d", i%3), fmt.Sprint(i))
		want[k] = true
		items = append(items, store.Item{Key: k, Index: &store.IndexKey{Partition: "TIES", Sort: "same"}})
	}
	items = append(items, store.Item{Key: key("tie#z", "z"), Index: &store.IndexKey{Partition: "TIES", Sort: "samf"}})
	putAll(t, s, items)
	var all []store.Item
	for range 50 {
		if all = indexAll(t, s, "TIES", store.IndexQuery{}); len(all) == len(items) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	require.Len(t, all, len(items))

	for _, limit := range []int{1, 2, 3} {
		got, _ := collect(t, limit, func(c string) (store.Page, error) {
			return s.QueryIndex(t.Context(), "TIES", store.IndexQuery{Limit: limit, Cursor: c, SortBefore: "samf"})
		})
		seen := map[store.Key]bool{}
		for _, it := range got {
			require.False(t, seen[it.Key], "limit %d: %s returned twice", limit, it.Key)
			seen[it.Key] = true
		}
		require.Equal(t, want, seen, "limit %d", limit)
	}
}

func testIndexBadCursor(t *testing.T, s store.Store) {
	base := time.UnixMilli(1_700_000_000_000)
	seedIndex(t, s, base)
	p, err := s.QueryIndex(t.Context(), "RUNNING#0", store.IndexQuery{Limit: 1})
	require.NoError(t, err)
	require.NotEmpty(t, p.Next)
	mustWrite(t, s, store.Put(store.Item{Key: key("RUNNING#0", "a")}, store.Condition{}))
	mustWrite(t, s, store.Put(store.Item{Key: key("RUNNING#0", "b")}, store.Condition{}))
	qp, err := s.Query(t.Context(), "RUNNING#0", store.Query{Limit: 1})
	require.NoError(t, err)
	require.NotEmpty(t, qp.Next)

	cases := []struct {
		name      string
		partition string
		cursor    string
	}{
		{"not base64", "RUNNING#0", "%%%"},
		{"base64 of garbage", "RUNNING#0", base64.RawURLEncoding.EncodeToString([]byte{0xff, 0, 1})},
		{"another partition's", "RUNNING#1", p.Next},
		{"a query cursor", "RUNNING#0", qp.Next},
	}
	for _, tc := range cases {
		_, err := s.QueryIndex(t.Context(), tc.partition, store.IndexQuery{Cursor: tc.cursor})
		require.ErrorIs(t, err, store.ErrBadCursor, tc.name)
	}
}

func testQueryAfter(t *testing.T, s store.Store) {
	seedQuery(t, s)
	cases := []struct {
		name  string
		q     store.Query
		want  []string
		pages int
	}{
		{"after a key that exists", store.Query{After: "a#5", Limit: 2}, []string{"b#1", "b#2", "b#3", "c"}, 2},
		{"after a key between two", store.Query{After: "a#55", Limit: 10}, []string{"b#1", "b#2", "b#3", "c"}, 1},
		{"after the last key", store.Query{After: "c", Limit: 10}, nil, 1},
		{"after a key before the first", store.Query{After: "0", Limit: 4}, []string{"a#1", "a#2", "a#3", "a#4", "a#5", "b#1", "b#2", "b#3", "c"}, 3},
	}
	for _, tc := range cases {
		q := tc.q
		items, pages := collect(t, q.Limit, func(c string) (store.Page, error) {
			q.Cursor = c
			return s.Query(t.Context(), "q", q)
		})
		require.Equal(t, sortKeys("q", tc.want...), keysOf(items), tc.name)
		require.Equal(t, tc.pages, pages, tc.name)
	}
	for _, q := range []store.Query{{After: "a", Prefix: "a#"}, {After: "a", Descending: true}} {
		_, err := s.Query(t.Context(), "q", q)
		require.ErrorIs(t, err, store.ErrInvalidOp, "%+v", q)
	}
}
