package api

import (
	"net/http"

	"github.com/heddle-io/heddle/internal/access"
)

// getJobGraph answers a job's task graph summarised by stage, service and
// action with the critical path marked (the dashboard draws it); rollback=true
// graphs the rollback plan.
func (s *Server) getJobGraph(w http.ResponseWriter, r *http.Request, p access.Principal) error {
	svc, id, jobID, err := s.jobOf(r)
	if err != nil {
		return err
	}
	rollback, err := boolParam(r, "rollback")
	if err != nil {
		return notFoundFirst(r, svc, p, id, err)
	}
	g, err := svc.JobGraph(r.Context(), p, id, jobID, rollback)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, g)
	return nil
}
