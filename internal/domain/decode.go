package domain

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"sort"
	"strings"
)

// DecodeStrict reads one JSON value from data into v (a pointer to a struct).
// Unknown fields, values of the wrong type and trailing data are reported as
// Problems, every one with the JSON path it concerns; v is left untouched
// unless the whole document is acceptable.
func DecodeStrict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var raw any
	if err := dec.Decode(&raw); err != nil {
		return Problems{malformed(err)}
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return Problems{{Code: CodeMalformed, Message: "the body holds more than one JSON value; send exactly one object"}}
	}
	// walk lets null through as "leave the zero value", right for a field
	// but not for the whole body: a null entity would be stored empty.
	if raw == nil && wantsObject(reflect.TypeOf(v).Elem()) {
		return Problems{{Code: CodeWrongType, Message: "must be an object, not null"}}
	}
	ps := newChecker()
	walk(ps, reflect.TypeOf(v).Elem(), raw)
	// A key given twice in one object is collapsed by the walk's map (and
	// would be half-applied by encoding/json): report it where it is, unless
	// the document's root is already wrong, which says it all.
	if !rootWrong(*ps.problems) {
		duplicateKeys(ps, data)
	}
	if problems := ps.result(); len(problems) > 0 {
		return problems
	}
	if err := json.Unmarshal(data, v); err != nil {
		// walk mirrors encoding/json's rules, so this is a walk bug, not bad input;
		// still answer with a structured problem rather than an opaque error.
		return Problems{{Code: CodeInvalid, Message: err.Error()}}
	}
	return nil
}

// wantsObject tells whether t (through pointers) is filled from a JSON object.
func wantsObject(t reflect.Type) bool {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.Kind() == reflect.Struct || t.Kind() == reflect.Map
}

func malformed(err error) Problem {
	var syn *json.SyntaxError
	if errors.As(err, &syn) {
		return Problem{Code: CodeMalformed, Message: fmt.Sprintf("the body is not valid JSON at byte %d: %s", syn.Offset, syn.Error())}
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return Problem{Code: CodeMalformed, Message: "the body is empty or cut short; send one complete JSON object"}
	}
	return Problem{Code: CodeMalformed, Message: "the body is not valid JSON: " + err.Error()}
}

var (
	rawMessageType  = reflect.TypeOf(json.RawMessage(nil))
	unmarshalerType = reflect.TypeOf((*json.Unmarshaler)(nil)).Elem()
)

// walk checks raw (a value decoded with UseNumber) against the Go type t the
// way encoding/json would fill it, and records every mismatch at its path.
func walk(c checker, t reflect.Type, raw any) {
	if raw == nil {
		return // null leaves any Go value at its zero value
	}
	if t == rawMessageType {
		return
	}
	if reflect.PointerTo(t).Implements(unmarshalerType) {
		b, _ := json.Marshal(raw)
		if err := reflect.New(t).Interface().(json.Unmarshaler).UnmarshalJSON(b); err != nil {
			c.add("", CodeInvalid, "%s", err.Error())
		}
		return
	}
	switch t.Kind() {
	case reflect.Pointer:
		walk(c, t.Elem(), raw)
	case reflect.Struct:
		obj, ok := raw.(map[string]any)
		if !ok {
			c.add("", CodeWrongType, "must be an object, not %s", describe(raw))
			return
		}
		fields := jsonFields(t)
		keys := sortedKeys(obj)
		for _, k := range keys {
			f, ok := fields[k]
			if !ok {
				f, ok = fields[strings.ToLower(k)]
			}
			if !ok {
				name := k
				if name == "" {
					name = `""` // an empty key still gets a path a person can find
				}
				c.at(name).add("", CodeUnknownField, "is not a field here; check its spelling (known fields: %s)", strings.Join(fieldNames(fields), ", "))
				continue
			}
			walk(c.at(k), f, obj[k])
		}
	case reflect.Map:
		obj, ok := raw.(map[string]any)
		if !ok {
			c.add("", CodeWrongType, "must be an object, not %s", describe(raw))
			return
		}
		for _, k := range sortedKeys(obj) {
			walk(c.at(k), t.Elem(), obj[k])
		}
	case reflect.Slice, reflect.Array:
		arr, ok := raw.([]any)
		if !ok {
			c.add("", CodeWrongType, "must be a list, not %s", describe(raw))
			return
		}
		for i, e := range arr {
			walk(c.index(i), t.Elem(), e)
		}
	case reflect.String:
		if _, ok := raw.(string); !ok {
			c.add("", CodeWrongType, "must be a string, not %s", describe(raw))
		}
	case reflect.Bool:
		if _, ok := raw.(bool); !ok {
			c.add("", CodeWrongType, "must be true or false, not %s", describe(raw))
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, ok := raw.(json.Number)
		if !ok {
			c.add("", CodeWrongType, "must be a whole number, not %s", describe(raw))
			return
		}
		i, err := n.Int64()
		if err != nil || reflect.Zero(t).OverflowInt(i) {
			c.add("", CodeOutOfRange, "must be a whole number between %d and %d, not %s", minInt(t), maxInt(t), n)
		}
	case reflect.Float32, reflect.Float64:
		n, ok := raw.(json.Number)
		if !ok {
			c.add("", CodeWrongType, "must be a number, not %s", describe(raw))
			return
		}
		if f, err := n.Float64(); err != nil || math.IsInf(f, 0) {
			c.add("", CodeOutOfRange, "is not a representable number")
		}
	case reflect.Interface:
		// any value is acceptable
	}
}

func minInt(t reflect.Type) int64 { return -1 << (t.Bits() - 1) }
func maxInt(t reflect.Type) int64 { return 1<<(t.Bits()-1) - 1 }

func describe(raw any) string {
	switch v := raw.(type) {
	case string:
		return "a string"
	case bool:
		return fmt.Sprintf("%t", v)
	case json.Number:
		return "the number " + v.String()
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	}
	return "null"
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// jsonFields maps the JSON names of t's fields (embedded structs flattened, as
// encoding/json does) to their types. Lower-cased names are added too, since
// encoding/json matches keys case-insensitively.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	var collect func(t reflect.Type)
	collect = func(t reflect.Type) {
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			tag := f.Tag.Get("json")
			if tag == "-" {
				continue
			}
			name, _, _ := strings.Cut(tag, ",")
			if f.Anonymous && name == "" {
				ft := f.Type
				if ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				if ft.Kind() == reflect.Struct {
					collect(ft)
					continue
				}
			}
			if !f.IsExported() {
				continue
			}
			if name == "" {
				name = f.Name
			}
			out[name] = f.Type
		}
	}
	collect(t)
	for name, ft := range out {
		if _, ok := out[strings.ToLower(name)]; !ok {
			out[strings.ToLower(name)] = ft
		}
	}
	return out
}

func fieldNames(fields map[string]reflect.Type) []string {
	names := make([]string, 0, len(fields))
	for n := range fields {
		if n == strings.ToLower(n) {
			if _, camel := hasUpper(fields, n); camel {
				continue
			}
		}
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// hasUpper reports whether a mixed-case spelling of lower exists in fields, so
// the lower-cased alias is not listed twice.
func hasUpper(fields map[string]reflect.Type, lower string) (string, bool) {
	for n := range fields {
		if n != lower && strings.ToLower(n) == lower {
			return n, true
		}
	}
	return "", false
}

func rootWrong(ps Problems) bool {
	for _, p := range ps {
		if p.Field == "" {
			return true
		}
	}
	return false
}

// duplicateKeys reports every key that occurs more than once in the same
// object of data (already known to be one valid JSON value), at its path.
func duplicateKeys(c checker, data []byte) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	type frame struct {
		at     checker
		object bool
		seen   map[string]bool
		key    string // the key whose value comes next (objects)
		index  int    // the next element's index (arrays)
	}
	var stack []*frame
	// child is the checker for the value that starts now.
	child := func() checker {
		if len(stack) == 0 {
			return c
		}
		f := stack[len(stack)-1]
		if f.object {
			return f.at.at(f.key)
		}
		at := f.at.index(f.index)
		f.index++
		return at
	}
	expectKey := func() bool {
		if len(stack) == 0 {
			return false
		}
		f := stack[len(stack)-1]
		return f.object && f.key == ""
	}
	for {
		tok, err := dec.Token()
		if err != nil {
			return
		}
		if expectKey() {
			if key, ok := tok.(string); ok {
				f := stack[len(stack)-1]
				if f.seen[key] {
					name := key
					if name == "" {
						name = `""`
					}
					f.at.at(name).add("", CodeDuplicate, "is given more than once in this object; keep one")
				}
				f.seen[key] = true
				f.key = key
				continue
			}
		}
		switch tok {
		case json.Delim('{'):
			at := child()
			stack = append(stack, &frame{at: at, object: true, seen: map[string]bool{}})
			continue
		case json.Delim('['):
			at := child()
			stack = append(stack, &frame{at: at})
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		default:
			child()
		}
		// A value ended: an object now waits for its next key.
		if len(stack) > 0 && stack[len(stack)-1].object {
			stack[len(stack)-1].key = ""
		}
	}
}
