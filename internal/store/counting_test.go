package store_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/store"
	"github.com/heddle-io/heddle/internal/store/storetest"
)

func TestCountingConformance(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) store.Store { return store.NewCounting(openBolt(t)) })
}

func TestCountingCounts(t *testing.T) {
	t.Parallel()
	c := store.NewCounting(openBolt(t))
	ctx := t.Context()
	k := func(sk string) store.Key { return store.Key{PK: "P", SK: sk} }
	steps := []struct {
		name string
		do   func() error
		want store.Counts
	}{
		{"put", func() error {
			_, err := c.Write(ctx, store.Put(store.Item{Key: k("a"), Index: &store.IndexKey{Partition: "I", Sort: "1"}}, store.Condition{}))
			return err
		}, store.Counts{Writes: 1}},
		{"failed update", func() error {
			_, err := c.Write(ctx, store.Update(k("a"), store.Condition{Version: 9}, store.Changes{}))
			require.ErrorIs(t, err, store.ErrConditionFailed)
			return nil
		}, store.Counts{Writes: 1, ConditionFailures: 1}},
		{"transaction of two writes and a check", func() error {
			return c.Transact(ctx, []store.Op{
				store.Put(store.Item{Key: k("b"), Index: &store.IndexKey{Partition: "I", Sort: "2"}}, store.Condition{}),
				store.Delete(k("z"), store.Condition{}),
				store.Check(k("a"), store.Condition{MustExist: true}),
			})
		}, store.Counts{Writes: 2, Checks: 1, Transactions: 1}},
		{"found and missing gets", func() error {
			_, err := c.Get(ctx, k("a"))
			require.NoError(t, err)
			_, err = c.Get(ctx, k("nope"))
			require.ErrorIs(t, err, store.ErrNotFound)
			return nil
		}, store.Counts{Gets: 2, ItemsRead: 1}},
		{"two query pages", func() error {
			p, err := c.Query(ctx, "P", store.Query{Limit: 1})
			require.NoError(t, err)
			_, err = c.Query(ctx, "P", store.Query{Limit: 1, Cursor: p.Next})
			return err
		}, store.Counts{QueryPages: 2, ItemsRead: 2}},
		{"index page", func() error {
			_, err := c.QueryIndex(ctx, "I", store.IndexQuery{})
			return err
		}, store.Counts{IndexPages: 1, ItemsRead: 2}},
	}
	for _, step := range steps {
		c.Reset()
		require.NoError(t, step.do(), step.name)
		require.Equal(t, step.want, c.Counts(), step.name)
	}
	require.Equal(t, int64(1), store.Counts{Gets: 0, QueryPages: 0, IndexPages: 1}.Reads())
	require.Equal(t, int64(6), store.Counts{Gets: 1, QueryPages: 2, IndexPages: 3}.Reads())
}
