package catalog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/store"
)

// MaxEntityBytes is the largest encoded entity the catalog writes: one store
// item holds at most 400 KB (DynamoDB's limit, which boltstore enforces too),
// and 1 KiB of it is kept for the keys, status, version and counters.
const MaxEntityBytes = 400*1024 - 1024

// EntityTooLargeError refuses an entity whose stored form would not fit in
// one store item. It matches ErrTooLarge with errors.Is.
type EntityTooLargeError struct {
	Kind  domain.Kind
	Name  string
	Bytes int // the entity's encoded size
}

func (e *EntityTooLargeError) Error() string {
	if e.Kind == domain.KindScript {
		return fmt.Sprintf("script %q would take %d bytes once stored, but one catalog entity holds at most %d: "+
			"its text is stored as a JSON string, where <, >, & and control characters take 6 bytes each; shorten it",
			e.Name, e.Bytes, MaxEntityBytes)
	}
	return fmt.Sprintf("%s %q would take %d bytes once stored, but one catalog entity holds at most %d; "+
		"shorten its longest fields (upload long scripts as a versioned script resource instead of inlining them)",
		singular(e.Kind), e.Name, e.Bytes, MaxEntityBytes)
}

// Is makes errors.Is(err, ErrTooLarge) hold.
func (e *EntityTooLargeError) Is(target error) bool { return target == ErrTooLarge }

// writeTx gathers one catalog change: what it read (to condition on) and the
// ops it will commit together with the revision bump.
type writeTx struct {
	ctx     context.Context
	c       *Catalog
	tenant  string
	s       store.Store
	heads   map[Ref]*store.Item
	pending map[Ref]domain.Entity // entities this transaction writes, for lookups
	ops     []store.Op
	writes  []entityWrite // the entity versions ops writes, for a staged import
	// versions holds the version each entity put leaves latest (written or
	// unchanged), for the rules that check pinned versions (see rules.go).
	versions map[Ref]int
	// paths holds, for an import, each entity's place in the document, so
	// that a rule checked once for the whole write names the field there.
	paths map[Ref]string
}

// write runs fn against a fresh view of the tenant's catalog and commits its
// ops with a conditional revision bump, retrying from the start when another
// writer got in first. Ops that fit in one store transaction (up to 49
// entities, 4 MB) are committed in one; more are staged and published with
// one small conditional write (importStaged), all or nothing all the same.
func (c *Catalog) write(ctx context.Context, tenant string, fn func(*writeTx) error) error {
	s := c.scoped(tenant)
	for attempt := range maxWriteAttempts {
		rev, err := c.settle(ctx, s)
		if err != nil {
			return err
		}
		revCond := store.Condition{Version: rev.Version}
		if rev.Version == 0 {
			revCond = store.Condition{MustNotExist: true}
		}
		tx := &writeTx{ctx: ctx, c: c, tenant: tenant, s: s, heads: map[Ref]*store.Item{}, pending: map[Ref]domain.Entity{},
			versions: map[Ref]int{}, paths: map[Ref]string{}}
		if err := fn(tx); err != nil {
			return err
		}
		if err := tx.checkServiceCycles(); err != nil {
			return err
		}
		if len(tx.ops) == 0 {
			return nil
		}
		ops := append([]store.Op{store.Update(revisionKey, revCond, store.Changes{Add: map[string]int64{"writes": 1}})}, tx.ops...)
		if len(ops) > store.MaxTransactItems || store.TransactSize(ops) > store.MaxTransactBytes {
			err = c.importStaged(ctx, s, revCond, tx.writes)
			if errors.Is(err, errRestart) {
				backoff(ctx, attempt)
				continue
			}
			return err
		}
		err = s.Transact(ctx, ops)
		if errors.Is(err, store.ErrConditionFailed) {
			if err := c.reclaimStaged(ctx, s, err); err != nil {
				return err
			}
			continue
		}
		return err
	}
	return ErrBusy
}

// head returns the entity's head item, or nil when it never existed.
func (tx *writeTx) head(k domain.Kind, name string) (*store.Item, error) {
	ref := Ref{Kind: k, Name: name}
	if it, ok := tx.heads[ref]; ok {
		return it, nil
	}
	it, err := tx.s.Get(tx.ctx, headKey(k, name))
	if errors.Is(err, store.ErrNotFound) {
		tx.heads[ref] = nil
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	tx.heads[ref] = &it
	return &it, nil
}

// live reports whether ref names an entity that exists, in the store or among
// this transaction's own writes.
func (tx *writeTx) live(ref Ref) (bool, error) {
	kinds := []domain.Kind{ref.Kind}
	if ref.Kind == extendsKind {
		kinds = []domain.Kind{domain.KindClusterTemplate, domain.KindPartialTemplate}
	}
	for _, k := range kinds {
		if _, ok := tx.pending[Ref{Kind: k, Name: ref.Name}]; ok {
			return true, nil
		}
		h, err := tx.head(k, ref.Name)
		if err != nil {
			return false, err
		}
		if h != nil && h.Status == statusLive {
			return true, nil
		}
	}
	return false, nil
}

// put stages e as the next version of its entity. It returns the entity as
// it will be stored: e itself, or for a provider with a registry configured
// a copy with its sensitive fields sealed (see prepareProvider).
// Outcome says what a write did to an entity. The API answers it in the
// Heddle-Outcome header of a PUT, and an import lists entities under each.
type Outcome string

const (
	putRefused       Outcome = ""          // with an error
	OutcomeCreated   Outcome = "created"   // a new entity (or one deleted before)
	OutcomeUpdated   Outcome = "updated"   // a new version of a live entity
	OutcomeUnchanged Outcome = "unchanged" // the same content as the latest version: nothing written
)

func (tx *writeTx) put(e domain.Entity, ifMatch string) (stored domain.Entity, outcome Outcome, err error) {
	k, meta := e.EntityKind(), e.EntityMeta()
	head, err := tx.head(k, meta.Name)
	if err != nil {
		return nil, putRefused, err
	}
	isLive := head != nil && head.Status == statusLive
	if ifMatch != "" {
		// If-Match asks to change an existing entity: with none there is
		// nothing to match (404, as for any other call naming it).
		if !isLive {
			return nil, putRefused, fmt.Errorf("%w: %s %q", ErrNotFound, singular(k), meta.Name)
		}
		if ifMatch != "*" && ifMatch != ETag(int(head.Counter(counterLatest))) {
			return nil, putRefused, ErrPrecondition
		}
	}
	if p, ok := e.(*domain.Provider); ok && tx.c.providers != nil {
		var prev *store.Item
		if isLive {
			prev = head
		}
		if p, err = tx.prepareProvider(p, prev); err != nil {
			return nil, putRefused, err
		}
		e, meta = p, p.EntityMeta()
	}
	var ps domain.Problems
	for _, r := range references(e) {
		ok, err := tx.live(r.Ref)
		if err != nil {
			return nil, putRefused, err
		}
		if !ok {
			kind := singular(r.Kind)
			if r.Kind == extendsKind {
				kind = "template"
			}
			ps = append(ps, domain.Problem{Field: r.Field, Code: domain.CodeUnknownRef,
				Message: fmt.Sprintf("names %s %q, which does not exist; create it first or fix the name", kind, r.Name)})
		}
	}
	if len(ps) > 0 {
		return nil, putRefused, ps
	}
	latest := 0
	cond := store.Condition{MustNotExist: true}
	if head != nil {
		latest = int(head.Counter(counterLatest))
		cond = store.Condition{Version: head.Version}
	}
	if isLive {
		// Writing what is already the latest version changes nothing, so that
		// applying the same document twice is a no-op.
		meta.Version = latest
		if same, err := json.Marshal(e); err == nil && string(same) == string(head.Data) {
			tx.pending[Ref{Kind: k, Name: meta.Name}] = e
			tx.versions[Ref{Kind: k, Name: meta.Name}] = latest
			return e, OutcomeUnchanged, nil
		}
	}
	meta.Version = latest + 1
	tx.pending[Ref{Kind: k, Name: meta.Name}] = e
	tx.versions[Ref{Kind: k, Name: meta.Name}] = meta.Version
	if t, ok := e.(*domain.ClusterTemplate); ok {
		resolved, err := Resolve(t, tx.c.lookup(tx.ctx, tx.tenant, tx.pending))
		if err != nil {
			return nil, putRefused, err
		}
		if err := tx.checkTemplateServices(resolved); err != nil {
			return nil, putRefused, err
		}
	}
	if err := tx.checkEntity(e); err != nil {
		return nil, putRefused, err
	}
	data, err := json.Marshal(e)
	if err != nil {
		return nil, putRefused, err
	}
	if len(data) > MaxEntityBytes {
		return nil, putRefused, &EntityTooLargeError{Kind: k, Name: meta.Name, Bytes: len(data)}
	}
	live := statusLive
	hk := headKey(k, meta.Name)
	w := entityWrite{Ref: Ref{Kind: k, Name: meta.Name}, Version: meta.Version, Data: data}
	if head != nil {
		w.Head = head.Version
	}
	tx.writes = append(tx.writes, w)
	tx.ops = append(tx.ops,
		store.Put(store.Item{Key: hk, Status: live, Counters: map[string]int64{counterLatest: int64(meta.Version)}, Data: data}, cond),
		store.Put(store.Item{Key: versionKey(k, meta.Name, meta.Version), Data: data}, store.Condition{MustNotExist: true}),
	)
	if !isLive {
		return e, OutcomeCreated, nil
	}
	return e, OutcomeUpdated, nil
}

// referrers lists the live entities (templates; services for a script) and
// clusters that refer to the entity.
func (tx *writeTx) referrers(k domain.Kind, name string) ([]Ref, error) {
	var out []Ref
	scan := []domain.Kind{domain.KindClusterTemplate, domain.KindPartialTemplate}
	if k == domain.KindScript {
		scan = []domain.Kind{domain.KindService} // only services name scripts
	}
	for _, tk := range scan {
		cursor := ""
		for {
			page, err := tx.s.Query(tx.ctx, "CAT#"+string(tk), store.Query{Cursor: cursor, Limit: store.MaxPageSize})
			if err != nil {
				return nil, err
			}
			for _, it := range page.Items {
				if it.Status != statusLive || (tk == k && it.SK == name) {
					continue
				}
				e, err := decodeEntity(tk, it.Data)
				if err != nil {
					return nil, err
				}
				for _, r := range references(e) {
					if r.matches(k, name) {
						out = append(out, Ref{Kind: tk, Name: it.SK})
						break
					}
				}
			}
			if page.Next == "" {
				break
			}
			cursor = page.Next
		}
	}
	if tx.c.clusters != nil {
		clusters, err := tx.c.clusters(tx.ctx, tx.tenant)
		if err != nil {
			return nil, fmt.Errorf("listing clusters to check references: %w", err)
		}
		for _, cl := range clusters {
			for _, r := range clusterRefs(cl) {
				if r.Kind == k && r.Name == name {
					out = append(out, Ref{Kind: KindCluster, Name: cl.ID})
					break
				}
			}
		}
	}
	return out, nil
}
