package api

import (
	"net/http"

	"github.com/heddle-io/heddle/internal/access"
	"github.com/heddle-io/heddle/internal/cluster"
	"github.com/heddle-io/heddle/internal/domain"
)

// getAutoscale shows the cluster's autoscale policy, the metrics pushed
// for it and its last decisions (GET /v1/clusters/{cluster}/autoscale).
func (s *Server) getAutoscale(w http.ResponseWriter, r *http.Request, p access.Principal) error {
	svc, id, err := s.clusterOf(r)
	if err != nil {
		return err
	}
	v, err := svc.Autoscale(r.Context(), p, id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, v)
	return nil
}

// putAutoscale overrides the cluster's policy within its template's
// (PUT /v1/clusters/{cluster}/autoscale). Setting it twice is harmless,
// so it takes no Idempotency-Key.
func (s *Server) putAutoscale(w http.ResponseWriter, r *http.Request, p access.Principal) error {
	svc, id, err := s.clusterOf(r)
	if err != nil {
		return err
	}
	var req domain.Autoscale
	if err := decode(r, &req); err != nil {
		return notFoundFirst(r, svc, p, id, err)
	}
	v, err := svc.SetAutoscale(r.Context(), p, id, req)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, v)
	return nil
}

// pushMetrics records metric values for the cluster's policy
// (POST /v1/clusters/{cluster}/metrics): the latest value wins, so a
// repeated push is harmless and it takes no Idempotency-Key.
func (s *Server) pushMetrics(w http.ResponseWriter, r *http.Request, p access.Principal) error {
	svc, id, err := s.clusterOf(r)
	if err != nil {
		return err
	}
	var req cluster.MetricsRequest
	if err := decode(r, &req); err != nil {
		return notFoundFirst(r, svc, p, id, err)
	}
	v, err := svc.PushMetrics(r.Context(), p, id, req)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, v)
	return nil
}
