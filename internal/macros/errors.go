package macros

import (
	"errors"
	"strconv"
)

// Error kinds; test with errors.Is.
var (
	// ErrSyntax: the text between the percent signs is not a macro.
	ErrSyntax = errors.New("syntax error")
	// ErrUnknown: a well-formed name that is no macro (or an unknown address type).
	ErrUnknown = errors.New("unknown macro")
	// ErrOutOfRange: an index past the nodes that run the service (Coopr's
	// IncompleteClusterException).
	ErrOutOfRange = errors.New("index out of range")
	// ErrIncomplete: the layout lacks what the macro needs (a hostname, an
	// address, the node the task runs on).
	ErrIncomplete = errors.New("layout incomplete")
)

// Error is a macro that could not be parsed or expanded: which one, where and why.
type Error struct {
	// Path is the JSON path of the string value ("servers[2].url") when the
	// text came from a JSON document, empty otherwise.
	Path string
	// Offset is the byte offset in the string of the macro's opening '%'.
	Offset int
	// Macro is the macro's text from its opening '%' to its closing one (or to
	// the end of the string when it has none).
	Macro  string
	Kind   error
	Reason string
}

func (e *Error) Error() string {
	s := ""
	if e.Path != "" {
		s = e.Path + ": "
	}
	return s + "macro " + strconv.Quote(e.Macro) + " at offset " + strconv.Itoa(e.Offset) + ": " + e.Kind.Error() + ": " + e.Reason
}

func (e *Error) Unwrap() error { return e.Kind }
