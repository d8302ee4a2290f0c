package catalog

import (
	"fmt"
	"strings"

	"github.com/heddle-io/heddle/internal/domain"
)

// Ref names one entity of the catalog, or a cluster when Kind is "clusters".
type Ref struct {
	Kind domain.Kind `json:"kind"`
	Name string      `json:"name"`
}

// fieldRef is a reference and the field of the referring entity that holds it.
type fieldRef struct {
	Ref
	Field string
}

// KindCluster marks a referrer that is a live cluster rather than an entity.
const KindCluster domain.Kind = "clusters"

// references lists what e refers to. A write must find every one of them live,
// and a delete is refused while any live entity or cluster lists it.
//
// A service's requires and uses are not listed (its script resources are): services may depend on one
// another in any order of creation, and the solver checks requirements when a
// cluster is built.
func references(e domain.Entity) []fieldRef {
	var out []fieldRef
	add := func(field string, k domain.Kind, names ...string) {
		list := isListField(field)
		for i, n := range names {
			if n == "" {
				continue
			}
			f := field
			if list {
				f = fmt.Sprintf("%s[%d]", field, i)
			}
			out = append(out, fieldRef{Ref: Ref{Kind: k, Name: n}, Field: f})
		}
	}
	var s *domain.TemplateSections
	switch v := e.(type) {
	case *domain.ClusterTemplate:
		s = &v.TemplateSections
	case *domain.PartialTemplate:
		s = &v.TemplateSections
	case *domain.Service:
		// The script resources its actions run: a script is deleted only
		// when no live service names it.
		scripts := domain.ScriptRefs(v)
		for _, field := range sortedKeys(scripts) {
			add(field, domain.KindScript, scripts[field])
		}
		return out
	default:
		return nil
	}
	if s.Extends != nil {
		// extends may name a cluster template or a partial one; lookups resolve
		// which, and the referrer scan matches the name in both kinds.
		add("extends.name", extendsKind, s.Extends.Name)
	}
	for i, inc := range s.Includes {
		add(fmt.Sprintf("includes[%d].name", i), domain.KindPartialTemplate, inc.Name)
	}
	add("compatibility.services", domain.KindService, s.Compatibility.Services...)
	add("defaults.services", domain.KindService, s.Defaults.Services...)
	add("compatibility.hardwareTypes", domain.KindHardwareType, s.Compatibility.HardwareTypes...)
	add("compatibility.imageTypes", domain.KindImageType, s.Compatibility.ImageTypes...)
	add("defaults.provider", domain.KindProvider, s.Defaults.Provider)
	add("defaults.hardwareType", domain.KindHardwareType, s.Defaults.HardwareType)
	add("defaults.imageType", domain.KindImageType, s.Defaults.ImageType)
	for _, svc := range sortedKeys(s.Constraints.Services) {
		c := s.Constraints.Services[svc]
		add("constraints.services."+svc, domain.KindService, svc)
		add("constraints.services."+svc+".hardwareTypes", domain.KindHardwareType, c.HardwareTypes...)
		add("constraints.services."+svc+".imageTypes", domain.KindImageType, c.ImageTypes...)
	}
	return out
}

// extendsKind is the pseudo-kind of an extends reference: a cluster template
// if one has that name, else a partial template.
const extendsKind domain.Kind = "extends"

func (r Ref) matches(k domain.Kind, name string) bool {
	if r.Name != name {
		return false
	}
	if r.Kind == extendsKind {
		return k == domain.KindClusterTemplate || k == domain.KindPartialTemplate
	}
	return r.Kind == k
}

// isListField reports whether a reference field holds a list (its problems are
// reported at an index) rather than one name.
func isListField(field string) bool {
	return strings.HasPrefix(field, "compatibility.") || field == "defaults.services" ||
		strings.HasSuffix(field, ".hardwareTypes") || strings.HasSuffix(field, ".imageTypes")
}

// clusterRefs lists what a live cluster refers to: its template, provider and
// services, and the hardware and image types its nodes may use, taken from the
// template as resolved for it (the defaults, the compatibility lists and the
// per-service restrictions), since an expand or a replaced node picks from
// those. A cluster listed without its resolved template refers to no hardware
// or image type.
func clusterRefs(c domain.Cluster) []Ref {
	out := []Ref{{Kind: domain.KindClusterTemplate, Name: c.Template.Name}, {Kind: domain.KindProvider, Name: c.Provider}}
	for _, s := range c.Services {
		out = append(out, Ref{Kind: domain.KindService, Name: s})
	}
	if t := c.Resolved; t != nil {
		seen := map[Ref]bool{}
		add := func(k domain.Kind, names ...string) {
			for _, n := range names {
				r := Ref{Kind: k, Name: n}
				if n != "" && !seen[r] {
					seen[r] = true
					out = append(out, r)
				}
			}
		}
		add(domain.KindHardwareType, t.Defaults.HardwareType)
		add(domain.KindHardwareType, t.Compatibility.HardwareTypes...)
		add(domain.KindImageType, t.Defaults.ImageType)
		add(domain.KindImageType, t.Compatibility.ImageTypes...)
		for _, svc := range sortedKeys(t.Constraints.Services) {
			sc := t.Constraints.Services[svc]
			add(domain.KindHardwareType, sc.HardwareTypes...)
			add(domain.KindImageType, sc.ImageTypes...)
		}
	}
	return out
}
