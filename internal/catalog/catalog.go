package catalog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/macros"
	"github.com/heddle-io/heddle/internal/provider"
	"github.com/heddle-io/heddle/internal/secrets"
	"github.com/heddle-io/heddle/internal/store"
)

// maxWriteAttempts bounds the optimistic retry loop of one write.
const maxWriteAttempts = 8

const (
	statusLive    = "live"
	statusDeleted = "deleted"
	counterLatest = "latest"
)

// ClusterSource lists a tenant's clusters that are not TERMINATED, so a delete
// can refuse to remove what a live cluster uses. The cluster service provides
// it; a nil ClusterSource means no clusters exist.
type ClusterSource func(ctx context.Context, tenant string) ([]domain.Cluster, error)

// Catalog reads and writes tenants' catalogs.
type Catalog struct {
	store    store.Store
	clusters ClusterSource
	// providers and keyring, when set (WithProviders), validate provider
	// entities against their type and seal their sensitive fields.
	providers *provider.Registry
	keyring   *secrets.Keyring
	hooks     *importHooks // tests only
	// owner names this process in its import records; soleWriter says no
	// other process writes the store (WithSoleWriter).
	owner      string
	soleWriter bool
	// clock and renewEvery are time.Now and stagingRenewEvery, but for
	// tests.
	clock      func() time.Time
	renewEvery time.Duration
}

// New returns a Catalog over s (an unscoped store: the catalog scopes every
// call by the tenant it is given).
func New(s store.Store, clusters ClusterSource, opts ...Option) *Catalog {
	c := &Catalog{store: s, clusters: clusters, owner: processOwner, clock: time.Now, renewEvery: stagingRenewEvery}
	for _, o := range opts {
		o(c)
	}
	return c
}

func headKey(k domain.Kind, name string) store.Key {
	return store.Key{PK: "CAT#" + string(k), SK: name}
}

func versionKey(k domain.Kind, name string, v int) store.Key {
	return store.Key{PK: "CAT#" + string(k) + "#" + name, SK: fmt.Sprintf("%010d", v)}
}

var revisionKey = store.Key{PK: "CAT", SK: "REV"}

// ETag is the HTTP entity tag of an entity's version.
func ETag(version int) string { return `"` + strconv.Itoa(version) + `"` }

func (c *Catalog) scoped(tenant string) store.Store { return store.Scoped(c.store, tenant) }

// Get returns the latest live version of an entity (version 0) or the named
// version.
func (c *Catalog) Get(ctx context.Context, tenant string, k domain.Kind, name string, version int) (domain.Entity, error) {
	s := c.scoped(tenant)
	if _, err := c.settle(ctx, s); err != nil {
		return nil, err
	}
	head, err := s.Get(ctx, headKey(k, name))
	if err != nil {
		return nil, notFoundAs(err, k, name)
	}
	if head.Status != statusLive {
		return nil, fmt.Errorf("%w: %s %q", ErrNotFound, singular(k), name)
	}
	if version == 0 || int64(version) == head.Counter(counterLatest) {
		return decodeEntity(k, head.Data)
	}
	if int64(version) > head.Counter(counterLatest) {
		// A version item above the latest is staged by an import that was
		// not published (yet): not part of the catalog.
		return nil, fmt.Errorf("%w: %s %q", ErrNotFound, singular(k), fmt.Sprintf("%s version %d", name, version))
	}
	item, err := s.Get(ctx, versionKey(k, name, version))
	if err != nil {
		return nil, notFoundAs(err, k, fmt.Sprintf("%s version %d", name, version))
	}
	return decodeEntity(k, item.Data)
}

func notFoundAs(err error, k domain.Kind, name string) error {
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("%w: %s %q", ErrNotFound, singular(k), name)
	}
	return err
}

func decodeEntity(k domain.Kind, data []byte) (domain.Entity, error) {
	e := domain.NewEntity(k)
	if err := json.Unmarshal(data, e); err != nil {
		return nil, fmt.Errorf("catalog: stored %s is unreadable: %w", k, err)
	}
	return e, nil
}

// List returns one page of the latest live entities of a kind, by name.
func (c *Catalog) List(ctx context.Context, tenant string, k domain.Kind, limit int, cursor string) ([]domain.Entity, string, error) {
	s := c.scoped(tenant)
	var (
		out  []domain.Entity
		next string
	)
	err := c.snapshot(ctx, s, func() error {
		var err error
		out, next, err = listPage(ctx, s, k, limit, cursor)
		return err
	})
	return out, next, err
}

// listPage reads one page of heads, without settling (see List).
func listPage(ctx context.Context, s store.Store, k domain.Kind, limit int, cursor string) ([]domain.Entity, string, error) {
	page, err := s.Query(ctx, "CAT#"+string(k), store.Query{Limit: limit, Cursor: cursor})
	if err != nil {
		return nil, "", err
	}
	out := make([]domain.Entity, 0, len(page.Items))
	for _, it := range page.Items {
		if it.Status != statusLive {
			continue
		}
		e, err := decodeEntity(k, it.Data)
		if err != nil {
			return nil, "", err
		}
		out = append(out, e)
	}
	return out, page.Next, nil
}

// Versions returns one page of an entity's versions, newest first.
func (c *Catalog) Versions(ctx context.Context, tenant string, k domain.Kind, name string, limit int, cursor string) ([]domain.Entity, string, error) {
	latest, err := c.Get(ctx, tenant, k, name, 0)
	if err != nil {
		return nil, "", err
	}
	page, err := c.scoped(tenant).Query(ctx, versionKey(k, name, 0).PK, store.Query{Limit: limit, Cursor: cursor, Descending: true})
	if err != nil {
		return nil, "", err
	}
	out := make([]domain.Entity, 0, len(page.Items))
	for _, it := range page.Items {
		e, err := decodeEntity(k, it.Data)
		if err != nil {
			return nil, "", err
		}
		if e.EntityMeta().Version > latest.EntityMeta().Version {
			continue // staged by an import not published (yet)
		}
		out = append(out, e)
	}
	return out, page.Next, nil
}

// Put validates e and writes it as the entity's next version. ifMatch, when
// not empty, must be the ETag of the latest version (or "*" for any existing
// one). It returns the entity as stored (with a provider registry, sensitive
// provider fields sealed: pass it through Redacted before showing it) and
// whether it was new.
func (c *Catalog) Put(ctx context.Context, tenant string, e domain.Entity, ifMatch string) (domain.Entity, bool, error) {
	stored, outcome, err := c.Write(ctx, tenant, e, ifMatch)
	return stored, outcome == OutcomeCreated, err
}

// Write is Put that says what it did: created the entity, wrote its next
// version, or wrote nothing because e is what its latest version already
// holds (unchanged, the answer then being that version).
func (c *Catalog) Write(ctx context.Context, tenant string, e domain.Entity, ifMatch string) (domain.Entity, Outcome, error) {
	if ps := validate(e); len(ps) > 0 {
		return nil, putRefused, ps
	}
	var (
		stored  domain.Entity
		outcome Outcome
	)
	err := c.write(ctx, tenant, func(tx *writeTx) error {
		var err error
		stored, outcome, err = tx.put(e, ifMatch)
		return err
	})
	if err != nil {
		return nil, putRefused, err
	}
	return stored, outcome, nil
}

// WriteScriptText writes text as the next version of script name, with the
// label and description of its latest version: a bare upload (`heddle
// scripts push`, a text/plain PUT) carries a script's text and nothing else,
// so it leaves the rest as it was, and the same text again writes nothing.
// A script written whole (JSON, an import) is replaced whole, as every
// entity is.
func (c *Catalog) WriteScriptText(ctx context.Context, tenant, name, text, ifMatch string) (domain.Entity, Outcome, error) {
	sc := &domain.Script{Meta: domain.Meta{Name: name}, Content: text}
	if ps := validate(sc); len(ps) > 0 {
		return nil, putRefused, ps
	}
	var (
		stored  domain.Entity
		outcome Outcome
	)
	err := c.write(ctx, tenant, func(tx *writeTx) error {
		sc.Label, sc.Description = "", ""
		head, err := tx.head(domain.KindScript, name)
		if err != nil {
			return err
		}
		if head != nil && head.Status == statusLive {
			prev, err := decodeEntity(domain.KindScript, head.Data)
			if err != nil {
				return err
			}
			sc.Label, sc.Description = prev.EntityMeta().Label, prev.EntityMeta().Description
		}
		stored, outcome, err = tx.put(sc, ifMatch)
		return err
	})
	if err != nil {
		return nil, putRefused, err
	}
	return stored, outcome, nil
}

// validate checks e on its own, its macros included: a macro that does not
// parse is refused when it is written, not when a cluster first expands it.
// A script's Size and SHA256 are derived from its content on the way out
// (see Redacted); what a client sent in them is not stored.
func validate(e domain.Entity) domain.Problems {
	if s, ok := e.(*domain.Script); ok {
		s.Size, s.SHA256 = 0, ""
	}
	return append(e.Validate(), macros.EntityProblems(e)...)
}

// Script returns a version of a script resource for the shell automator:
// version 0 is the latest live one; a numbered version is returned even
// once the script is deleted, because versions never change and a cluster
// that pinned one when it was planned keeps running it (a delete only
// stops new references).
func (c *Catalog) Script(ctx context.Context, tenant, name string, version int) (*domain.Script, error) {
	if version == 0 {
		e, err := c.Get(ctx, tenant, domain.KindScript, name, 0)
		if err != nil {
			return nil, err
		}
		return e.(*domain.Script), nil
	}
	s := c.scoped(tenant)
	item, err := s.Get(ctx, versionKey(domain.KindScript, name, version))
	if err != nil {
		return nil, notFoundAs(err, domain.KindScript, fmt.Sprintf("%s version %d", name, version))
	}
	if strings.HasPrefix(item.Status, stagedPrefix) {
		// Staged by an import: part of the catalog only once its head
		// names it (or a later version).
		if _, err := c.settle(ctx, s); err != nil {
			return nil, err
		}
		head, err := s.Get(ctx, headKey(domain.KindScript, name))
		if err != nil || head.Counter(counterLatest) < int64(version) {
			return nil, fmt.Errorf("%w: %s %q", ErrNotFound, singular(domain.KindScript), fmt.Sprintf("%s version %d", name, version))
		}
	}
	e, err := decodeEntity(domain.KindScript, item.Data)
	if err != nil {
		return nil, err
	}
	return e.(*domain.Script), nil
}

// Delete removes an entity (all versions become unreadable) unless a live
// entity or cluster refers to it.
func (c *Catalog) Delete(ctx context.Context, tenant string, k domain.Kind, name, ifMatch string) error {
	return c.write(ctx, tenant, func(tx *writeTx) error {
		head, err := tx.head(k, name)
		if err != nil {
			return err
		}
		if head == nil || head.Status != statusLive {
			return fmt.Errorf("%w: %s %q", ErrNotFound, singular(k), name)
		}
		if ifMatch != "" && ifMatch != "*" && ifMatch != ETag(int(head.Counter(counterLatest))) {
			return ErrPrecondition
		}
		referrers, err := tx.referrers(k, name)
		if err != nil {
			return err
		}
		if len(referrers) > 0 {
			return &ReferencedError{Kind: k, Name: name, Referrers: referrers}
		}
		deleted := statusDeleted
		tx.ops = append(tx.ops, store.Update(head.Key, store.Condition{Version: head.Version}, store.Changes{Status: &deleted}))
		return nil
	})
}

// Resolve returns the named cluster template (latest when version is 0)
// merged with what it extends and includes.
func (c *Catalog) Resolve(ctx context.Context, tenant, name string, version int) (*domain.ClusterTemplate, error) {
	e, err := c.Get(ctx, tenant, domain.KindClusterTemplate, name, version)
	if err != nil {
		return nil, err
	}
	return Resolve(e.(*domain.ClusterTemplate), c.lookup(ctx, tenant, nil))
}

// Revision returns the tenant's catalog revision: it changes with every
// catalog write, so a writer that resolved against revision r can condition
// its own transaction on it (see RevisionCheck).
func (c *Catalog) Revision(ctx context.Context, tenant string) (int64, error) {
	it, err := c.settle(ctx, c.scoped(tenant))
	return it.Version, err
}

// RevisionCheck is a transaction op (on the tenant's scoped store) that holds
// only while the catalog is still at revision rev.
func RevisionCheck(rev int64) store.Op {
	if rev == 0 {
		return store.Check(revisionKey, store.Condition{MustNotExist: true})
	}
	return store.Check(revisionKey, store.Condition{Version: rev})
}

// lookup finds templates for Resolve: first among pending (entities of an
// import not yet written), then in the store.
func (c *Catalog) lookup(ctx context.Context, tenant string, pending map[Ref]domain.Entity) LookupFunc {
	return func(k domain.Kind, ref domain.TemplateRef) (Layer, error) {
		var e domain.Entity
		if p, ok := pending[Ref{Kind: k, Name: ref.Name}]; ok && (ref.Version == 0 || ref.Version == p.EntityMeta().Version) {
			e = p
		} else {
			var err error
			if e, err = c.Get(ctx, tenant, k, ref.Name, ref.Version); err != nil {
				return Layer{}, err
			}
		}
		switch t := e.(type) {
		case *domain.ClusterTemplate:
			return Layer{Kind: k, Name: t.Name, Version: t.Version, Sections: t.TemplateSections}, nil
		case *domain.PartialTemplate:
			return Layer{Kind: k, Name: t.Name, Version: t.Version, Immutable: t.Immutable, Sections: t.TemplateSections}, nil
		}
		return Layer{}, fmt.Errorf("%w: %s is not a template", ErrNotFound, ref.Name)
	}
}
