package api

import (
	"errors"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/heddle-io/heddle/internal/access"
	"github.com/heddle-io/heddle/internal/catalog"
	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/engine"
	"github.com/heddle-io/heddle/internal/store"
)

// Error codes of the envelope. They are stable: clients may switch on them.
const (
	CodeInvalidBody        = "invalid_body"
	CodeValidationFailed   = "validation_failed"
	CodeInvalidParameter   = "invalid_parameter"
	CodeUnauthorized       = "unauthorized"
	CodeForbidden          = "forbidden"
	CodeNotFound           = "not_found"
	CodeMethodNotAllowed   = "method_not_allowed"
	CodeConflict           = "conflict"
	CodeAlreadyExists      = "already_exists"
	CodeReferenced         = "referenced"
	CodePreconditionFailed = "precondition_failed"
	CodeBodyTooLarge       = "body_too_large"
	CodeUnsupportedMedia   = "unsupported_media_type"
	CodeInternal           = "internal"
)

// ErrorBody is the envelope every error response carries.
type ErrorBody struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail says what went wrong.
type ErrorDetail struct {
	Status    int              `json:"status"`
	Code      string           `json:"code"`
	Message   string           `json:"message"`
	Details   []domain.Problem `json:"details,omitempty"`
	Referrers []catalog.Ref    `json:"referrers,omitempty"`
	RequestID string           `json:"requestId,omitempty"`
}

// apiError is an error that already knows its response.
type apiError struct {
	status  int
	code    string
	message string
	details []domain.Problem
	// retryAfter, when set, is the answer's Retry-After.
	retryAfter time.Duration
	// cause is what the server logs for a 5xx (the message is the
	// caller's).
	cause error
}

func (e *apiError) Error() string {
	if e.cause != nil {
		return e.message + ": " + e.cause.Error()
	}
	return e.message
}

func newError(status int, code, message string) *apiError {
	return &apiError{status: status, code: code, message: message}
}

func errNotFound(message string) *apiError {
	return newError(http.StatusNotFound, CodeNotFound, message)
}

var errForbidden = newError(http.StatusForbidden, CodeForbidden, "your role does not allow this; ask an admin of your tenant")

// badParam reports an unusable query or path parameter.
func badParam(field, message string) *apiError {
	return &apiError{status: http.StatusBadRequest, code: CodeInvalidParameter, message: field + ": " + message,
		details: []domain.Problem{{Field: field, Code: domain.CodeInvalid, Message: message}}}
}

// badQuery reports an unusable query parameter, on the field
// query.<name> as the central check (params.go) names it.
func badQuery(name, message string) *apiError { return badParam("query."+name, message) }

// badBody marks problems found while decoding a body (its shape), as opposed to
// validating its meaning.
type badBody struct{ problems domain.Problems }

func (b badBody) Error() string { return b.problems.Error() }

// describe maps an error to its response.
func describe(err error) ErrorDetail {
	if d, ok := describeCluster(err); ok {
		return d
	}
	var (
		ae  *apiError
		bb  badBody
		ps  domain.Problems
		ref *catalog.ReferencedError
		mbe *http.MaxBytesError
		te  *throttledError
	)
	switch {
	case errors.As(err, new(*inFlightError)):
		return ErrorDetail{Status: http.StatusConflict, Code: CodeIdempotencyInFlight, Message: err.Error()}
	case errors.Is(err, engine.ErrCommitRefused):
		return ErrorDetail{Status: http.StatusConflict, Code: CodeIdempotencyInFlight,
			Message: "another attempt with this Idempotency-Key took the request over while this one ran; retry to read its outcome"}
	case errors.As(err, &te):
		return ErrorDetail{Status: http.StatusTooManyRequests, Code: CodeRateLimited, Message: te.message}
	case errors.As(err, &ae):
		return ErrorDetail{Status: ae.status, Code: ae.code, Message: ae.message, Details: ae.details}
	case errors.As(err, &mbe):
		return ErrorDetail{Status: http.StatusRequestEntityTooLarge, Code: CodeBodyTooLarge,
			Message: bodyTooLarge(mbe.Limit)}
	case errors.As(err, &bb):
		return ErrorDetail{Status: http.StatusBadRequest, Code: CodeInvalidBody,
			Message: "the request body could not be read: " + bb.problems.Error(), Details: bb.problems}
	case errors.As(err, &ps):
		return ErrorDetail{Status: http.StatusUnprocessableEntity, Code: CodeValidationFailed,
			Message: "the request is not valid: " + ps.Error(), Details: ps}
	case errors.As(err, &ref):
		return ErrorDetail{Status: http.StatusConflict, Code: CodeReferenced, Message: ref.Error(), Referrers: ref.Referrers}
	case errors.Is(err, access.ErrUnauthorized):
		return ErrorDetail{Status: http.StatusUnauthorized, Code: CodeUnauthorized,
			Message: "send a valid API key as `Authorization: Bearer hdl_...`"}
	case errors.Is(err, catalog.ErrNotFound), errors.Is(err, access.ErrNotFound):
		return ErrorDetail{Status: http.StatusNotFound, Code: CodeNotFound, Message: trimPrefix(err) + " does not exist"}
	case errors.Is(err, catalog.ErrPrecondition):
		return ErrorDetail{Status: http.StatusPreconditionFailed, Code: CodePreconditionFailed,
			Message: "the entity changed since you read it (If-Match or version does not match the latest); read it again and reapply your change"}
	case errors.As(err, new(*catalog.EntityTooLargeError)):
		return ErrorDetail{Status: http.StatusRequestEntityTooLarge, Code: CodeBodyTooLarge,
			Message: "the entity is too large to store: " + err.Error()}
	case errors.Is(err, catalog.ErrTooLarge):
		return ErrorDetail{Status: http.StatusRequestEntityTooLarge, Code: CodeBodyTooLarge, Message: err.Error()}
	case errors.Is(err, access.ErrExists):
		return ErrorDetail{Status: http.StatusConflict, Code: CodeAlreadyExists, Message: trimPrefix(err) + " already exists"}
	case errors.Is(err, catalog.ErrBusy), errors.Is(err, catalog.ErrChanged), errors.Is(err, access.ErrConflict):
		return ErrorDetail{Status: http.StatusConflict, Code: CodeConflict, Message: err.Error()}
	case errors.Is(err, engine.ErrNewerFormat):
		return ErrorDetail{Status: http.StatusServiceUnavailable, Code: CodeUnavailable,
			Message: "this was written by a newer heddle release than the one that answered (a deploy is under way); try again in a minute"}
	case errors.Is(err, store.ErrBadCursor):
		return describe(errBadCursor)
	}
	return ErrorDetail{Status: http.StatusInternalServerError, Code: CodeInternal,
		Message: "heddle failed to handle this request; it has been logged with the request id"}
}

// trimPrefix drops the "package: sentinel: " lead of a wrapped error so the
// sentence names just the thing ("service \"zk\""); an error that is only
// the sentinel keeps its text without the package prefix.
func trimPrefix(err error) string {
	msg := err.Error()
	for _, sentinel := range []error{catalog.ErrNotFound, access.ErrNotFound, access.ErrExists,
		engine.ErrNotFound, engine.ErrClusterBusy, engine.ErrJobState, engine.ErrNothingToRetry} {
		if p := sentinel.Error() + ": "; len(msg) > len(p) && msg[:len(p)] == p {
			return msg[len(p):]
		}
	}
	if pkg, rest, ok := strings.Cut(msg, ": "); ok && !strings.Contains(pkg, " ") {
		return rest
	}
	return msg
}

func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	d := s.errorDetail(r, err)
	if sr := findStatusRecorder(w); sr != nil {
		sr.code = d.Code
	}
	var te *throttledError
	if errors.As(err, &te) {
		w.Header().Set("Retry-After", strconv.Itoa(te.retryAfterSeconds()))
	}
	var ae *apiError
	if errors.As(err, &ae) && ae.retryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(max(1, int(math.Ceil(ae.retryAfter.Seconds())))))
	}
	var fe *inFlightError
	if errors.As(err, &fe) {
		w.Header().Set("Retry-After", strconv.Itoa(fe.seconds()))
	} else if errors.Is(err, engine.ErrCommitRefused) {
		w.Header().Set("Retry-After", "1")
	}
	if d.Status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="heddle"`)
	}
	writeJSON(w, d.Status, ErrorBody{Error: d})
}

// errorDetail describes err as the answer to r, with r's request id, and
// logs it when it is the server's failure (5xx).
func (s *Server) errorDetail(r *http.Request, err error) ErrorDetail {
	d := describe(err)
	d.RequestID = requestID(r.Context())
	if d.Status >= 500 {
		s.log.ErrorContext(r.Context(), "request failed", slog.String("requestId", d.RequestID),
			slog.String("method", r.Method), slog.String("path", r.URL.Path), slog.Any("error", err))
	}
	return d
}

// findStatusRecorder finds the statusRecorder under w and the writers that
// wrap it (Unwrap, as http.ResponseController looks for it).
func findStatusRecorder(w http.ResponseWriter) *statusRecorder {
	for w != nil {
		if sr, ok := w.(*statusRecorder); ok {
			return sr
		}
		u, ok := w.(interface{ Unwrap() http.ResponseWriter })
		if !ok {
			return nil
		}
		w = u.Unwrap()
	}
	return nil
}
