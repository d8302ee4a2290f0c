package api

import (
	"errors"
	"net/http"

	"github.com/heddle-io/heddle/internal/access"
	"github.com/heddle-io/heddle/internal/cluster"
	"github.com/heddle-io/heddle/internal/events"
)

// eventPaging: events are small (well under 1 KB each).
var eventPaging = Paging{Default: 100, Max: 1000}

// CodeNothingToVerify: no service of the cluster defines a check action.
const CodeNothingToVerify = "nothing_to_verify"

// verifyCluster submits a verification (POST /v1/clusters/{cluster}/verify);
// it answers 202 with the job, like every operation.
func (s *Server) verifyCluster(w http.ResponseWriter, r *http.Request, p access.Principal) error {
	svc, id, err := s.clusterOf(r)
	if err != nil {
		return err
	}
	// No options: the body may be empty, or {}.
	if r.ContentLength != 0 {
		var req struct{}
		if err := decode(r, &req); err != nil {
			return notFoundFirst(r, svc, p, id, err)
		}
	}
	res, err := svc.Verify(r.Context(), p, id)
	var none *cluster.NoChecksError
	if errors.As(err, &none) {
		return &apiError{status: http.StatusConflict, code: CodeNothingToVerify, message: none.Error()}
	}
	if err != nil {
		return err
	}
	writeResult(w, res)
	return nil
}

// listEvents pages a cluster's events (GET /v1/clusters/{cluster}/events),
// oldest first; ?since=<event id> starts after that event.
func (s *Server) listEvents(w http.ResponseWriter, r *http.Request, p access.Principal) error {
	svc, id, err := s.clusterOf(r)
	if err != nil {
		return err
	}
	since := r.URL.Query().Get("since")
	if since != "" && !events.ValidID(since) {
		return notFoundFirst(r, svc, p, id, badQuery("since", "is not an event id; pass the id of the last event you read (20 digits, a dash, 8 hex digits)"))
	}
	pr, err := s.pageOf(r, p, eventPaging)
	if err != nil {
		return notFoundFirst(r, svc, p, id, err)
	}
	list, next, err := svc.Events(r.Context(), p, id, since, pr.Limit, pr.After)
	if err != nil {
		return err
	}
	writePage(s, w, pr, list, next)
	return nil
}
