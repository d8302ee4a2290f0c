package api

import (
	"net/http"

	"github.com/heddle-io/heddle/internal/access"
)

// driftCluster submits a drift check (POST /v1/clusters/{cluster}/drift);
// it answers 202 with the job, like every operation. The report is the
// cluster's drift field once the job ends.
func (s *Server) driftCluster(w http.ResponseWriter, r *http.Request, p access.Principal) error {
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
	res, err := svc.Drift(r.Context(), p, id)
	if err != nil {
		return err
	}
	writeResult(w, res)
	return nil
}
