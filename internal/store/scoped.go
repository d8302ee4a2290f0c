package store

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/heddle-io/heddle/internal/domain"
)

// Scoped returns a view of s confined to one tenant (invariant 6): every
// partition key is written as TenantPK(tenant, pk) on the way in and
// stripped on the way out (items, ConditionError keys and current items,
// TransactionError reasons), so code holding the view has no way to name
// another tenant's items. A PK that happens to look like another tenant's
// ("T#other#x") is simply nested inside this tenant's scope.
//
// Index partitions are not prefixed: the index is shared on purpose, so
// that the janitor, working on the unscoped store, finds every tenant's
// running tasks or expiring leases with one query per partition. Through the
// view, QueryIndex returns only this tenant's items; a page may therefore
// hold fewer items than its limit (even none) while Next is still set.
// Tenant code must not put anything secret in an index key.
//
// Scoped panics when tenant is not a valid name (domain.ValidName): the
// tenant comes from an authenticated caller whose name was validated when it
// was created, so an invalid one is a programming error. The name cannot
// hold '#', so no tenant's prefix is a prefix of another's.
func Scoped(s Store, tenant string) Store {
	if !domain.ValidName(tenant) {
		panic(fmt.Sprintf("store.Scoped: %q is not a valid tenant name", tenant))
	}
	return &scoped{inner: s, prefix: TenantPK(tenant, "")}
}

type scoped struct {
	inner  Store
	prefix string
}

func (s *scoped) in(k Key) Key { return Key{PK: s.prefix + k.PK, SK: k.SK} }

func (s *scoped) owns(k Key) bool { return strings.HasPrefix(k.PK, s.prefix) }

func (s *scoped) out(k Key) Key { return Key{PK: strings.TrimPrefix(k.PK, s.prefix), SK: k.SK} }

func (s *scoped) outItem(it Item) Item {
	it.Key = s.out(it.Key)
	return it
}

// inOp prefixes an op that has already been validated unprefixed: a prefix
// would make an empty PK look valid.
func (s *scoped) inOp(op Op) Op {
	op.Key = s.in(op.Key)
	if op.Kind == OpPut {
		op.Item.Key = s.in(op.Item.Key)
	}
	return op
}

// outError strips the prefix from the keys a condition error reports.
func (s *scoped) outError(err error) error {
	var ce *ConditionError
	var te *TransactionError
	switch {
	case errors.As(err, &ce):
		return s.outCondition(ce)
	case errors.As(err, &te):
		reasons := make([]error, len(te.Reasons))
		for i, r := range te.Reasons {
			if errors.As(r, &ce) {
				reasons[i] = s.outCondition(ce)
			} else {
				reasons[i] = r
			}
		}
		return &TransactionError{Reasons: reasons}
	}
	return err
}

func (s *scoped) outCondition(ce *ConditionError) *ConditionError {
	out := &ConditionError{Key: s.out(ce.Key)}
	if ce.Current != nil {
		cur := s.outItem(*ce.Current)
		out.Current = &cur
	}
	return out
}

func (s *scoped) Get(ctx context.Context, k Key) (Item, error) {
	if k.PK == "" || k.SK == "" {
		return Item{}, fmt.Errorf("%w: empty key %q", ErrInvalidOp, k)
	}
	it, err := s.inner.Get(ctx, s.in(k))
	if err != nil {
		if errors.Is(err, ErrNotFound) {
			return Item{}, fmt.Errorf("%w: %s", ErrNotFound, k)
		}
		return Item{}, err
	}
	return s.outItem(it), nil
}

func (s *scoped) Write(ctx context.Context, op Op) (Item, error) {
	if err := ValidateOp(op); err != nil {
		return Item{}, err
	}
	it, err := s.inner.Write(ctx, s.inOp(op))
	if err != nil {
		return Item{}, s.outError(err)
	}
	if it.Key == (Key{}) { // a delete
		return it, nil
	}
	return s.outItem(it), nil
}

func (s *scoped) Transact(ctx context.Context, ops []Op) error {
	if err := ValidateTransaction(ops); err != nil {
		return err
	}
	scopedOps := make([]Op, len(ops))
	for i, op := range ops {
		scopedOps[i] = s.inOp(op)
	}
	if err := s.inner.Transact(ctx, scopedOps); err != nil {
		return s.outError(err)
	}
	return nil
}

func (s *scoped) Query(ctx context.Context, pk string, q Query) (Page, error) {
	if pk == "" {
		return Page{}, fmt.Errorf("%w: empty partition key", ErrInvalidOp)
	}
	// The cursor passes through: backends bind it to the (prefixed)
	// partition, so another tenant's cursor is refused as ErrBadCursor.
	p, err := s.inner.Query(ctx, s.prefix+pk, q)
	if err != nil {
		return Page{}, err
	}
	for i, it := range p.Items {
		p.Items[i] = s.outItem(it)
	}
	return p, nil
}

func (s *scoped) QueryIndex(ctx context.Context, partition string, q IndexQuery) (Page, error) {
	p, err := s.inner.QueryIndex(ctx, partition, q)
	if err != nil {
		return Page{}, err
	}
	mine := p.Items[:0]
	for _, it := range p.Items {
		if s.owns(it.Key) {
			mine = append(mine, s.outItem(it))
		}
	}
	clear(p.Items[len(mine):]) // drop other tenants' items from the backing array
	p.Items = mine
	return p, nil
}
