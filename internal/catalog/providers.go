package catalog

import (
	"fmt"
	"maps"
	"slices"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/provider"
	"github.com/heddle-io/heddle/internal/secrets"
	"github.com/heddle-io/heddle/internal/store"
)

// Option configures a Catalog.
type Option func(*Catalog)

// WithSoleWriter says this process is the only one that writes the store
// (the local server's embedded store, which bbolt locks to one process). A
// staging import another process recorded is then known dead at once, and
// the next import takes its version numbers back without waiting for its
// lease (StagingLease) to run out.
func WithSoleWriter() Option { return func(c *Catalog) { c.soleWriter = true } }

// WithProviders makes the catalog check every provider entity it writes
// against its type in reg (422 with paths "providerType" and
// "fields.<name>") and seal the type's sensitive fields with kr before
// storing them. Without it (or with a nil reg) providers are stored as
// given, as a catalog-only deployment with no provider plugins does. A
// registry without a keyring is a programming error.
func WithProviders(reg *provider.Registry, kr *secrets.Keyring) Option {
	if reg != nil && kr == nil {
		panic("catalog: WithProviders needs a keyring to seal sensitive provider fields")
	}
	return func(c *Catalog) { c.providers, c.keyring = reg, kr }
}

// Redacted returns e fit for an API response: a provider's sensitive
// fields (and any sealed value) read secrets.Redacted, so a client sees that
// a value is set but neither the plaintext nor the sealed blob. Other kinds
// come back as they are. Get, List, Versions and Export return the stored
// form, sealed values included, for heddle's own use (cluster creation
// copies them into the cluster spec); every API read passes through this.
func (c *Catalog) Redacted(e domain.Entity) domain.Entity {
	if s, ok := e.(*domain.Script); ok && s != nil {
		out := *s
		out.Describe()
		return &out
	}
	p, ok := e.(*domain.Provider)
	if !ok || p == nil {
		return e
	}
	var out domain.Provider
	if c.providers != nil {
		out = c.providers.Redact(*p)
	} else {
		out = *p
		out.Fields = maps.Clone(p.Fields)
		for name, v := range out.Fields {
			if secrets.IsSealed(v) {
				out.Fields[name] = secrets.Redacted
			}
		}
	}
	return &out
}

// RedactedDocument returns a copy of d whose providers are Redacted.
func (c *Catalog) RedactedDocument(d *Document) *Document {
	out := *d
	out.Providers = make([]*domain.Provider, len(d.Providers))
	for i, p := range d.Providers {
		out.Providers[i] = c.Redacted(p).(*domain.Provider)
	}
	if len(d.Providers) == 0 {
		out.Providers = d.Providers
	}
	return &out
}

// prepareProvider returns the form of in that the catalog stores, when it has
// a provider registry: a copy (the caller's entity is never changed, so a
// retried transaction starts again from what the client sent) in which
//   - a field sent as secrets.Redacted (a form or an export sent back
//     unchanged) keeps the value the latest live version stores;
//   - a sensitive field whose plaintext equals what the stored sealed value
//     opens to keeps that sealed value, so writing the same provider again
//     is a no-op even though every sealing uses a fresh data key and nonce;
//   - every other sensitive value is sealed, bound to the tenant, the
//     provider and the field.
//
// The fields are validated against the provider type first. prev is the
// latest live version's head item, or nil.
func (tx *writeTx) prepareProvider(in *domain.Provider, prev *store.Item) (*domain.Provider, error) {
	reg, kr := tx.c.providers, tx.c.keyring
	p := *in
	p.Fields = maps.Clone(in.Fields)
	var stored map[string]string
	if prev != nil {
		e, err := decodeEntity(domain.KindProvider, prev.Data)
		if err != nil {
			return nil, err
		}
		stored = e.(*domain.Provider).Fields
	}
	var ps domain.Problems
	for _, name := range slices.Sorted(maps.Keys(p.Fields)) {
		v, old := p.Fields[name], stored[name]
		switch {
		case v == secrets.Redacted && old != "":
			p.Fields[name] = old
		case v == secrets.Redacted:
			ps = append(ps, domain.Problem{Field: "fields." + name, Code: domain.CodeRequired,
				Message: fmt.Sprintf("is %s, the placeholder for a stored value, but provider %q stores none; send the value itself", secrets.Redacted, p.Name)})
		case secrets.IsSealed(v) && v != old:
			ps = append(ps, domain.Problem{Field: "fields." + name, Code: domain.CodeInvalid,
				Message: fmt.Sprintf("is a sealed value that provider %q does not store; send the value itself, or %s to keep the stored one", p.Name, secrets.Redacted)})
		}
	}
	if len(ps) > 0 {
		return nil, ps
	}
	if ps := reg.Validate(&p); len(ps) > 0 {
		return nil, ps
	}
	t, _ := reg.Type(p.ProviderType)
	for name, v := range p.Fields {
		old := stored[name]
		if v == "" || secrets.IsSealed(v) || !secrets.IsSealed(old) || !t.Sensitive(name) {
			continue
		}
		opened, err := kr.OpenString(tx.ctx, secrets.Sealed(old), provider.FieldBinding(tx.tenant, p.Name, name))
		if err == nil && opened.Reveal() == v {
			p.Fields[name] = old
		}
	}
	if err := reg.SealFields(tx.ctx, kr, tx.tenant, &p); err != nil {
		// The message names the field, never its value.
		return nil, fmt.Errorf("catalog: provider %q: %w", p.Name, err)
	}
	return &p, nil
}
