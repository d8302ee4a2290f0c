package usage

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/store"
	"github.com/heddle-io/heddle/internal/store/boltstore"
)

// TestBatchesAndNodeRecordsReadAsOneLifetimePerNode writes lifetimes as a
// job's ends do (a create's batch opens them, a delete's batch closes some)
// next to records from before batches (one item per node, replaced when
// closed), and checks the reader answers one lifetime per node life:
// closed when any record closes it, and a node id used again later (a new
// start) as a life of its own.
func TestBatchesAndNodeRecordsReadAsOneLifetimePerNode(t *testing.T) {
	t.Parallel()
	db, err := boltstore.Open(filepath.Join(t.TempDir(), "heddle.db"), boltstore.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	ctx := context.Background()
	t0 := time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)
	h := func(n float64) time.Time { return t0.Add(time.Duration(n * float64(time.Hour))) }
	life := func(cluster, node string, start, end float64) Lifetime {
		l := Lifetime{Tenant: "acme", Cluster: cluster, Node: node, Owner: "ann", Template: "web", HardwareType: "small", Start: h(start)}
		if end > 0 {
			l.End = h(end)
		}
		return l
	}
	put := func(it store.Item) {
		_, err := db.Write(ctx, store.Put(it, store.Condition{}))
		require.NoError(t, err)
	}
	// c1: created in two transactions, then n1 and n3 deleted (a shrink).
	put(BatchItem("j1", "ACTIVE", []Lifetime{life("c1", "n1", 1, 0), life("c1", "n2", 1, 0)}))
	put(BatchItem("j1", "ACTIVE", []Lifetime{life("c1", "n3", 1, 0)}))
	put(BatchItem("j2", "DELETED", []Lifetime{life("c1", "n1", 1, 3), life("c1", "n3", 1, 2)}))
	// c1's n1 again, later: a new life of the same id, still running.
	put(BatchItem("j3", "ACTIVE", []Lifetime{life("c1", "n1", 4, 0)}))
	// c2 from before batches: n1 closed (its record replaced), n2 open, and
	// n2 closed by a batch of the release after.
	put(Item(life("c2", "n1", 0, 2)))
	put(Item(life("c2", "n2", 0, 0)))
	put(BatchItem("j4", "DELETED", []Lifetime{life("c2", "n2", 0, 5)}))
	// Another tenant's batch is not acme's.
	other := life("c9", "n1", 0, 0)
	other.Tenant = "globex"
	put(BatchItem("j9", "ACTIVE", []Lifetime{other}))

	got, err := NewReader(db).Lifetimes(ctx, "acme", t0, h(24))
	require.NoError(t, err)
	require.ElementsMatch(t, []Lifetime{
		life("c1", "n1", 1, 3), life("c1", "n2", 1, 0), life("c1", "n3", 1, 2), life("c1", "n1", 4, 0),
		life("c2", "n1", 0, 2), life("c2", "n2", 0, 5),
	}, got)

	// The range still applies, after the records of a life are put together:
	// from 3:30, c1's n1 (closed at 3:00) and n3 and c2's n1 are over.
	got, err = NewReader(db).Lifetimes(ctx, "acme", h(3.5), h(24))
	require.NoError(t, err)
	require.ElementsMatch(t, []Lifetime{life("c1", "n2", 1, 0), life("c1", "n1", 4, 0), life("c2", "n2", 0, 5)}, got)
}
