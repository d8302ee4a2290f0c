package provider

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/secrets"
)

// Registry maps provider type names to their descriptions and
// implementations. It is safe for concurrent use.
type Registry struct {
	mu    sync.RWMutex
	types map[string]registered
}

type registered struct {
	typ  Type
	impl Provider
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{types: map[string]registered{}} }

// Register adds a provider type. A name may be registered once.
func (r *Registry) Register(t Type, impl Provider) error {
	if t.Name == "" || impl == nil {
		return fmt.Errorf("provider: a type needs a name and an implementation")
	}
	for _, set := range []ParameterSet{t.Parameters.Admin, t.Parameters.User} {
		for _, req := range set.Required {
			for _, n := range req {
				if _, ok := set.Fields[n]; !ok {
					return fmt.Errorf("provider: type %s requires %q, which it does not declare", t.Name, n)
				}
			}
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.types[t.Name]; dup {
		return fmt.Errorf("provider: type %s is already registered", t.Name)
	}
	r.types[t.Name] = registered{typ: t, impl: impl}
	return nil
}

// Types lists the registered types by name.
func (r *Registry) Types() []Type {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]Type, 0, len(r.types))
	for _, name := range slices.Sorted(maps.Keys(r.types)) {
		out = append(out, r.types[name].typ)
	}
	return out
}

// Type returns the named type.
func (r *Registry) Type(name string) (Type, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	e, ok := r.types[name]
	return e.typ, ok
}

// Provider returns the implementation of the named type.
func (r *Registry) Provider(name string) (Provider, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	e, ok := r.types[name]
	return e.impl, ok
}

func (r *Registry) names() string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return strings.Join(slices.Sorted(maps.Keys(r.types)), ", ")
}

func (r *Registry) unknownType(field, name string) domain.Problems {
	return domain.Problems{{Field: field, Code: domain.CodeUnknownRef,
		Message: fmt.Sprintf("%q is not a provider type; the types are %s", name, r.names())}}
}

// Validate checks a provider's fields against its type: every field
// declared, values of the declared kind, one required set complete, and the
// type's own checks. Paths are "providerType" and "fields.<name>". It does
// not repeat the entity's own checks (domain.Provider.Validate).
func (r *Registry) Validate(p *domain.Provider) domain.Problems {
	t, ok := r.Type(p.ProviderType)
	if !ok {
		return r.unknownType("providerType", p.ProviderType)
	}
	ps := t.Parameters.Admin.check("fields", t.Name, p.Fields, nil)
	ps = append(ps, t.runCheck("fields", p.Fields)...)
	return sortProblems(ps)
}

// ValidateUserFields checks the provider fields a user gives at cluster
// create (paths "providerFields.<name>"): user fields and the admin fields
// the type lets users override.
func (r *Registry) ValidateUserFields(providerType string, user map[string]string) domain.Problems {
	t, ok := r.Type(providerType)
	if !ok {
		return r.unknownType("provider", providerType)
	}
	ps := t.Parameters.User.check("providerFields", t.Name, user, t.overridable())
	ps = append(ps, t.runCheck("providerFields", user)...)
	return sortProblems(ps)
}

func (t Type) runCheck(prefix string, fields map[string]string) domain.Problems {
	if t.Check == nil {
		return nil
	}
	plain := make(map[string]string, len(fields))
	for k, v := range fields {
		if secrets.IsSealed(v) {
			v = secrets.Redacted // set, content unknown
		}
		plain[k] = v
	}
	ps := t.Check(plain)
	for i := range ps {
		ps[i].Field = prefix + "." + ps[i].Field
	}
	return ps
}

func sortProblems(ps domain.Problems) domain.Problems {
	slices.SortStableFunc(ps, func(a, b domain.Problem) int { return strings.Compare(a.Field, b.Field) })
	return ps
}

// Binding purposes of sealed provider fields.
const (
	PurposeProviderField = "provider-field"
	PurposeUserField     = "provider-user-field"
)

// FieldBinding binds a sealed field of a provider entity to its tenant,
// provider and field name.
func FieldBinding(tenant, provider, field string) secrets.Binding {
	return secrets.Binding{"tenant": tenant, "provider": provider, "field": field, "purpose": PurposeProviderField}
}

// UserFieldBinding binds a sealed user field to its tenant, cluster and
// field name.
func UserFieldBinding(tenant, clusterID, field string) secrets.Binding {
	return secrets.Binding{"tenant": tenant, "cluster": clusterID, "field": field, "purpose": PurposeUserField}
}

// SealFields seals, in place, every sensitive field of p that holds
// plaintext: call it after Validate and before the provider is stored.
func (r *Registry) SealFields(ctx context.Context, kr *secrets.Keyring, tenant string, p *domain.Provider) error {
	t, ok := r.Type(p.ProviderType)
	if !ok {
		return r.unknownType("providerType", p.ProviderType)
	}
	return sealMap(ctx, kr, t, p.Fields, func(f string) secrets.Binding { return FieldBinding(tenant, p.Name, f) })
}

// SealUserFields returns a copy of a cluster's user fields with the
// sensitive ones sealed, for storing with the cluster.
func (r *Registry) SealUserFields(ctx context.Context, kr *secrets.Keyring, tenant, clusterID, providerType string, user map[string]string) (map[string]string, error) {
	t, ok := r.Type(providerType)
	if !ok {
		return nil, r.unknownType("provider", providerType)
	}
	out := maps.Clone(user)
	return out, sealMap(ctx, kr, t, out, func(f string) secrets.Binding { return UserFieldBinding(tenant, clusterID, f) })
}

func sealMap(ctx context.Context, kr *secrets.Keyring, t Type, fields map[string]string, bind func(string) secrets.Binding) error {
	for name, v := range fields {
		if v == "" || !t.Sensitive(name) || secrets.IsSealed(v) {
			continue
		}
		s, err := kr.SealString(ctx, v, bind(name))
		if err != nil {
			return fmt.Errorf("provider: seal field %s: %w", name, err)
		}
		fields[name] = string(s)
	}
	return nil
}

// Opened is a provider's merged fields with sealed values opened, and the
// opened secrets, which task output must have redacted.
type Opened struct {
	Fields  map[string]string
	Secrets []secrets.Secret
}

// OpenFields merges a provider's fields with a cluster's user fields (see
// Type.Merge) and opens every sealed value.
func (r *Registry) OpenFields(ctx context.Context, kr *secrets.Keyring, tenant, clusterID string, p domain.Provider, user map[string]string) (Opened, error) {
	t, ok := r.Type(p.ProviderType)
	if !ok {
		return Opened{}, r.unknownType("providerType", p.ProviderType)
	}
	admin, err := openMap(ctx, kr, p.Fields, func(f string) secrets.Binding { return FieldBinding(tenant, p.Name, f) })
	if err != nil {
		return Opened{}, fmt.Errorf("provider %s: %w", p.Name, err)
	}
	users, err := openMap(ctx, kr, user, func(f string) secrets.Binding { return UserFieldBinding(tenant, clusterID, f) })
	if err != nil {
		return Opened{}, fmt.Errorf("cluster %s's provider fields: %w", clusterID, err)
	}
	out := Opened{Fields: t.Merge(admin, users)}
	for name, v := range out.Fields {
		if v != "" && (t.Sensitive(name) || secrets.IsSealed(p.Fields[name]) || secrets.IsSealed(user[name])) {
			out.Secrets = append(out.Secrets, secrets.NewSecret(v))
		}
	}
	return out, nil
}

func openMap(ctx context.Context, kr *secrets.Keyring, fields map[string]string, bind func(string) secrets.Binding) (map[string]string, error) {
	out := make(map[string]string, len(fields))
	for name, v := range fields {
		if !secrets.IsSealed(v) {
			out[name] = v
			continue
		}
		s, err := kr.OpenString(ctx, secrets.Sealed(v), bind(name))
		if err != nil {
			return nil, fmt.Errorf("open field %s: %w", name, err)
		}
		out[name] = s.Reveal()
	}
	return out, nil
}

// Redact returns a copy of p fit for an API response: every sensitive value
// is replaced by secrets.Redacted, so a client sees that it is set but not
// what it is.
func (r *Registry) Redact(p domain.Provider) domain.Provider {
	t, _ := r.Type(p.ProviderType)
	p.Fields = maps.Clone(p.Fields)
	for name, v := range p.Fields {
		if v != "" && (t.Sensitive(name) || secrets.IsSealed(v)) {
			p.Fields[name] = secrets.Redacted
		}
	}
	return p
}

// KeepRedacted copies into next, for every field a client sent back as
// secrets.Redacted (a form re-submitted unchanged), the stored value from
// prev, so that an update never stores the placeholder.
func KeepRedacted(prev, next *domain.Provider) {
	for name, v := range next.Fields {
		if v == secrets.Redacted {
			if old, ok := prev.Fields[name]; ok {
				next.Fields[name] = old
			} else {
				delete(next.Fields, name)
			}
		}
	}
}
