package api

import (
	"net/http"

	"github.com/heddle-io/heddle/internal/access"
	"github.com/heddle-io/heddle/internal/cluster"
)

// setManagedBy marks which tool owns the cluster's desired state (POST
// /v1/clusters/{cluster}/managed-by): `heddle apply --adopt` uses it.
func (s *Server) setManagedBy(w http.ResponseWriter, r *http.Request, p access.Principal) error {
	svc, id, err := s.clusterOf(r)
	if err != nil {
		return err
	}
	var req cluster.ManageRequest
	if err := decode(r, &req); err != nil {
		return notFoundFirst(r, svc, p, id, err)
	}
	c, err := svc.SetManagedBy(r.Context(), p, id, req)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, c)
	return nil
}
