package domain

import (
	"fmt"
	"sort"
	"strings"
)

// Problem is one thing wrong with an input: where (a JSON path such as
// "constraints.services.zookeeper.quantities.min"), a stable machine-readable
// code, and a sentence a person can act on.
type Problem struct {
	Field   string `json:"field"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Problem codes. They are part of the API: clients may switch on them.
const (
	CodeRequired     = "required"
	CodeInvalid      = "invalid"
	CodeOutOfRange   = "out_of_range"
	CodeUnknownField = "unknown_field"
	CodeWrongType    = "wrong_type"
	CodeDuplicate    = "duplicate"
	CodeUnknownRef   = "unknown_reference"
	CodeConflict     = "conflict"
	CodeImmutable    = "immutable"
	CodeMalformed    = "malformed"
	// CodeCycle: references that loop back to where they start (templates
	// extending or including each other, services depending on each other).
	CodeCycle = "cycle"
)

// Problems collects every problem found in one input. A nil or empty Problems
// means the input is valid. It implements error so a validator can return it.
type Problems []Problem

func (ps Problems) Error() string {
	if len(ps) == 0 {
		return "no problems"
	}
	msgs := make([]string, 0, len(ps))
	for _, p := range ps {
		if p.Field == "" {
			msgs = append(msgs, p.Message)
			continue
		}
		msgs = append(msgs, p.Field+": "+p.Message)
	}
	return strings.Join(msgs, "; ")
}

// Err returns ps as an error, or nil when there is nothing wrong, so callers can
// write `return ps.Err()` without returning a typed nil.
func (ps Problems) Err() error {
	if len(ps) == 0 {
		return nil
	}
	return ps
}

// checker accumulates problems under a path prefix; validators use it so that
// nested structures report full paths without threading strings by hand.
type checker struct {
	prefix   string
	problems *Problems
}

func newChecker() checker { return checker{problems: &Problems{}} }

func (c checker) at(field string) checker {
	return checker{prefix: joinPath(c.prefix, field), problems: c.problems}
}

func (c checker) index(i int) checker {
	return checker{prefix: fmt.Sprintf("%s[%d]", c.prefix, i), problems: c.problems}
}

func (c checker) add(field, code, format string, args ...any) {
	*c.problems = append(*c.problems, Problem{
		Field:   joinPath(c.prefix, field),
		Code:    code,
		Message: fmt.Sprintf(format, args...),
	})
}

// result returns the problems sorted by path, so the same input always yields
// the same list whatever order maps were walked in.
func (c checker) result() Problems {
	ps := *c.problems
	sort.SliceStable(ps, func(i, j int) bool { return ps[i].Field < ps[j].Field })
	return ps
}

func joinPath(prefix, field string) string {
	switch {
	case prefix == "":
		return field
	case field == "":
		return prefix
	case strings.HasPrefix(field, "["):
		return prefix + field
	default:
		return prefix + "." + field
	}
}
