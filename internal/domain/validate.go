package domain

import (
	"bytes"
	"net/url"
	"regexp"
	"time"
)

// namePattern is what every entity, service, tenant and user name must match:
// it is safe in a URL path segment, a store key and a shell environment value.
var namePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$`)

// ValidName reports whether s may name an entity.
func ValidName(s string) bool { return namePattern.MatchString(s) }

// MaxActionTimeout is the longest an action may run: the SQS visibility limit,
// past which a task's message could not be held by one worker.
const MaxActionTimeout = Duration(12 * time.Hour)

// MaxRetries bounds an action's retry limit.
const MaxRetries = 10

// MaxFieldBytes bounds one action field value, one provider field value and a
// template's defaults.config, so that an entity always fits in one store item
// (DynamoDB holds at most 400 KB per item).
const MaxFieldBytes = 64 << 10

// fieldSize reports a value longer than MaxFieldBytes. hint, when not empty,
// is a sentence appended to the message.
func (c checker) fieldSize(field string, n int, hint string) {
	if n <= MaxFieldBytes {
		return
	}
	msg := "is %d bytes long; a value holds at most %d bytes (64 KiB)"
	if hint != "" {
		msg += ". " + hint
	}
	c.add(field, CodeOutOfRange, msg, n, MaxFieldBytes)
}

// scriptHint is what a too-long action field is told to do instead.
const scriptHint = "For a long script, upload it as a versioned script resource and refer to it from the action instead of inlining it"

func (c checker) name(field, value string) {
	switch {
	case value == "":
		c.add(field, CodeRequired, "is required")
	case !ValidName(value):
		c.add(field, CodeInvalid, "%q is not a valid name: use 1 to 63 letters, digits, '_', '.' or '-', starting with a letter or digit", value)
	}
}

func (c checker) names(field string, values []string) {
	seen := map[string]bool{}
	for i, v := range values {
		c.at(field).index(i).name("", v)
		if seen[v] {
			c.at(field).index(i).add("", CodeDuplicate, "%q is listed twice", v)
		}
		seen[v] = true
	}
}

func (c checker) meta(m Meta) {
	c.name("name", m.Name)
	if len(m.Label) > 255 {
		c.add("label", CodeOutOfRange, "is %d characters long; keep it under 256", len(m.Label))
	}
	if len(m.Description) > 4096 {
		c.add("description", CodeOutOfRange, "is %d characters long; keep it under 4097", len(m.Description))
	}
	if m.Version < 0 {
		c.add("version", CodeOutOfRange, "cannot be negative")
	}
}

func (c checker) links(links []Link) {
	for i, l := range links {
		lc := c.at("links").index(i)
		if l.Label == "" {
			lc.add("label", CodeRequired, "is required")
		}
		u, err := url.Parse(l.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			lc.add("url", CodeInvalid, "%q is not an http or https URL", l.URL)
		}
	}
}

// Validate checks a provider on its own; the provider type's own fields are
// checked by the provider plugin.
func (p *Provider) Validate() Problems {
	c := newChecker()
	c.meta(p.Meta)
	c.name("providerType", p.ProviderType)
	for k, v := range p.Fields {
		if k == "" {
			c.at("fields").add("", CodeInvalid, "a field name cannot be empty")
		}
		c.at("fields").fieldSize(k, len(v), "")
	}
	return c.result()
}

// Validate checks a hardware type.
func (h *HardwareType) Validate() Problems {
	c := newChecker()
	c.meta(h.Meta)
	if len(h.ProviderMap) == 0 {
		c.add("providerMap", CodeRequired, "must map at least one provider to a flavor")
	}
	for prov, f := range h.ProviderMap {
		pc := c.at("providerMap").at(prov)
		pc.name("", prov)
		if f.Flavor == "" {
			pc.add("flavor", CodeRequired, "is required")
		}
	}
	return c.result()
}

// Validate checks an image type.
func (im *ImageType) Validate() Problems {
	c := newChecker()
	c.meta(im.Meta)
	if len(im.ProviderMap) == 0 {
		c.add("providerMap", CodeRequired, "must map at least one provider to an image")
	}
	for prov, ref := range im.ProviderMap {
		pc := c.at("providerMap").at(prov)
		pc.name("", prov)
		if ref.Image == "" {
			pc.add("image", CodeRequired, "is required")
		}
	}
	return c.result()
}

// Validate checks a service on its own. Whether the services it names exist is
// the catalog's concern.
func (s *Service) Validate() Problems {
	c := newChecker()
	c.meta(s.Meta)
	d := c.at("dependencies")
	d.names("provides", s.Dependencies.Provides)
	d.names("conflicts", s.Dependencies.Conflicts)
	for phase, set := range map[string]DependencySet{"install": s.Dependencies.Install, "runtime": s.Dependencies.Runtime} {
		pc := d.at(phase)
		pc.names("requires", set.Requires)
		pc.names("uses", set.Uses)
		for _, list := range []struct {
			field string
			names []string
		}{{"requires", set.Requires}, {"uses", set.Uses}} {
			for i, n := range list.names {
				if n == s.Name {
					pc.at(list.field).index(i).add("", CodeInvalid, "a service cannot depend on itself")
				}
			}
		}
	}
	for i, n := range s.Dependencies.Conflicts {
		if n == s.Name {
			d.at("conflicts").index(i).add("", CodeInvalid, "a service cannot conflict with itself")
		}
	}
	for action, a := range s.Actions {
		ac := c.at("actions").at(string(action))
		if !action.IsServiceAction() {
			ac.add("", CodeInvalid, "%q is not a service action; use one of install, configure, initialize, start, stop, remove, check", action)
			continue
		}
		ac.name("type", a.Type)
		if a.Timeout > MaxActionTimeout {
			ac.add("timeout", CodeOutOfRange, "is %s; an action may run at most %s", a.Timeout, MaxActionTimeout)
		}
		if a.Retries != nil && (*a.Retries < 0 || *a.Retries > MaxRetries) {
			ac.add("retries", CodeOutOfRange, "is %d; use 0 to %d", *a.Retries, MaxRetries)
		}
		for k, v := range a.Fields {
			ac.at("fields").fieldSize(k, len(v), scriptHint)
		}
	}
	c.links(s.Links)
	return c.result()
}

// Validate checks a cluster template's shape. ValidateResolved checks what
// only a fully resolved template must satisfy.
func (t *ClusterTemplate) Validate() Problems {
	c := newChecker()
	c.meta(t.Meta)
	c.sections(t.TemplateSections)
	return c.result()
}

// Validate checks a partial template's shape.
func (t *PartialTemplate) Validate() Problems {
	c := newChecker()
	c.meta(t.Meta)
	c.sections(t.TemplateSections)
	return c.result()
}

// ValidateResolved checks what a template must satisfy once its extends and
// includes are merged: enough to create a cluster from it.
func (t *ClusterTemplate) ValidateResolved() Problems {
	c := newChecker()
	c.sections(t.TemplateSections)
	if len(t.Compatibility.Services) == 0 {
		c.add("compatibility.services", CodeRequired, "must list at least one service the cluster may run")
	}
	if len(t.Defaults.Services) == 0 {
		c.add("defaults.services", CodeRequired, "must list the services a cluster gets when the request names none")
	}
	if t.Defaults.Provider == "" {
		c.add("defaults.provider", CodeRequired, "must name the provider a cluster uses when the request names none")
	}
	compat := set(t.Compatibility.Services)
	for i, s := range t.Defaults.Services {
		if !compat[s] {
			c.at("defaults.services").index(i).add("", CodeConflict, "%q is not in compatibility.services", s)
		}
	}
	if t.Defaults.HardwareType != "" && len(t.Compatibility.HardwareTypes) > 0 && !set(t.Compatibility.HardwareTypes)[t.Defaults.HardwareType] {
		c.add("defaults.hardwareType", CodeConflict, "%q is not in compatibility.hardwareTypes", t.Defaults.HardwareType)
	}
	if t.Defaults.ImageType != "" && len(t.Compatibility.ImageTypes) > 0 && !set(t.Compatibility.ImageTypes)[t.Defaults.ImageType] {
		c.add("defaults.imageType", CodeConflict, "%q is not in compatibility.imageTypes", t.Defaults.ImageType)
	}
	for svc := range t.Constraints.Services {
		if !compat[svc] {
			c.at("constraints.services").at(svc).add("", CodeConflict, "constrains %q, which is not in compatibility.services", svc)
		}
	}
	return c.result()
}

func (c checker) sections(s TemplateSections) {
	if s.Extends != nil {
		c.at("extends").name("name", s.Extends.Name)
		if s.Extends.Version < 0 {
			c.at("extends").add("version", CodeOutOfRange, "cannot be negative")
		}
	}
	for i, ref := range s.Includes {
		c.at("includes").index(i).name("name", ref.Name)
		if ref.Version < 0 {
			c.at("includes").index(i).add("version", CodeOutOfRange, "cannot be negative")
		}
	}
	cc := c.at("compatibility")
	cc.names("services", s.Compatibility.Services)
	cc.names("hardwareTypes", s.Compatibility.HardwareTypes)
	cc.names("imageTypes", s.Compatibility.ImageTypes)

	dc := c.at("defaults")
	dc.names("services", s.Defaults.Services)
	if s.Defaults.Provider != "" {
		dc.name("provider", s.Defaults.Provider)
	}
	if s.Defaults.HardwareType != "" {
		dc.name("hardwareType", s.Defaults.HardwareType)
	}
	if s.Defaults.ImageType != "" {
		dc.name("imageType", s.Defaults.ImageType)
	}
	if len(s.Defaults.Config) > 0 && !isJSONObject(s.Defaults.Config) {
		dc.add("config", CodeWrongType, "must be a JSON object")
	}
	dc.fieldSize("config", len(s.Defaults.Config), "Keep large configuration out of the template")

	k := c.at("constraints")
	size := s.Constraints.Size
	if size.Min < 0 {
		k.add("size.min", CodeOutOfRange, "is %d; a cluster needs at least 1 node", size.Min)
	}
	if size.Max < 0 || size.Max > MaxClusterSize {
		k.add("size.max", CodeOutOfRange, "is %d; use 1 to %d, or 0 for no limit", size.Max, MaxClusterSize)
	}
	if size.Max > 0 && size.Min > size.Max {
		k.add("size", CodeConflict, "min %d is greater than max %d", size.Min, size.Max)
	}
	for field, groups := range map[string][][]string{"layout.mustCoexist": s.Constraints.Layout.MustCoexist, "layout.cantCoexist": s.Constraints.Layout.CantCoexist} {
		for i, g := range groups {
			gc := k.at(field).index(i)
			gc.names("", g)
			if len(g) < 2 {
				gc.add("", CodeInvalid, "a group needs at least two services")
			}
		}
	}
	for svc, sc := range s.Constraints.Services {
		sv := k.at("services").at(svc)
		sv.name("", svc)
		sv.names("hardwareTypes", sc.HardwareTypes)
		sv.names("imageTypes", sc.ImageTypes)
		q := sc.Quantities
		if q.Min < 0 {
			sv.add("quantities.min", CodeOutOfRange, "cannot be negative")
		}
		if q.Max < 0 {
			sv.add("quantities.max", CodeOutOfRange, "cannot be negative; use 0 for no limit")
		}
		if q.Max > 0 && q.Min > q.Max {
			sv.add("quantities", CodeConflict, "min %d is greater than max %d", q.Min, q.Max)
		}
		if size.Max > 0 && q.Min > size.Max {
			sv.add("quantities.min", CodeConflict, "needs %d nodes but the cluster may have at most %d", q.Min, size.Max)
		}
	}
	lease := s.Administration.Lease
	if lease.Max > 0 && lease.Initial > lease.Max {
		c.add("administration.lease.initial", CodeConflict, "%s is longer than the maximum lease %s", lease.Initial, lease.Max)
	}
	c.links(s.Links)
}

func isJSONObject(raw []byte) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && raw[0] == '{'
}

func set(xs []string) map[string]bool {
	m := make(map[string]bool, len(xs))
	for _, x := range xs {
		m[x] = true
	}
	return m
}

// Validate checks a tenant.
func (t *Tenant) Validate() Problems {
	c := newChecker()
	c.name("id", t.ID)
	if t.Workers < 0 || t.Workers > 1000 {
		c.add("workers", CodeOutOfRange, "is %d; use 0 to 1000", t.Workers)
	}
	if t.MaxClusters < 0 {
		c.add("maxClusters", CodeOutOfRange, "cannot be negative")
	}
	if t.MaxNodes < 0 {
		c.add("maxNodes", CodeOutOfRange, "cannot be negative")
	}
	if len(t.Description) > 4096 {
		c.add("description", CodeOutOfRange, "is %d characters long; keep it under 4097", len(t.Description))
	}
	return c.result()
}

// Validate checks a user.
func (u *User) Validate() Problems {
	c := newChecker()
	c.name("name", u.Name)
	if !u.Role.Valid() {
		c.add("role", CodeInvalid, "%q is not a role; use superadmin, admin or user", u.Role)
	}
	return c.result()
}
