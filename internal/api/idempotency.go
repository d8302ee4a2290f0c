package api

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/heddle-io/heddle/internal/access"
	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/engine"
	"github.com/heddle-io/heddle/internal/idempotency"
)

// Error codes of idempotency keys.
const (
	// CodeInvalidHeader: a request header is not usable (its field is
	// "header.<Name>").
	CodeInvalidHeader = "invalid_header"
	// CodeIdempotencyKeyReused: the key was first sent with a different
	// request (method, path, query or body).
	CodeIdempotencyKeyReused = "idempotency_key_reused"
	// CodeIdempotencyInFlight: an earlier attempt with the key has not
	// ended; Retry-After says when to try again.
	CodeIdempotencyInFlight = "idempotency_in_flight"
)

// idempotentRoutes are the routes that honour an Idempotency-Key: every
// one that creates or starts something whose answer holds no secret.
// Those that start a job record the key in the job's first transaction
// (engine.WithCommitOp), and so does a lease extension (in the cluster's
// conditional write); the others record it right after their change (see
// docs/architecture.md, "Idempotent requests"). Routes whose answer
// carries a secret (a new API key, a tenant's first admin key, a webhook's
// signing secret) are left out: a replay would have to keep the secret in
// clear.
var idempotentRoutes = map[string]bool{
	"POST /v1/clusters":                            true,
	"DELETE /v1/clusters/{cluster}":                true,
	"POST /v1/clusters/{cluster}/expand":           true,
	"POST /v1/clusters/{cluster}/shrink":           true,
	"POST /v1/clusters/{cluster}/reconfigure":      true,
	"POST /v1/clusters/{cluster}/add-services":     true,
	"POST /v1/clusters/{cluster}/remove-services":  true,
	"POST /v1/clusters/{cluster}/sync":             true,
	"POST /v1/clusters/{cluster}/start":            true,
	"POST /v1/clusters/{cluster}/stop":             true,
	"POST /v1/clusters/{cluster}/restart":          true,
	"POST /v1/clusters/{cluster}/rolling-restart":  true,
	"POST /v1/clusters/{cluster}/verify":           true,
	"POST /v1/clusters/{cluster}/drift":            true,
	"POST /v1/clusters/{cluster}/repair":           true,
	"POST /v1/clusters/{cluster}/rollback":         true,
	"POST /v1/clusters/{cluster}/lease":            true,
	"POST /v1/clusters/{cluster}/jobs/{job}/retry": true,
	"POST /v1/catalog":                             true,
	"POST /v1/tenant/import":                       true,
}

// IdempotentRoute reports whether method and pattern (a route's path as
// the OpenAPI document writes it) honour an Idempotency-Key; the client
// and the OpenAPI test use it.
func IdempotentRoute(method, pattern string) bool { return idempotentRoutes[method+" "+pattern] }

// IdempotentPath reports whether a request of method on path (a concrete
// path, such as /v1/clusters/c123/expand) goes to a route that honours an
// Idempotency-Key: the public client sends one on exactly those.
func IdempotentPath(method, path string) bool {
	segs := strings.Split(path, "/")
	for rt := range idempotentRoutes {
		m, pattern, _ := strings.Cut(rt, " ")
		if m == method && matchPattern(strings.Split(pattern, "/"), segs) {
			return true
		}
	}
	return false
}

func matchPattern(pattern, segs []string) bool {
	if len(pattern) != len(segs) {
		return false
	}
	for i, p := range pattern {
		if strings.HasPrefix(p, "{") {
			if segs[i] == "" {
				return false
			}
		} else if p != segs[i] {
			return false
		}
	}
	return true
}

// idempotent wraps a route's handler: without an Idempotency-Key it runs
// next as is (one map lookup and a header read on the hot path); with one
// it claims the key, replays an earlier attempt's answer, or refuses.
func (s *Server) idempotent(next handlerFunc) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request, p access.Principal) error {
		key, err := idempotency.ParseKey(r.Header.Values(idempotency.Header))
		if err != nil {
			return badHeader(idempotency.Header, err)
		}
		if key == "" || s.idem == nil {
			return next(w, r, p)
		}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return err
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		target := r.URL.EscapedPath()
		if r.URL.RawQuery != "" {
			target += "?" + r.URL.RawQuery
		}
		caller := p.User
		if caller == "" {
			caller = "key:" + p.KeyID
		}
		claim, replay, err := s.idem.Begin(r.Context(), idempotency.Request{Tenant: p.Tenant, Caller: caller, Key: key,
			Method: r.Method, Target: target, Fingerprint: idempotency.Fingerprint(r.Method, target, body)})
		if err != nil {
			return idempotencyError(err)
		}
		if replay != nil {
			return s.writeReplay(w, r, p, replay)
		}
		ctx := engine.WithCommitOp(r.Context(), claim.CommitOp)
		rec := &answerRecorder{ResponseWriter: w}
		if err := next(rec, r.WithContext(ctx), p); err != nil {
			s.writeError(rec, r, err)
		}
		if hook := s.idemAfterAnswer.Load(); hook != nil {
			(*hook)(r)
		}
		// The answer is out; the request's context may end with it.
		bg, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), 5*time.Second)
		defer cancel()
		if rec.status >= 200 && rec.status < 300 {
			err = claim.Finish(bg, idempotency.Answer{Status: rec.status, Location: rec.Header().Get("Location"),
				ContentType: rec.Header().Get("Content-Type"), Body: rec.kept()})
		} else {
			err = claim.Release(bg)
		}
		if err != nil {
			// What the request did is done and answered; a retry finds
			// the key pending (and waits it out) or committed (and is
			// answered from the store).
			s.log.WarnContext(bg, "idempotency key not finished", slog.String("requestId", requestID(r.Context())), slog.Any("error", err))
		}
		return nil
	}
}

// badHeader reports an unusable request header.
func badHeader(name string, err error) error {
	text := strings.TrimPrefix(err.Error(), idempotency.ErrBadKey.Error()+": ")
	return &apiError{status: http.StatusBadRequest, code: CodeInvalidHeader,
		message: name + ": " + text + "; " + idempotency.KeyRule,
		details: []domain.Problem{{Field: "header." + name, Code: domain.CodeInvalid, Message: text}}}
}

func idempotencyError(err error) error {
	var (
		mm *idempotency.MismatchError
		fl *idempotency.InFlightError
	)
	switch {
	case errors.As(err, &mm):
		return &apiError{status: http.StatusUnprocessableEntity, code: CodeIdempotencyKeyReused,
			message: fmt.Sprintf("this Idempotency-Key was first sent with another request (%s %s, or a different body); "+
				"use a new key for a new request", mm.Method, mm.Target),
			details: []domain.Problem{{Field: "header." + idempotency.Header, Code: domain.CodeConflict,
				Message: "already used for a different request"}}}
	case errors.As(err, &fl):
		return &inFlightError{retryAfter: fl.RetryAfter}
	}
	return err
}

// inFlightError answers 409 with Retry-After.
type inFlightError struct{ retryAfter time.Duration }

func (e *inFlightError) Error() string {
	return "an earlier attempt with this Idempotency-Key is still in progress; retry after " + e.retryAfter.String()
}

func (e *inFlightError) seconds() int {
	return max(1, int(e.retryAfter.Round(time.Second)/time.Second))
}

// writeReplay answers with an earlier attempt's answer.
func (s *Server) writeReplay(w http.ResponseWriter, r *http.Request, p access.Principal, rp *idempotency.Replay) error {
	w.Header().Set(idempotency.ReplayedHeader, "true")
	if rp.Status == 0 {
		// Committed, not answered (or its answer too large to keep):
		// answer from what it made, as it is now.
		svc, err := s.clusterService()
		if err != nil {
			return err
		}
		res, err := svc.Outcome(r.Context(), p, rp.Cluster, rp.Job)
		if err != nil {
			return err
		}
		if rp.Job == "" {
			// An edit without a job (a lease extension) answers the
			// cluster.
			writeJSON(w, http.StatusOK, res.Cluster)
			return nil
		}
		writeResult(w, res)
		return nil
	}
	if rp.Location != "" {
		w.Header().Set("Location", rp.Location)
	}
	if rp.BodyDropped {
		writeJSON(w, rp.Status, map[string]any{"replayed": true,
			"message": "the first answer to this request was too large to keep; read what it made with a GET"})
		return nil
	}
	w.Header().Set("Content-Type", rp.ContentType)
	w.Header().Set("Content-Length", strconv.Itoa(len(rp.Body)))
	w.WriteHeader(rp.Status)
	_, _ = w.Write(rp.Body)
	return nil
}

// answerRecorder passes an answer through and keeps its status and up to
// idempotency.MaxStoredAnswer+1 bytes of its body.
type answerRecorder struct {
	http.ResponseWriter
	status int
	buf    bytes.Buffer
	over   bool
}

func (a *answerRecorder) WriteHeader(code int) {
	if a.status == 0 {
		a.status = code
	}
	a.ResponseWriter.WriteHeader(code)
}

func (a *answerRecorder) Write(b []byte) (int, error) {
	if a.status == 0 {
		a.status = http.StatusOK
	}
	if !a.over {
		if a.buf.Len()+len(b) > idempotency.MaxStoredAnswer {
			a.over, a.buf = true, bytes.Buffer{}
		} else {
			a.buf.Write(b)
		}
	}
	return a.ResponseWriter.Write(b)
}

// Unwrap lets writeError find the statusRecorder underneath.
func (a *answerRecorder) Unwrap() http.ResponseWriter { return a.ResponseWriter }

// kept is the body, or nil when it was too large to keep.
func (a *answerRecorder) kept() []byte {
	if a.over {
		return nil
	}
	return a.buf.Bytes()
}
