package catalog

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/heddle-io/heddle/internal/domain"
)

// maxTemplateDepth bounds extends/includes chains; deeper is surely a mistake.
const maxTemplateDepth = 16

// Layer is one template found while resolving: its sections and whether it
// fixes the keys it sets (an immutable partial template).
type Layer struct {
	Kind      domain.Kind
	Name      string
	Version   int
	Immutable bool
	Sections  domain.TemplateSections
}

// LookupFunc finds the template a reference names. For extends it is called
// with domain.KindClusterTemplate first, then domain.KindPartialTemplate when
// the first answers ErrNotFound; for includes with domain.KindPartialTemplate.
type LookupFunc func(kind domain.Kind, ref domain.TemplateRef) (Layer, error)

// Resolve merges t with everything it extends and includes and returns a
// template with no extends or includes left, checked with ValidateResolved.
//
// Merge order is Coopr's: the parent's includes, the parent, t's own includes,
// t. Includes contribute compatibility and defaults; the extends chain and t
// itself also contribute constraints and administration. Lists are unioned,
// strings and numbers overridden by later layers, config keys overwritten at
// the top level. A later layer that changes a key an immutable partial
// template set is an error.
func Resolve(t *domain.ClusterTemplate, lookup LookupFunc) (*domain.ClusterTemplate, error) {
	self := Layer{Kind: domain.KindClusterTemplate, Name: t.Name, Version: t.Version, Sections: t.TemplateSections}
	var layers []mergeLayer
	if err := flatten(self, true, lookup, nil, "", &layers); err != nil {
		return nil, err
	}
	m := newMerger()
	for _, l := range layers {
		m.apply(l)
	}
	if len(m.problems) > 0 {
		return nil, m.problems
	}
	out := &domain.ClusterTemplate{Meta: t.Meta, TemplateSections: m.result}
	out.Extends, out.Includes = nil, nil
	if ps := out.ValidateResolved(); len(ps) > 0 {
		return nil, ps
	}
	return out, nil
}

type mergeLayer struct {
	Layer
	full bool // from the extends chain or the template itself
}

// flatten lists the layers l merges, in merge order. via is the field of
// the template being resolved through which l was reached ("" for that
// template itself): a cycle or a chain too deep is reported there, at the
// reference that leads into it, since that is the field a person edits.
func flatten(l Layer, full bool, lookup LookupFunc, path []string, via string, out *[]mergeLayer) error {
	id := string(l.Kind) + "/" + l.Name
	if slices.Contains(path, id) {
		return domain.Problems{{Field: viaField(via), Code: domain.CodeCycle,
			Message: fmt.Sprintf("templates extend or include each other in a cycle (%s), so none of them can be resolved; remove one of these references",
				strings.Join(append(path, id), " -> "))}}
	}
	if len(path) >= maxTemplateDepth {
		return domain.Problems{{Field: viaField(via), Code: domain.CodeOutOfRange,
			Message: fmt.Sprintf("extends and includes nest deeper than %d templates (%s)", maxTemplateDepth, strings.Join(path, " -> "))}}
	}
	path = append(path, id)
	at := func(field string) string {
		if via == "" {
			return field
		}
		return via
	}
	if ext := l.Sections.Extends; ext != nil {
		parent, err := lookup(domain.KindClusterTemplate, *ext)
		if err != nil && isNotFound(err) {
			parent, err = lookup(domain.KindPartialTemplate, *ext)
		}
		if err != nil {
			return refProblem("extends", *ext, err)
		}
		if err := flatten(parent, full, lookup, path, at("extends"), out); err != nil {
			return err
		}
	}
	for i, inc := range l.Sections.Includes {
		part, err := lookup(domain.KindPartialTemplate, inc)
		if err != nil {
			return refProblem(fmt.Sprintf("includes[%d]", i), inc, err)
		}
		if err := flatten(part, false, lookup, path, at(fmt.Sprintf("includes[%d]", i)), out); err != nil {
			return err
		}
	}
	*out = append(*out, mergeLayer{Layer: l, full: full})
	return nil
}

func viaField(via string) string {
	if via == "" {
		return "extends"
	}
	return via
}

func refProblem(field string, ref domain.TemplateRef, err error) error {
	if isNotFound(err) {
		what := fmt.Sprintf("%q", ref.Name)
		if ref.Version > 0 {
			what = fmt.Sprintf("%q version %d", ref.Name, ref.Version)
		}
		return domain.Problems{{Field: field, Code: domain.CodeUnknownRef,
			Message: fmt.Sprintf("names template %s, which does not exist; create it first or fix the name", what)}}
	}
	return err
}

// merger folds layers into one set of sections and remembers which keys an
// immutable layer fixed, to refuse later changes to them.
type merger struct {
	result   domain.TemplateSections
	config   map[string]json.RawMessage
	locked   map[string]lock
	problems domain.Problems
}

type lock struct {
	value string
	by    string
}

func newMerger() *merger {
	return &merger{config: map[string]json.RawMessage{}, locked: map[string]lock{}}
}

// set records that layer l sets key to value; it reports whether the value may
// be applied (false when an immutable layer fixed it to something else).
func (m *merger) set(l mergeLayer, key string, value any) bool {
	v := fmt.Sprint(value)
	if lk, ok := m.locked[key]; ok && lk.value != v {
		m.problems = append(m.problems, domain.Problem{Field: key, Code: domain.CodeImmutable,
			Message: fmt.Sprintf("is fixed to %s by immutable partial template %q; template %q may not change it", lk.value, lk.by, l.Name)})
		return false
	}
	if l.Immutable {
		m.locked[key] = lock{value: v, by: l.Name}
	}
	return true
}

func (m *merger) str(l mergeLayer, key string, dst *string, v string) {
	if v != "" && m.set(l, key, v) {
		*dst = v
	}
}

func union(dst []string, src []string) []string {
	for _, s := range src {
		if !slices.Contains(dst, s) {
			dst = append(dst, s)
		}
	}
	return dst
}

func (m *merger) apply(l mergeLayer) {
	s, r := l.Sections, &m.result
	r.Compatibility.Services = union(r.Compatibility.Services, s.Compatibility.Services)
	r.Compatibility.HardwareTypes = union(r.Compatibility.HardwareTypes, s.Compatibility.HardwareTypes)
	r.Compatibility.ImageTypes = union(r.Compatibility.ImageTypes, s.Compatibility.ImageTypes)
	r.Defaults.Services = union(r.Defaults.Services, s.Defaults.Services)
	m.str(l, "defaults.provider", &r.Defaults.Provider, s.Defaults.Provider)
	m.str(l, "defaults.hardwareType", &r.Defaults.HardwareType, s.Defaults.HardwareType)
	m.str(l, "defaults.imageType", &r.Defaults.ImageType, s.Defaults.ImageType)
	m.str(l, "defaults.dnsSuffix", &r.Defaults.DNSSuffix, s.Defaults.DNSSuffix)
	if len(s.Defaults.Config) > 0 {
		var cfg map[string]json.RawMessage
		if err := json.Unmarshal(s.Defaults.Config, &cfg); err == nil {
			for _, k := range sortedKeys(cfg) {
				if m.set(l, "defaults.config."+k, string(cfg[k])) {
					m.config[k] = cfg[k]
				}
			}
		}
		r.Defaults.Config, _ = json.Marshal(m.config)
	}
	r.Links = append(r.Links, s.Links...)
	if !l.full {
		return
	}
	if sz := s.Constraints.Size; sz != (domain.SizeConstraint{}) && m.set(l, "constraints.size", fmt.Sprintf("min %d max %d", sz.Min, sz.Max)) {
		r.Constraints.Size = sz
	}
	r.Constraints.Layout.MustCoexist = unionGroups(r.Constraints.Layout.MustCoexist, s.Constraints.Layout.MustCoexist)
	r.Constraints.Layout.CantCoexist = unionGroups(r.Constraints.Layout.CantCoexist, s.Constraints.Layout.CantCoexist)
	for _, svc := range sortedKeys(s.Constraints.Services) {
		c := s.Constraints.Services[svc]
		if m.set(l, "constraints.services."+svc, fmt.Sprintf("%+v", c)) {
			if r.Constraints.Services == nil {
				r.Constraints.Services = map[string]domain.ServiceConstraint{}
			}
			r.Constraints.Services[svc] = c
		}
	}
	lease, dst := s.Administration.Lease, &r.Administration.Lease
	for _, f := range []struct {
		key string
		src domain.Duration
		dst *domain.Duration
	}{{"administration.lease.initial", lease.Initial, &dst.Initial}, {"administration.lease.max", lease.Max, &dst.Max}, {"administration.lease.step", lease.Step, &dst.Step}} {
		if f.src != 0 && m.set(l, f.key, f.src) {
			*f.dst = f.src
		}
	}
	// The periodic checks and the repair policy, which the merge dropped
	// before (a template's verifyEvery never reached its clusters).
	if v := s.Administration.VerifyEvery; v != 0 && m.set(l, "administration.verifyEvery", v) {
		r.Administration.VerifyEvery = v
	}
	if v := s.Administration.DriftEvery; v != nil && m.set(l, "administration.driftEvery", *v) {
		every := *v
		r.Administration.DriftEvery = &every
	}
	if v := s.Administration.Repair; v != nil && m.set(l, "administration.repair", fmt.Sprintf("%+v", *v)) {
		policy := *v
		r.Administration.Repair = &policy
	}
	// The autoscale policy as a whole: a range from one layer and
	// schedules from another would make a policy nobody wrote.
	if v := s.Administration.Autoscale; v != nil && m.set(l, "administration.autoscale", fmt.Sprintf("%+v", *v)) {
		policy := *v
		r.Administration.Autoscale = &policy
	}
}

func unionGroups(dst, src [][]string) [][]string {
	for _, g := range src {
		sorted := slices.Sorted(slices.Values(g))
		if !slices.ContainsFunc(dst, func(h []string) bool { return slices.Equal(slices.Sorted(slices.Values(h)), sorted) }) {
			dst = append(dst, g)
		}
	}
	return dst
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
