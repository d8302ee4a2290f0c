package events

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/store"
	"github.com/heddle-io/heddle/internal/store/boltstore"
)

func open(t *testing.T) store.Store {
	t.Helper()
	db, err := boltstore.Open(filepath.Join(t.TempDir(), "heddle.db"), boltstore.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	return db
}

func TestIDsSortInOrderEvenWithinOneNanosecond(t *testing.T) {
	t.Parallel()
	at := time.Unix(1764079261, 0)
	prev := ""
	for range 1000 {
		id := NewID(at) // the same time, over and over
		require.True(t, ValidID(id), id)
		require.Greater(t, id, prev)
		prev = id
	}
}

func TestListPagesSinceAndExpire(t *testing.T) {
	t.Parallel()
	s := open(t)
	ctx := context.Background()
	t0 := time.Now().Add(-33*24*time.Hour + 12*time.Hour)
	for i := range 5 {
		_, err := s.Write(ctx, Op("acme", Event{Type: JobStatus, At: t0.Add(time.Duration(i) * 24 * time.Hour), Cluster: "c1", Status: "RUNNING",
			Message: strings.Repeat("x", 400)}))
		require.NoError(t, err)
	}
	_, err := s.Write(ctx, Op("globex", Event{Type: JobStatus, Cluster: "c1", Status: "RUNNING"}))
	require.NoError(t, err)
	l := New(s)
	all, next, err := l.List(ctx, "acme", "c1", "", 2, "")
	require.NoError(t, err)
	require.Len(t, all, 2)
	require.NotEmpty(t, next)
	require.Len(t, all[0].Message, MaxMessage, "messages are bounded")
	rest, _, err := l.List(ctx, "acme", "c1", "", 10, next)
	require.NoError(t, err)
	require.Len(t, rest, 3)
	since, _, err := l.List(ctx, "acme", "c1", all[1].ID, 10, "")
	require.NoError(t, err)
	require.Equal(t, rest, since, "since an id is what follows it")

	// Undispatched events stay in the outbox and do not expire; once
	// dispatched they expire Retention after their time.
	n, err := Expire(ctx, s, time.Now())
	require.NoError(t, err)
	require.Zero(t, n)
	for shard := range OutboxShards {
		page, err := s.QueryIndex(ctx, OutboxPartition(shard), store.IndexQuery{Limit: 100})
		require.NoError(t, err)
		for _, it := range page.Items {
			it, err := s.Get(ctx, it.Key)
			require.NoError(t, err)
			ev, err := Decode(it)
			require.NoError(t, err)
			require.NoError(t, Dispatched(ctx, s, it, ev))
		}
	}
	n, err = Expire(ctx, s, time.Now())
	require.NoError(t, err)
	require.Equal(t, 3, n, "the three older than 30 days")
	left, _, err := l.List(ctx, "acme", "c1", "", 10, "")
	require.NoError(t, err)
	require.Len(t, left, 2)
	other, _, err := l.List(ctx, "globex", "c1", "", 10, "")
	require.NoError(t, err)
	require.Len(t, other, 1, "another tenant's cluster c1 is its own")
}

func FuzzValidID(f *testing.F) {
	f.Add(NewID(time.Now()))
	f.Add("")
	f.Add("01764079261123456789-zzzzzzzz")
	f.Fuzz(func(t *testing.T, s string) {
		if ValidID(s) {
			require.Len(t, s, 29)
		}
	})
}
