package catalog

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/catalog/catalogtest"
	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/store"
	"github.com/heddle-io/heddle/internal/store/boltstore"
	"github.com/heddle-io/heddle/internal/store/dynamotest"
)

// backends returns a fresh store of each backend: the embedded one always,
// DynamoDB Local when HEDDLE_DYNAMODB_ENDPOINT names it (a table of its own,
// deleted afterwards).
func backends(t testing.TB) map[string]func(testing.TB) store.Store {
	out := map[string]func(testing.TB) store.Store{
		"bolt": func(t testing.TB) store.Store {
			db, err := boltstore.Open(filepath.Join(t.TempDir(), "heddle.db"), boltstore.Options{})
			require.NoError(t, err)
			t.Cleanup(func() { _ = db.Close() })
			return db
		},
	}
	if os.Getenv(dynamotest.EndpointVar) != "" {
		out["dynamodb"] = func(t testing.TB) store.Store { return dynamotest.Store(t, "heddle-catalog-test") }
	}
	return out
}

func largeDoc(t testing.TB, services int, mark string) *Document {
	t.Helper()
	d, err := DecodeDocument(catalogtest.Large(services, mark))
	require.NoError(t, err)
	return d
}

// marks returns the set of marks (see catalogtest.Large) in d's descriptions.
func marks(d *Document) map[string]int {
	out := map[string]int{}
	es, _ := d.entities()
	for _, e := range es {
		desc := e.EntityMeta().Description
		if i := strings.LastIndex(desc, "("); i >= 0 {
			out[strings.TrimSuffix(desc[i+1:], ")")]++
		}
	}
	return out
}

// stagedLeft counts the version items of tenant acme still marked staged by
// an import that is not published, and the import records.
func stagedLeft(t *testing.T, s store.Store, d *Document) (staged, records int) {
	t.Helper()
	ctx := context.Background()
	sc := store.Scoped(s, "acme")
	es, _ := d.entities()
	for _, e := range es {
		page, err := sc.Query(ctx, versionKey(e.EntityKind(), e.EntityMeta().Name, 0).PK, store.Query{Limit: store.MaxPageSize})
		require.NoError(t, err)
		var latest int64
		if h, err := sc.Get(ctx, headKey(e.EntityKind(), e.EntityMeta().Name)); err == nil {
			latest = h.Counter(counterLatest)
		}
		for _, it := range page.Items {
			var v int64
			_, _ = fmt.Sscan(it.SK, &v)
			if strings.HasPrefix(it.Status, stagedPrefix) && v > latest {
				staged++
			}
		}
	}
	page, err := sc.Query(ctx, importsPK, store.Query{Limit: store.MaxPageSize})
	require.NoError(t, err)
	return staged, len(page.Items)
}

func TestLargeImportIsAllOrNothing(t *testing.T) {
	t.Parallel()
	for name, open := range backends(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s := open(t)
			cat := New(s, nil)

			a := largeDoc(t, catalogtest.LargeServices, "A")
			res, err := cat.Import(ctx, "acme", a)
			require.NoError(t, err)
			require.Len(t, res.Created, catalogtest.LargeEntities)
			got, err := cat.Export(ctx, "acme")
			require.NoError(t, err)
			require.Equal(t, map[string]int{"A": catalogtest.LargeEntities}, marks(got))
			staged, records := stagedLeft(t, s, a)
			require.Zero(t, staged)
			require.Zero(t, records, "a published import leaves no record behind")

			// The same document again changes nothing.
			rev, err := cat.Revision(ctx, "acme")
			require.NoError(t, err)
			res, err = cat.Import(ctx, "acme", a)
			require.NoError(t, err)
			require.Len(t, res.Unchanged, catalogtest.LargeEntities)
			again, err := cat.Revision(ctx, "acme")
			require.NoError(t, err)
			require.Equal(t, rev, again)

			// A bad document of the same size: a structured error, nothing changes.
			bad := largeDoc(t, catalogtest.LargeServices, "B")
			bad.ClusterTemplates[4].Compatibility.Services = append(bad.ClusterTemplates[4].Compatibility.Services, "nosuch")
			_, err = cat.Import(ctx, "acme", bad)
			var ps domain.Problems
			require.ErrorAs(t, err, &ps)
			require.Equal(t, "clusterTemplates[4].compatibility.services["+fmt.Sprint(len(bad.ClusterTemplates[4].Compatibility.Services)-1)+"]", ps[0].Field)
			got, err = cat.Export(ctx, "acme")
			require.NoError(t, err)
			require.Equal(t, map[string]int{"A": catalogtest.LargeEntities}, marks(got))

			// A new version of every entity, all at once.
			res, err = cat.Import(ctx, "acme", largeDoc(t, catalogtest.LargeServices, "B"))
			require.NoError(t, err)
			require.Len(t, res.Updated, catalogtest.LargeEntities)
			got, err = cat.Export(ctx, "acme")
			require.NoError(t, err)
			require.Equal(t, map[string]int{"B": catalogtest.LargeEntities}, marks(got))
			vs, _, err := cat.Versions(ctx, "acme", domain.KindService, "hdfs-003", 10, "")
			require.NoError(t, err)
			require.Len(t, vs, 2)
			require.Equal(t, 2, vs[0].EntityMeta().Version)
			tmpl, err := cat.Resolve(ctx, "acme", "platform-1", 0)
			require.NoError(t, err)
			require.Equal(t, "local-a", tmpl.Defaults.Provider, "the template resolves against the imported partials")
		})
	}
}

// crashStore stands for a process that dies: once crashed, nothing it is
// asked to write reaches the store.
type crashStore struct {
	store.Store
	crashed atomic.Bool
}

var errCrashed = errors.New("the process died")

func (c *crashStore) Write(ctx context.Context, op store.Op) (store.Item, error) {
	if c.crashed.Load() {
		return store.Item{}, errCrashed
	}
	return c.Store.Write(ctx, op)
}

func (c *crashStore) Transact(ctx context.Context, ops []store.Op) error {
	if c.crashed.Load() {
		return errCrashed
	}
	return c.Store.Transact(ctx, ops)
}

func TestLargeImportFailingBeforeTheFlipChangesNothing(t *testing.T) {
	t.Parallel()
	for name, open := range backends(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s := open(t)
			cat := New(s, nil)
			_, err := cat.Import(ctx, "acme", largeDoc(t, 100, "A"))
			require.NoError(t, err)

			boom := errors.New("injected failure")
			cat.hooks = &importHooks{afterStage: func() error { return boom }}
			b := largeDoc(t, 100, "B")
			_, err = cat.Import(ctx, "acme", b)
			require.ErrorIs(t, err, boom)
			got, err := cat.Export(ctx, "acme")
			require.NoError(t, err)
			require.Equal(t, map[string]int{"A": len(mustEntities(b))}, marks(got))
			staged, records := stagedLeft(t, s, b)
			require.Zero(t, staged, "a failed import deletes what it staged")
			require.Zero(t, records)
		})
	}
}

func TestLargeImportCrashedAfterStagingIsCollected(t *testing.T) {
	t.Parallel()
	for name, open := range backends(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			raw := open(t)
			_, err := New(raw, nil).Import(ctx, "acme", largeDoc(t, 100, "A"))
			require.NoError(t, err)

			// The importer dies once everything is staged, before the flip.
			dying := &crashStore{Store: raw}
			cat := New(dying, nil)
			cat.hooks = &importHooks{afterStage: func() error { dying.crashed.Store(true); return nil }}
			b := largeDoc(t, 100, "B")
			_, err = cat.Import(ctx, "acme", b)
			require.ErrorIs(t, err, errCrashed)
			staged, records := stagedLeft(t, raw, b)
			require.Equal(t, len(mustEntities(b)), staged)
			require.Equal(t, 1, records)

			// After a restart the old catalog is current: no staged
			// version is visible, by name, version or history.
			after := New(raw, nil)
			got, err := after.Export(ctx, "acme")
			require.NoError(t, err)
			require.Equal(t, map[string]int{"A": len(mustEntities(b))}, marks(got))
			_, err = after.Get(ctx, "acme", domain.KindService, "web-001", 2)
			require.ErrorIs(t, err, ErrNotFound)
			vs, _, err := after.Versions(ctx, "acme", domain.KindService, "web-001", 10, "")
			require.NoError(t, err)
			require.Len(t, vs, 1)

			// The janitor leaves a fresh import alone (its lease renewed
			// a moment ago, however slow this machine) and collects a
			// stale one.
			page, err := store.Scoped(raw, "acme").Query(ctx, importsPK, store.Query{Limit: 10})
			require.NoError(t, err)
			require.Len(t, page.Items, 1)
			n, err := after.CollectStaged(ctx, "acme", time.UnixMilli(page.Items[0].Counter("renewed")).Add(time.Second))
			require.NoError(t, err)
			require.Zero(t, n)
			n, err = after.CollectStaged(ctx, "acme", time.Now().Add(StaleImportAfter+time.Minute))
			require.NoError(t, err)
			require.Equal(t, len(mustEntities(b)), n)
			staged, records = stagedLeft(t, raw, b)
			require.Zero(t, staged)
			require.Zero(t, records)

			// Dead again: a write that fits in one transaction takes a
			// staged version number back from the dead import, which it
			// aborts, so the janitor collects the rest at once.
			dying.crashed.Store(false)
			_, err = cat.Import(ctx, "acme", b)
			require.ErrorIs(t, err, errCrashed)
			svc, err := after.Get(ctx, "acme", domain.KindService, "web-001", 0)
			require.NoError(t, err)
			svc.EntityMeta().Description = "by hand"
			stored, _, err := after.Put(ctx, "acme", svc, "")
			require.NoError(t, err)
			require.Equal(t, 2, stored.EntityMeta().Version)
			n, err = after.CollectStaged(ctx, "acme", time.Now())
			require.NoError(t, err)
			require.Equal(t, len(mustEntities(b))-1, n, "every staged version but the one the Put took back")
			staged, records = stagedLeft(t, raw, b)
			require.Zero(t, staged)
			require.Zero(t, records)

			// And the next import goes through.
			res, err := after.Import(ctx, "acme", b)
			require.NoError(t, err)
			require.Len(t, res.Updated, len(mustEntities(b)))
			got, err = after.Export(ctx, "acme")
			require.NoError(t, err)
			require.Equal(t, map[string]int{"B": len(mustEntities(b))}, marks(got))
		})
	}
}

func TestLargeImportCrashedAfterTheFlipIsFinishedByTheNextReader(t *testing.T) {
	t.Parallel()
	for name, open := range backends(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			raw := open(t)
			_, err := New(raw, nil).Import(ctx, "acme", largeDoc(t, 100, "A"))
			require.NoError(t, err)

			dying := &crashStore{Store: raw}
			cat := New(dying, nil)
			cat.hooks = &importHooks{afterFlip: func() error { dying.crashed.Store(true); return errCrashed }}
			b := largeDoc(t, 100, "B")
			_, err = cat.Import(ctx, "acme", b)
			require.ErrorIs(t, err, errCrashed)

			// Published: the next reader rolls it forward before it reads.
			after := New(raw, nil)
			got, err := after.Get(ctx, "acme", domain.KindService, "db-002", 0)
			require.NoError(t, err)
			require.Equal(t, 2, got.EntityMeta().Version)
			exported, err := after.Export(ctx, "acme")
			require.NoError(t, err)
			require.Equal(t, map[string]int{"B": len(mustEntities(b))}, marks(exported))
			staged, records := stagedLeft(t, raw, b)
			require.Zero(t, staged)
			require.Zero(t, records)
		})
	}
}

func TestLargeImportLosesTheFlipToAConcurrentWriteAndStartsAgain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	_, err := b.cat.Import(ctx, "acme", largeDoc(t, 100, "A"))
	require.NoError(t, err)

	var once sync.Once
	b.cat.hooks = &importHooks{afterStage: func() error {
		once.Do(func() {
			// Another writer commits between this import's read and its flip.
			other := New(b.db, nil)
			svc, err := other.Get(ctx, "acme", domain.KindService, "kafka-004", 0)
			require.NoError(t, err)
			svc.EntityMeta().Description = "by hand"
			_, _, err = other.Put(ctx, "acme", svc, "")
			require.NoError(t, err)
		})
		return nil
	}}
	res, err := b.cat.Import(ctx, "acme", largeDoc(t, 100, "B"))
	require.NoError(t, err)
	require.Len(t, res.Updated, len(mustEntities(largeDoc(t, 100, "B"))))
	vs, _, err := b.cat.Versions(ctx, "acme", domain.KindService, "kafka-004", 10, "")
	require.NoError(t, err)
	require.Len(t, vs, 3, "the import was made again on top of the concurrent write, which is kept in the history")
	require.Equal(t, "by hand", vs[1].EntityMeta().Description)
	require.Contains(t, vs[0].EntityMeta().Description, "(B)")
}

func TestConcurrentLargeImportsNeverBothWinFromOneRevision(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	first := largeDoc(t, 100, "A")
	_, err := b.cat.Import(ctx, "acme", first)
	require.NoError(t, err)
	n := len(mustEntities(first))

	var wg sync.WaitGroup
	var won atomic.Int64
	errs := make([]error, 4)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = b.cat.Import(ctx, "acme", largeDoc(t, 100, fmt.Sprintf("M%d", i)))
			if errs[i] == nil {
				won.Add(1)
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			require.ErrorIs(t, err, ErrBusy)
		}
	}
	require.Positive(t, won.Load())
	got, err := b.cat.Export(ctx, "acme")
	require.NoError(t, err)
	require.Len(t, marks(got), 1, "the catalog is one import's, whole: %v", marks(got))
	// Each import that won made one version of each entity: none was lost
	// to, or merged with, another.
	svc, err := b.cat.Get(ctx, "acme", domain.KindService, "zk-003", 0)
	require.NoError(t, err)
	require.Equal(t, 1+int(won.Load()), svc.EntityMeta().Version)
	staged, records := stagedLeft(t, b.db, first)
	require.Zero(t, staged)
	require.Zero(t, records)
	_ = n
}

func TestExportIsOneSnapshotWhileImportsRun(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	docs := []*Document{largeDoc(t, 120, "A"), largeDoc(t, 120, "B")}
	_, err := b.cat.Import(ctx, "acme", docs[0])
	require.NoError(t, err)

	stop := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		defer close(done)
		for i := 1; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := b.cat.Import(ctx, "acme", docs[i%2]); err != nil {
				done <- err
				return
			}
		}
	}()
	seen := map[string]bool{}
	for range 30 {
		d, err := b.cat.Export(ctx, "acme")
		if errors.Is(err, ErrBusy) {
			continue
		}
		require.NoError(t, err)
		m := marks(d)
		require.Len(t, m, 1, "an export mixes two imports: %v", m)
		for k := range m {
			seen[k] = true
		}
		require.Len(t, mustEntities(d), len(mustEntities(docs[0])))
	}
	close(stop)
	require.NoError(t, <-done)
}

// orphanImport leaves behind an import of doc staged by a process that
// died (kill -9) before its flip: its record still staging, its lease last
// renewed just now.
func orphanImport(t *testing.T, raw store.Store, doc *Document) {
	t.Helper()
	dying := &crashStore{Store: raw}
	cat := New(dying, nil)
	cat.owner = "a process that died"
	cat.hooks = &importHooks{afterStage: func() error { dying.crashed.Store(true); return nil }}
	_, err := cat.Import(context.Background(), "acme", doc)
	require.ErrorIs(t, err, errCrashed)
	staged, records := stagedLeft(t, raw, doc)
	require.Equal(t, len(mustEntities(doc)), staged)
	require.Equal(t, 1, records)
}

// TestAnImportOrphanedByACrashIsReclaimedAtOnce: the next import of the
// tenant takes an orphan's version numbers back without waiting for the
// janitor: at once where this process is the store's sole writer (the local
// server), once the orphan's lease ran out elsewhere (DynamoDB, where
// another Lambda may still be staging); within its lease, an import of
// another process is live and the next import gives way to it.
func TestAnImportOrphanedByACrashIsReclaimedAtOnce(t *testing.T) {
	t.Parallel()
	for name, open := range backends(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			next := map[string]func(s store.Store) *Catalog{
				"sole writer": func(s store.Store) *Catalog { return New(s, nil, WithSoleWriter()) },
				"lease run out": func(s store.Store) *Catalog {
					c := New(s, nil)
					c.clock = func() time.Time { return time.Now().Add(StagingLease) }
					return c
				},
			}
			for how, newCatalog := range next {
				raw := open(t)
				_, err := New(raw, nil).Import(ctx, "acme", largeDoc(t, 100, "A"))
				require.NoError(t, err)
				orphanImport(t, raw, largeDoc(t, 100, "B"))

				c := newCatalog(raw)
				doc := largeDoc(t, 100, "C")
				res, err := c.Import(ctx, "acme", doc)
				require.NoError(t, err, how)
				require.Len(t, res.Updated, len(mustEntities(doc)), how)
				got, err := c.Export(ctx, "acme")
				require.NoError(t, err)
				require.Equal(t, map[string]int{"C": len(mustEntities(doc))}, marks(got), how)
				staged, _ := stagedLeft(t, raw, doc)
				require.Zero(t, staged, how)
				n, err := c.CollectStaged(ctx, "acme", time.Now())
				require.NoError(t, err)
				require.Zero(t, n, "%s: nothing of the orphan is left to collect", how)
				_, records := stagedLeft(t, raw, doc)
				require.Zero(t, records, how)
			}

			// Within its lease, another process's import may still publish:
			// the next import gives way to it.
			raw := open(t)
			_, err := New(raw, nil).Import(ctx, "acme", largeDoc(t, 100, "A"))
			require.NoError(t, err)
			orphanImport(t, raw, largeDoc(t, 100, "B"))
			// The clock stands still half a lease after the orphan's last
			// renewal: however slow this machine, its lease has not run
			// out, and it started first (in an earlier second; within one
			// second the import ids decide).
			page, err := store.Scoped(raw, "acme").Query(ctx, importsPK, store.Query{Limit: 10})
			require.NoError(t, err)
			require.Len(t, page.Items, 1)
			frozen := time.UnixMilli(page.Items[0].Counter("renewed")).Add(StagingLease / 2)
			c := New(raw, nil)
			c.clock = func() time.Time { return frozen }
			_, err = c.Import(ctx, "acme", largeDoc(t, 100, "C"))
			require.ErrorIs(t, err, ErrBusy)
			n, err := c.CollectStaged(ctx, "acme", frozen)
			require.NoError(t, err)
			require.Zero(t, n, "the janitor leaves an import within its lease alone")
		})
	}
}

// TestAStagingImportKeepsItsLease: an import that takes longer than its
// lease to stage renews it, so another import does not take it for dead.
func TestAStagingImportKeepsItsLease(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	_, err := b.cat.Import(ctx, "acme", largeDoc(t, 100, "A"))
	require.NoError(t, err)
	b.cat.renewEvery = time.Millisecond
	renewed := make(chan int64, 1)
	b.cat.hooks = &importHooks{afterStage: func() error {
		sc := store.Scoped(b.db, "acme")
		page, err := sc.Query(ctx, importsPK, store.Query{Limit: 10})
		require.NoError(t, err)
		require.Len(t, page.Items, 1)
		first := page.Items[0].Counter("renewed")
		for {
			it, err := sc.Get(ctx, store.Key{PK: importsPK, SK: page.Items[0].SK})
			require.NoError(t, err)
			if it.Counter("renewed") > first {
				renewed <- it.Counter("renewed")
				return nil
			}
			time.Sleep(time.Millisecond)
		}
	}}
	_, err = b.cat.Import(ctx, "acme", largeDoc(t, 100, "B"))
	require.NoError(t, err)
	require.Positive(t, <-renewed)
}

// TestAnImportCutShortMidStagingLeavesNothingInTheWay: a request cut short
// while its import stages (the client went away: its context is
// cancelled) gives back what it staged itself, although its context is
// done, so the next import of the tenant, in the same process and within
// the cut one's lease, succeeds at once. Found by the operations model
// (internal/opsmodel, importOrphaned): the cut import's abandon ran on the
// cancelled context, wrote nothing, and left a record that counted as live
// (this process's, its lease fresh), so every import for the next
// StagingLease answered ErrBusy.
func TestAnImportCutShortMidStagingLeavesNothingInTheWay(t *testing.T) {
	t.Parallel()
	for name, open := range backends(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := open(t)
			cat := New(s, nil, WithSoleWriter())
			_, err := cat.Import(context.Background(), "acme", largeDoc(t, 100, "A"))
			require.NoError(t, err)

			ctx, cancel := context.WithCancel(context.Background())
			cat.hooks = &importHooks{afterStage: func() error { cancel(); return ctx.Err() }}
			b := largeDoc(t, 100, "B")
			_, err = cat.Import(ctx, "acme", b)
			require.ErrorIs(t, err, context.Canceled)
			staged, records := stagedLeft(t, s, b)
			require.Zero(t, staged, "the cut import deleted what it staged")
			require.Zero(t, records, "and its record")

			cat.hooks = nil
			doc := largeDoc(t, 100, "C")
			res, err := cat.Import(context.Background(), "acme", doc)
			require.NoError(t, err, "the next import goes through at once")
			require.Len(t, res.Updated, len(mustEntities(doc)))
		})
	}
}
