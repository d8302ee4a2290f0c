package provider

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/secrets"
)

// Type describes a provider type: what an administrator fills in when
// defining a provider of this type (Admin) and what a user may give when
// creating a cluster with it (User). It marshals to the JSON a UI draws a
// form from.
type Type struct {
	Name        string     `json:"name"`
	Label       string     `json:"label"`
	Description string     `json:"description,omitempty"`
	Parameters  Parameters `json:"parameters"`
	// Check validates values beyond what Field declares (a port range, a
	// list of ids), reporting field paths relative to the field map
	// ("region"). Nil: nothing more to check. A sealed value is passed as
	// secrets.Redacted: it is set, its content unknown.
	Check func(fields map[string]string) domain.Problems `json:"-"`
}

// Parameters are a type's admin and user fields.
type Parameters struct {
	Admin ParameterSet `json:"admin"`
	User  ParameterSet `json:"user"`
}

// ParameterSet is a group of fields and which of them are required.
type ParameterSet struct {
	Fields map[string]Field `json:"fields"`
	// Required lists alternative sets of fields: the values are complete
	// when every field of at least one set is given (Coopr's rule). Empty:
	// nothing is required.
	Required [][]string `json:"required,omitempty"`
}

// FieldType says how a field is entered and checked.
type FieldType string

const (
	FieldText     FieldType = "text"
	FieldPassword FieldType = "password" // hidden while typed; usually Sensitive
	FieldTextArea FieldType = "textarea" // several lines (a script, a key)
	FieldSelect   FieldType = "select"   // one of Options
	FieldCheckbox FieldType = "checkbox" // "true" or "false"
	FieldNumber   FieldType = "number"   // a whole number
)

// Field is one parameter.
type Field struct {
	Label   string    `json:"label"`
	Type    FieldType `json:"type"`
	Tip     string    `json:"tip,omitempty"`
	Options []string  `json:"options,omitempty"`
	Default string    `json:"default,omitempty"`
	// Override lets a user's value at cluster create replace the admin's
	// (admin fields only).
	Override bool `json:"override,omitempty"`
	// Sensitive values are sealed at rest, redacted from API responses and
	// from task output.
	Sensitive bool `json:"sensitive,omitempty"`
	// Min and Max bound a number field (both zero: no bound).
	Min int `json:"min,omitempty"`
	Max int `json:"max,omitempty"`
}

// check validates values against the set, reporting paths under prefix.
func (s ParameterSet) check(prefix, typeName string, values map[string]string, extra map[string]Field) domain.Problems {
	var ps domain.Problems
	path := func(name string) string { return prefix + "." + name }
	for name, v := range values {
		f, ok := s.Fields[name]
		if !ok {
			f, ok = extra[name]
		}
		if !ok {
			ps = append(ps, domain.Problem{Field: path(name), Code: domain.CodeUnknownField,
				Message: fmt.Sprintf("is not a field of provider type %s; its fields are %s", typeName, fieldList(s.Fields, extra))})
			continue
		}
		if f.Sensitive && secrets.IsSealed(v) {
			continue // sealed: its content is checked when it was sealed
		}
		if msg := f.checkValue(v); msg != "" {
			ps = append(ps, domain.Problem{Field: path(name), Code: domain.CodeInvalid, Message: msg})
		}
	}
	ps = append(ps, s.checkRequired(prefix, values)...)
	return ps
}

func (f Field) checkValue(v string) string {
	if v == "" {
		return ""
	}
	switch f.Type {
	case FieldCheckbox:
		if v != "true" && v != "false" {
			return fmt.Sprintf("%q is not true or false", v)
		}
	case FieldSelect:
		if !slices.Contains(f.Options, v) {
			return fmt.Sprintf("%q is not one of %s", v, strings.Join(f.Options, ", "))
		}
	case FieldNumber:
		n, err := strconv.Atoi(v)
		if err != nil {
			return fmt.Sprintf("%q is not a whole number", v)
		}
		if (f.Min != 0 || f.Max != 0) && (n < f.Min || n > f.Max) {
			return fmt.Sprintf("%d is outside %d..%d", n, f.Min, f.Max)
		}
	}
	return ""
}

// checkRequired reports the missing fields of the alternative that is
// closest to complete, so the message asks for as little as possible.
func (s ParameterSet) checkRequired(prefix string, values map[string]string) domain.Problems {
	if len(s.Required) == 0 {
		return nil
	}
	var best []string
	for i, set := range s.Required {
		var missing []string
		for _, name := range set {
			if values[name] == "" && s.Fields[name].Default == "" {
				missing = append(missing, name)
			}
		}
		if len(missing) == 0 {
			return nil
		}
		if i == 0 || len(missing) < len(best) {
			best = missing
		}
	}
	alternatives := ""
	if len(s.Required) > 1 {
		sets := make([]string, len(s.Required))
		for i, set := range s.Required {
			sets[i] = "[" + strings.Join(set, ", ") + "]"
		}
		alternatives = " (or complete another of the field sets " + strings.Join(sets, " or ") + ")"
	}
	ps := make(domain.Problems, 0, len(best))
	for _, name := range best {
		ps = append(ps, domain.Problem{Field: prefix + "." + name, Code: domain.CodeRequired, Message: "is required" + alternatives})
	}
	return ps
}

func fieldList(sets ...map[string]Field) string {
	var names []string
	for _, fields := range sets {
		for n := range fields {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	names = slices.Compact(names)
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// Sensitive reports whether name is a sensitive admin or user field.
func (t Type) Sensitive(name string) bool {
	return t.Parameters.Admin.Fields[name].Sensitive || t.Parameters.User.Fields[name].Sensitive
}

// overridable returns the admin fields a user may override.
func (t Type) overridable() map[string]Field {
	out := map[string]Field{}
	for n, f := range t.Parameters.Admin.Fields {
		if f.Override {
			out[n] = f
		}
	}
	return out
}

// Merge combines a provider's admin fields with a cluster's user fields:
// defaults first, then the admin's values, then the user's values for user
// fields and overridable admin fields. Other user values are ignored
// (ValidateUserFields reports them).
func (t Type) Merge(admin, user map[string]string) map[string]string {
	out := map[string]string{}
	for _, set := range []map[string]Field{t.Parameters.Admin.Fields, t.Parameters.User.Fields} {
		for n, f := range set {
			if f.Default != "" {
				out[n] = f.Default
			}
		}
	}
	for n, v := range admin {
		if v != "" {
			out[n] = v
		}
	}
	for n, v := range user {
		_, isUser := t.Parameters.User.Fields[n]
		if v != "" && (isUser || t.Parameters.Admin.Fields[n].Override) {
			out[n] = v
		}
	}
	return out
}
