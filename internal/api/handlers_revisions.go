package api

import (
	"net/http"
	"strconv"

	"github.com/heddle-io/heddle/internal/access"
	"github.com/heddle-io/heddle/internal/domain"
)

func (s *Server) listRevisions(w http.ResponseWriter, r *http.Request, p access.Principal) error {
	svc, id, err := s.clusterOf(r)
	if err != nil {
		return err
	}
	pr, err := s.pageOf(r, p, listPaging)
	if err != nil {
		return notFoundFirst(r, svc, p, id, err)
	}
	revs, next, err := svc.Revisions(r.Context(), p, id, pr.Limit, pr.After)
	if err != nil {
		return err
	}
	writePage(s, w, pr, revs, next)
	return nil
}

func (s *Server) getRevision(w http.ResponseWriter, r *http.Request, p access.Principal) error {
	svc, id, err := s.clusterOf(r)
	if err != nil {
		return err
	}
	n, err := strconv.ParseInt(r.PathValue("revision"), 10, 64)
	if err != nil || n < 1 {
		return notFoundFirst(r, svc, p, id, domain.Problems{{Field: "path.revision", Code: domain.CodeInvalid,
			Message: "a revision is a whole number from 1; list them with GET /v1/clusters/" + id + "/revisions"}})
	}
	rev, err := svc.Revision(r.Context(), p, id, n, "path.revision")
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, rev)
	return nil
}
