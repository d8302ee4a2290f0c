package catalog

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/store"
)

// A write whose items do not fit in one store transaction (an import of 50
// entities or more, or over 4 MB) is staged and then published with one
// small conditional write; see "Staged imports" in doc.go.

// StaleImportAfter is how long a staged import whose record carries no
// lease (one written by a heddle from before the lease) may stay
// unpublished before it counts as dead. An import stages in seconds and a
// request ends within API Gateway's 30 s, so an hour leaves no doubt that
// its writer is gone.
const StaleImportAfter = time.Hour

// StagingLease is how long a staging import counts as live after its
// importer last renewed its record: the importer renews it every
// stagingRenewEvery until its flip, so a record not renewed for this long
// was left by an importer that died (a crash, a request cut short). Another
// import then takes its version numbers back at once instead of giving way
// to it. A live importer that stalls longer only loses its flip and starts
// again: the flip is conditional on the record still staging.
const StagingLease = 10 * time.Second

const stagingRenewEvery = StagingLease / 5

// abandonTimeout bounds the give-back of an abandoned import (abandon),
// which outlives the request that was cut short.
const abandonTimeout = 30 * time.Second

// processOwner names this process in the import records it writes, so that
// a sole writer (WithSoleWriter) knows a record of another process as dead.
var processOwner = newImportID()

const (
	// The revision item's status: idle, or importing while a published
	// import's entity heads are being rolled forward.
	revIdle      = "idle"
	revImporting = "importing"

	// An import record's status.
	importStaging   = "staging"
	importCommitted = "committed"
	importAborted   = "aborted"

	// stagedPrefix + import id is the status of a version item an import
	// staged. It stays on the item once the import is published: whether a
	// version is visible is decided by its entity head (version <= latest).
	stagedPrefix = "staged:"

	// importsPK is the partition of the tenant's import records (SK the
	// import id); importsPK + "#" + id holds the import's manifest pages.
	importsPK = "CAT#IMP"

	// manifestPageBytes bounds one manifest page well below an item's 400 KB.
	manifestPageBytes = 256 << 10
)

// errRestart asks write to start again from a fresh read: another writer got
// in first.
var errRestart = errors.New("catalog: staged import lost to a concurrent write")

// entityWrite is one entity version a write makes, for the staged path.
type entityWrite struct {
	Ref     Ref
	Version int
	Head    int64 // the store version of the entity's head when read; 0: no head
	Data    []byte
}

// manifestEntry is an entityWrite without its body, as the manifest keeps it.
type manifestEntry struct {
	Kind    domain.Kind `json:"k"`
	Name    string      `json:"n"`
	Version int         `json:"v"`
	Head    int64       `json:"h,omitempty"`
}

// importOwner is an import record's body: the process that stages it.
type importOwner struct {
	Owner string `json:"owner"`
}

// revPending is the revision item's body while it is importing.
type revPending struct {
	Import string `json:"import"`
}

// importHooks let tests fail or "crash" an import between its steps.
type importHooks struct {
	afterStage func() error // between staging and the flip
	afterFlip  func() error // between the flip and the roll-forward
}

func importKey(id string) store.Key { return store.Key{PK: importsPK, SK: id} }

func manifestPK(id string) string { return importsPK + "#" + id }

func newImportID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// importStaged makes writes current all together, without one transaction:
//
//  1. an import record (status staging) and its manifest are written;
//  2. every new version is written as a staged version item, in batched
//     transactions; readers do not see it, because its entity head still
//     names the previous version;
//  3. one transaction flips the import: the revision item, on the condition
//     that it is still what this write read (revCond), becomes "importing
//     <id>", and the record becomes committed;
//  4. the heads are rolled forward to the new versions, the revision goes
//     back to idle and the record and manifest are deleted.
//
// Every reader settles the revision first (see settle): one that finds it
// importing finishes step 4 before it reads, so no reader sees a mix of two
// catalogs. A crash before step 3 leaves the old catalog current and the
// record staging, which the janitor aborts once stale; a crash after it is
// finished by the next reader, writer or janitor pass.
func (c *Catalog) importStaged(ctx context.Context, s store.Store, revCond store.Condition, writes []entityWrite) error {
	id := newImportID()
	manifest := make([]manifestEntry, len(writes))
	for i, w := range writes {
		manifest[i] = manifestEntry{Kind: w.Ref.Kind, Name: w.Ref.Name, Version: w.Version, Head: w.Head}
	}
	pages, err := manifestPages(manifest)
	if err != nil {
		return err
	}
	now := c.clock()
	started := now.Unix()
	owner, _ := json.Marshal(importOwner{Owner: c.owner})
	ops := []store.Op{store.Put(store.Item{Key: importKey(id), Status: importStaging, Data: owner,
		Counters: map[string]int64{"started": started, "renewed": now.UnixMilli(), "entities": int64(len(writes))}}, store.Condition{MustNotExist: true})}
	for i, p := range pages {
		ops = append(ops, store.Put(store.Item{Key: store.Key{PK: manifestPK(id), SK: fmt.Sprintf("%06d", i)}, Data: p}, store.Condition{}))
	}
	if err := applyAll(ctx, s, ops, nil); err != nil {
		return fmt.Errorf("catalog: recording import %s: %w", id, err)
	}

	stopRenewing := c.renewWhileStaging(ctx, s, id)
	defer stopRenewing()

	staged := stagedPrefix + id
	ops = ops[:0]
	for _, w := range writes {
		ops = append(ops, store.Put(store.Item{Key: versionKey(w.Ref.Kind, w.Ref.Name, w.Version), Status: staged, Data: w.Data},
			store.Condition{MustNotExist: true}))
	}
	err = applyAll(ctx, s, ops, func(op store.Op, ce *store.ConditionError) error {
		return c.stageConflict(ctx, s, id, started, op, ce)
	})
	if err == nil && c.hooks != nil && c.hooks.afterStage != nil {
		err = c.hooks.afterStage()
	}
	if err != nil {
		c.abandon(ctx, s, id, manifest)
		return err
	}

	stopRenewing()
	pending, _ := json.Marshal(revPending{Import: id})
	importing, committed := revImporting, importCommitted
	err = s.Transact(ctx, []store.Op{
		store.Update(revisionKey, revCond, store.Changes{Status: &importing, Data: pending, Add: map[string]int64{"writes": 1}}),
		store.Update(importKey(id), store.Condition{StatusIn: []string{importStaging}}, store.Changes{Status: &committed}),
	})
	if errors.Is(err, store.ErrConditionFailed) {
		c.abandon(ctx, s, id, manifest)
		return errRestart
	}
	if err != nil {
		// Whether the flip happened is unknown: the next reader settles
		// it either way, and the janitor collects it if it did not. A
		// request cut short gives its numbers back now (abandon aborts
		// only a record still staging: a flip that committed is left to
		// roll forward).
		if ctx.Err() != nil {
			c.abandon(ctx, s, id, manifest)
		}
		return fmt.Errorf("catalog: publishing import %s: %w", id, err)
	}
	if c.hooks != nil && c.hooks.afterFlip != nil {
		if err := c.hooks.afterFlip(); err != nil {
			return err
		}
	}
	data := make(map[Ref][]byte, len(writes))
	for _, w := range writes {
		data[w.Ref] = w.Data
	}
	return c.finish(ctx, s, revCond.Version+1, id, manifest, data)
}

// stageConflict handles a staged version item that could not be written
// because its key is taken. A version left by an import that was aborted or
// went stale, or by a live import that started after this one, is
// reclaimed (that import is aborted first); a version another writer just
// committed, or one staged by a live import that started before this one,
// means this import lost: it gives way and starts again from a fresh read.
// The oldest of several imports staging at once therefore always goes on,
// so they cannot keep aborting each other.
func (c *Catalog) stageConflict(ctx context.Context, s store.Store, id string, started int64, op store.Op, ce *store.ConditionError) error {
	cur := ce.Current
	if cur == nil || !strings.HasPrefix(cur.Status, stagedPrefix) {
		return errRestart
	}
	other := strings.TrimPrefix(cur.Status, stagedPrefix)
	if other == id {
		return nil // written by an earlier try of this batch
	}
	rec, err := s.Get(ctx, importKey(other))
	switch {
	case errors.Is(err, store.ErrNotFound):
	case err != nil:
		return err
	case rec.Status == importCommitted:
		return errRestart // published meanwhile: this import read an old catalog
	case c.importLive(rec, c.clock()) && older(rec.Counter("started"), other, started, id):
		return errRestart // a live import that came first: let it finish
	}
	if err := c.reclaim(ctx, s, other, op.Key, cur.Status); err != nil {
		return err
	}
	if _, err := s.Write(ctx, op); err != nil {
		if errors.Is(err, store.ErrConditionFailed) {
			return errRestart
		}
		return err
	}
	return nil
}

// renewWhileStaging renews import id's lease until the returned stop is
// called (any number of times). A renewal that fails is left to the next
// tick: at worst the lease runs out and the import loses its flip.
func (c *Catalog) renewWhileStaging(ctx context.Context, s store.Store, id string) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		tick := time.NewTicker(c.renewEvery)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			_, err := s.Write(ctx, store.Update(importKey(id), store.Condition{StatusIn: []string{importStaging}},
				store.Changes{Set: map[string]int64{"renewed": c.clock().UnixMilli()}}))
			if errors.Is(err, store.ErrConditionFailed) {
				return // aborted by another import, or flipped: nothing to keep alive
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			close(done)
			<-finished
		})
	}
}

// importLive reports whether the import record rec belongs to an importer
// that may still publish it: it is staging, its lease (or, for a record
// without one, StaleImportAfter) has not run out at now, and, when this
// process is the store's sole writer, this process wrote it.
func (c *Catalog) importLive(rec store.Item, now time.Time) bool {
	if rec.Status != importStaging {
		return false
	}
	if c.soleWriter {
		var o importOwner
		if json.Unmarshal(rec.Data, &o) != nil || o.Owner != c.owner {
			return false // staged by a process that no longer runs
		}
	}
	if renewed := rec.Counter("renewed"); renewed != 0 {
		return now.Sub(time.UnixMilli(renewed)) < StagingLease
	}
	return now.Sub(time.Unix(rec.Counter("started"), 0)) < StaleImportAfter
}

// older reports whether the import (startedA, a) came before (startedB, b):
// by start time in seconds, then by id.
func older(startedA int64, a string, startedB int64, b string) bool {
	if startedA != startedB {
		return startedA < startedB
	}
	return a < b
}

// reclaim deletes a version item staged by import other, after making sure
// that import can no longer be published (its record aborted, or gone).
func (c *Catalog) reclaim(ctx context.Context, s store.Store, other string, k store.Key, status string) error {
	if err := abortImport(ctx, s, other); err != nil {
		return err
	}
	_, err := s.Write(ctx, store.Delete(k, store.Condition{StatusIn: []string{status}}))
	if errors.Is(err, store.ErrConditionFailed) {
		return nil
	}
	return err
}

// abortImport moves a staging import to aborted, so that its flip can never
// happen. A committed import cannot be aborted: errRestart says so.
func abortImport(ctx context.Context, s store.Store, id string) error {
	aborted := importAborted
	_, err := s.Write(ctx, store.Update(importKey(id), store.Condition{StatusIn: []string{importStaging}}, store.Changes{Status: &aborted}))
	var ce *store.ConditionError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ce) && ce.Current == nil:
		// No record: already collected. Update would have created it, but
		// the condition kept it from doing so.
		return nil
	case errors.As(err, &ce) && ce.Current.Status == importAborted:
		return nil
	case errors.As(err, &ce):
		return errRestart
	}
	return err
}

// reclaimStaged handles a refused one-transaction write: where a version item
// it wanted to create is held by a staged import, that import is aborted and
// the item deleted, so the retry can go through. An import still staging
// loses to a write that fits in one transaction (it would lose the flip to it
// anyway).
func (c *Catalog) reclaimStaged(ctx context.Context, s store.Store, err error) error {
	var te *store.TransactionError
	if !errors.As(err, &te) {
		return nil
	}
	for _, r := range te.Reasons {
		var ce *store.ConditionError
		if !errors.As(r, &ce) || ce.Current == nil || !strings.HasPrefix(ce.Current.Status, stagedPrefix) {
			continue
		}
		if !strings.HasPrefix(ce.Key.PK, "CAT#") || strings.Count(ce.Key.PK, "#") < 2 {
			continue
		}
		other := strings.TrimPrefix(ce.Current.Status, stagedPrefix)
		if err := c.reclaim(ctx, s, other, ce.Key, ce.Current.Status); err != nil && !errors.Is(err, errRestart) {
			return err
		}
	}
	return nil
}

// abandon gives up import id before its flip: its record is aborted and what
// it staged deleted. It is best effort: what it cannot delete, the janitor
// collects.
//
// It runs on a context of its own: an import is most often abandoned
// because its request was cut short (ctx cancelled), and the writes that
// give its version numbers back must still happen then. Left undone, the
// record stays staging with this process as owner and a fresh lease, so
// every import of the tenant gives way to it (ErrBusy) until the lease
// runs out.
func (c *Catalog) abandon(ctx context.Context, s store.Store, id string, manifest []manifestEntry) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), abandonTimeout)
	defer cancel()
	if abortImport(ctx, s, id) != nil {
		return
	}
	_, _ = purgeImport(ctx, s, id, manifest)
}

// purgeImport deletes what an aborted import staged (only items still staged
// by it), its manifest and its record. It returns how many staged versions
// it deleted.
func purgeImport(ctx context.Context, s store.Store, id string, manifest []manifestEntry) (int, error) {
	staged := stagedPrefix + id
	ops := make([]store.Op, 0, len(manifest))
	for _, e := range manifest {
		ops = append(ops, store.Delete(versionKey(e.Kind, e.Name, e.Version), store.Condition{StatusIn: []string{staged}}))
	}
	n := 0
	err := applyAllCounting(ctx, s, ops, &n, func(store.Op, *store.ConditionError) error { return nil })
	if err != nil {
		return n, err
	}
	return n, dropImportRecord(ctx, s, id)
}

// dropImportRecord deletes an import's manifest pages, then its record.
func dropImportRecord(ctx context.Context, s store.Store, id string) error {
	if err := deletePartition(ctx, s, manifestPK(id)); err != nil {
		return err
	}
	_, err := s.Write(ctx, store.Delete(importKey(id), store.Condition{}))
	return err
}

// finish rolls a published import forward: every entity head names its new
// version, then the revision (still at version rev, importing id) goes back
// to idle, and the record and manifest are deleted. Any number of readers
// may run it at once: each head write is conditional and a head already
// rolled forward is left alone. data holds the staged bodies when the
// importer itself finishes; a nil map reads them from the version items.
func (c *Catalog) finish(ctx context.Context, s store.Store, rev int64, id string, manifest []manifestEntry, data map[Ref][]byte) error {
	if manifest == nil {
		var err error
		if manifest, err = readManifest(ctx, s, id); err != nil {
			return err
		}
	}
	ops := make([]store.Op, 0, len(manifest))
	for _, e := range manifest {
		body, ok := data[Ref{Kind: e.Kind, Name: e.Name}]
		if !ok {
			it, err := s.Get(ctx, versionKey(e.Kind, e.Name, e.Version))
			if err != nil {
				return fmt.Errorf("catalog: rolling import %s forward: reading %s %q version %d: %w", id, singular(e.Kind), e.Name, e.Version, err)
			}
			body = it.Data
		}
		cond := store.Condition{MustNotExist: true}
		if e.Head != 0 {
			cond = store.Condition{Version: e.Head}
		}
		ops = append(ops, store.Put(store.Item{Key: headKey(e.Kind, e.Name), Status: statusLive,
			Counters: map[string]int64{counterLatest: int64(e.Version)}, Data: body}, cond))
	}
	err := applyAll(ctx, s, ops, func(op store.Op, ce *store.ConditionError) error {
		if ce.Current != nil && ce.Current.Counter(counterLatest) >= op.Item.Counters[counterLatest] {
			return nil // rolled forward already
		}
		return fmt.Errorf("catalog: rolling import %s forward: %s changed outside the import", id, op.Key)
	})
	if err != nil {
		return err
	}
	idle := revIdle
	_, err = s.Write(ctx, store.Update(revisionKey, store.Condition{Version: rev, StatusIn: []string{revImporting}}, store.Changes{Status: &idle}))
	if err != nil && !errors.Is(err, store.ErrConditionFailed) {
		return fmt.Errorf("catalog: closing import %s: %w", id, err)
	}
	return dropImportRecord(ctx, s, id)
}

// settle returns the tenant's revision item (the zero Item when the catalog
// was never written), first finishing a published import that is still
// rolling forward. Every read of the catalog starts with it.
func (c *Catalog) settle(ctx context.Context, s store.Store) (store.Item, error) {
	for range maxWriteAttempts {
		rev, err := s.Get(ctx, revisionKey)
		if errors.Is(err, store.ErrNotFound) {
			return store.Item{}, nil
		}
		if err != nil {
			return store.Item{}, err
		}
		if rev.Status != revImporting {
			return rev, nil
		}
		var p revPending
		if err := json.Unmarshal(rev.Data, &p); err != nil || p.Import == "" {
			return store.Item{}, fmt.Errorf("catalog: the revision names an import heddle cannot read: %q", rev.Data)
		}
		if err := c.finish(ctx, s, rev.Version, p.Import, nil, nil); err != nil {
			return store.Item{}, err
		}
	}
	return store.Item{}, ErrBusy
}

// snapshot runs read against one revision of the catalog: it settles, reads,
// and reads again when the revision moved meanwhile, so that a read of many
// items (a page, an export) never mixes two catalogs.
func (c *Catalog) snapshot(ctx context.Context, s store.Store, read func() error) error {
	for range maxWriteAttempts {
		before, err := c.settle(ctx, s)
		if err != nil {
			return err
		}
		if err := read(); err != nil {
			return err
		}
		after, err := s.Get(ctx, revisionKey)
		if errors.Is(err, store.ErrNotFound) && before.Version == 0 {
			return nil
		}
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
		if after.Version == before.Version {
			return nil
		}
	}
	return ErrBusy
}

func manifestPages(entries []manifestEntry) ([][]byte, error) {
	var pages [][]byte
	for start := 0; start < len(entries); {
		end, size := start, 2
		for end < len(entries) {
			b, err := json.Marshal(entries[end])
			if err != nil {
				return nil, err
			}
			if end > start && size+len(b)+1 > manifestPageBytes {
				break
			}
			size += len(b) + 1
			end++
		}
		p, err := json.Marshal(entries[start:end])
		if err != nil {
			return nil, err
		}
		pages = append(pages, p)
		start = end
	}
	return pages, nil
}

func readManifest(ctx context.Context, s store.Store, id string) ([]manifestEntry, error) {
	var out []manifestEntry
	cursor := ""
	for {
		page, err := s.Query(ctx, manifestPK(id), store.Query{Cursor: cursor, Limit: store.MaxPageSize})
		if err != nil {
			return nil, fmt.Errorf("catalog: reading the manifest of import %s: %w", id, err)
		}
		for _, it := range page.Items {
			var es []manifestEntry
			if err := json.Unmarshal(it.Data, &es); err != nil {
				return nil, fmt.Errorf("catalog: the manifest of import %s is unreadable: %w", id, err)
			}
			out = append(out, es...)
		}
		if page.Next == "" {
			return out, nil
		}
		cursor = page.Next
	}
}

// applyAll writes ops in transactions of at most store.MaxTransactItems items
// and store.MaxTransactBytes. A transaction refused on a condition is written
// again op by op, and each op refused is passed to conflict, which returns
// nil to go on; with a nil conflict, a refusal is an error.
func applyAll(ctx context.Context, s store.Store, ops []store.Op, conflict func(store.Op, *store.ConditionError) error) error {
	return applyAllCounting(ctx, s, ops, nil, conflict)
}

// applyAllCounting is applyAll that adds to *applied the ops that were
// written (when applied is not nil).
func applyAllCounting(ctx context.Context, s store.Store, ops []store.Op, applied *int, conflict func(store.Op, *store.ConditionError) error) error {
	count := func(n int) {
		if applied != nil {
			*applied += n
		}
	}
	for start := 0; start < len(ops); {
		end, size := start, 0
		for end < len(ops) && end-start < store.MaxTransactItems {
			n := store.TransactSize(ops[end : end+1])
			if end > start && size+n > store.MaxTransactBytes {
				break
			}
			size += n
			end++
		}
		batch := ops[start:end]
		start = end
		err := s.Transact(ctx, batch)
		if err == nil {
			count(len(batch))
			continue
		}
		if !errors.Is(err, store.ErrConditionFailed) {
			return err
		}
		for _, op := range batch {
			_, err := s.Write(ctx, op)
			if err == nil {
				count(1)
				continue
			}
			var ce *store.ConditionError
			if !errors.As(err, &ce) || conflict == nil {
				return err
			}
			if err := conflict(op, ce); err != nil {
				return err
			}
		}
	}
	return nil
}

// backoff sleeps before a staged import starts again, longer at each
// attempt (50 ms to 1 s, jittered), so that an import that gave way to an
// older one comes back once that one is likely published.
func backoff(ctx context.Context, attempt int) {
	d := min(time.Duration(50+mrand.IntN(100))*time.Millisecond*time.Duration(attempt+1), time.Second)
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// CollectStaged finishes or clears the tenant's imports that were left
// behind: a published import still rolling forward is finished; one aborted,
// or staging with its lease run out at now (its writer is gone, see
// importLive), loses what it staged. It returns the number of staged
// versions deleted. The janitor calls it hourly for every tenant.
func (c *Catalog) CollectStaged(ctx context.Context, tenant string, now time.Time) (int, error) {
	return c.collect(ctx, c.scoped(tenant), now)
}

// CollectStagedAll is CollectStaged for each of the tenants; it goes on past
// a tenant that fails and returns the first error.
func (c *Catalog) CollectStagedAll(ctx context.Context, tenants []string, now time.Time) (int, error) {
	total := 0
	var first error
	for _, t := range tenants {
		n, err := c.CollectStaged(ctx, t, now)
		total += n
		if err != nil && first == nil {
			first = fmt.Errorf("collecting staged imports of tenant %s: %w", t, err)
		}
	}
	return total, first
}

// collect aborts and purges the imports no longer live at now, purges the
// aborted ones and finishes the published ones.
func (c *Catalog) collect(ctx context.Context, s store.Store, now time.Time) (int, error) {
	if _, err := c.settle(ctx, s); err != nil {
		return 0, err
	}
	var records []store.Item
	cursor := ""
	for {
		page, err := s.Query(ctx, importsPK, store.Query{Cursor: cursor, Limit: store.MaxPageSize})
		if err != nil {
			return 0, err
		}
		records = append(records, page.Items...)
		if page.Next == "" {
			break
		}
		cursor = page.Next
	}
	deleted := 0
	for _, rec := range records {
		id := rec.SK
		switch rec.Status {
		case importStaging:
			if c.importLive(rec, now) {
				continue
			}
			if err := abortImport(ctx, s, id); errors.Is(err, errRestart) {
				continue // published meanwhile
			} else if err != nil {
				return deleted, err
			}
		case importAborted:
		case importCommitted:
			// settle above finished it unless it was published since;
			// what is left is its record, once the revision moved on.
			rev, err := c.settle(ctx, s)
			if err != nil {
				return deleted, err
			}
			if rev.Status != revImporting {
				if err := dropImportRecord(ctx, s, id); err != nil {
					return deleted, err
				}
			}
			continue
		default:
			continue // a status of a newer format: not ours to touch
		}
		manifest, err := readManifest(ctx, s, id)
		if err != nil {
			return deleted, err
		}
		n, err := purgeImport(ctx, s, id, manifest)
		deleted += n
		if err != nil {
			return deleted, err
		}
	}
	return deleted, nil
}
