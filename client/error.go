package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/heddle-io/heddle/internal/api"
)

// Error is an error answer of the API: its envelope, or what could be made
// of an answer that carried none. Status is the HTTP status, Code the
// machine-readable code (not_found, invalid, conflict, rate_limited, ...),
// Details the problems by field path.
type Error struct {
	api.ErrorDetail
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Message)
	for _, d := range e.Details {
		b.WriteString("; ")
		if d.Field != "" {
			b.WriteString(d.Field + ": ")
		}
		b.WriteString(d.Message)
	}
	return b.String()
}

// Field returns the problems reported for the field path (such as "size"
// or "services[1]"), none if the answer named none.
func (e *Error) Field(path string) []Problem {
	var out []Problem
	for _, d := range e.Details {
		if d.Field == path {
			out = append(out, d)
		}
	}
	return out
}

// Write prints the error for a person: the message, then one line per
// detail ("  field: message") and per referrer.
func (e *Error) Write(w io.Writer) {
	fmt.Fprintf(w, "heddle: %s\n", e.Message)
	for _, d := range e.Details {
		if d.Field != "" {
			fmt.Fprintf(w, "  %s: %s\n", d.Field, d.Message)
		} else {
			fmt.Fprintf(w, "  %s\n", d.Message)
		}
	}
	for _, r := range e.Referrers {
		fmt.Fprintf(w, "  referenced by %s/%s\n", r.Kind, r.Name)
	}
}

// ErrorCode returns the API's code of err when it is (or wraps) an *Error,
// else "".
func ErrorCode(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

// IsNotFound tells whether err is the API's 404.
func IsNotFound(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Status == http.StatusNotFound
}

// ResponseError makes the *Error of a non-2xx answer from its status and
// body.
func ResponseError(status int, data []byte) *Error {
	var env api.ErrorBody
	if err := json.Unmarshal(data, &env); err == nil && env.Error.Message != "" {
		if env.Error.Status == 0 {
			env.Error.Status = status
		}
		return &Error{env.Error}
	}
	msg := fmt.Sprintf("the server answered %d %s", status, http.StatusText(status))
	if s := strings.TrimSpace(string(data)); s != "" {
		if len(s) > 200 {
			s = s[:200] + "..."
		}
		msg += ": " + s
	}
	return &Error{api.ErrorDetail{Status: status, Message: msg}}
}
